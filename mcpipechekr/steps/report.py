"""The HTML report of a loop's iterations, written after each evaluation (`report.write_report`).

The loop calls `report_step` with the runs of its session so far, so the
report in the newest run's folder shows every iteration up to it, and it is
there before the review asks for a decision. Like the session summary, it also
covers the earlier runs whose fixes led to the first of them
(`before_after.run_chain`), so a second `doit loop` does not lose the first
one's iterations.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rich.console import Console

from mcpipechekr._util.console import console
from mcpipechekr._util.yamlsrc import display_path
from mcpipechekr.artifacts import RunDir


def report_step(runs: Sequence[RunDir], *, output: Path | None = None, out: Console = console) -> Path:
    """report.html of `runs` (oldest first) and the runs that led to them, in the last run's folder unless
    `output`; prints its path."""
    from mcpipechekr.before_after import run_chain
    from mcpipechekr.report import REPORT_FILE, write_report

    runs = run_chain(runs)
    path = write_report(runs, output or runs[-1].root / REPORT_FILE)
    out.print(f"report → {display_path(path)}", markup=False)
    return path
