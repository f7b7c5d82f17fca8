"""The HTML report of a run and the iterations that led to it, written after each evaluation
(`report.write_report`).

`evaluate_step` calls `report_step` with the run it evaluated, whichever front
end asked (`mcpipechekr evaluate`, `doit evaluate`, `doit loop`), so the report
in the run's folder is there before the review asks for a decision. Like the
session summary, it covers the earlier runs whose fixes led to it
(`before_after.run_chain`): a loop's iterations, and a second `doit loop`'s
report does not lose the first one's. The chain is found from the fix commits;
the loop writes the report again with its session's runs only when a run the
chain cannot reach (one traced on a dirty tree) would be missing
(`session_report_step`).
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


def session_report_step(session: Sequence[RunDir], *, out: Console = console) -> Path | None:
    """report.html of the loop's `session` (oldest first) when the one its last evaluation wrote leaves out
    a run of it, else None (nothing written).

    The evaluation's report follows the chain of fix commits back from the run (`run_chain`); a run of
    the session traced on a dirty tree breaks that chain, and the loop's report must still show every
    iteration of the session.
    """
    from mcpipechekr.before_after import run_chain

    chained = {run.run_id for run in run_chain(session[-1:])}
    if {run.run_id for run in session} <= chained:
        return None
    return report_step(session, out=out)
