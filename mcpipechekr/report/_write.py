"""`write_report`: the runs a report covers, rendered, written atomically to one HTML file.

The one entry point for both front ends: `mcpipechekr report` and the loop
(`steps.report.report_step`, after each evaluation) call it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from mcpipechekr.artifacts import RunDir, atomic_write_text, list_runs, parse_run_id
from mcpipechekr.errors import UserError
from mcpipechekr.report._data import load_report_data
from mcpipechekr.report._page import render_report
from mcpipechekr.report._sections import DEFAULT_SECTIONS, Section

REPORT_FILE = "report.html"


def report_runs(source: RunDir | Path | str | Sequence[RunDir]) -> list[RunDir]:
    """The runs `source` names: run folders as given, a run folder, or every run of a runs/ folder."""
    if isinstance(source, RunDir):
        return [source]
    if isinstance(source, str | Path):
        folder = Path(source)
        if parse_run_id(folder.name) and folder.is_dir():
            return [RunDir(folder)]
        runs = list_runs(folder)
        if not runs:
            raise UserError(f"{folder}: no run folders (run-YYYYMMDD-NNN) to report on.")
        return runs
    return list(source)


def default_output(runs: Sequence[RunDir]) -> Path:
    """Where a report goes unless told: `runs/<run>/report.html` for one run, else `runs/report.html`."""
    if not runs:
        raise UserError("a report needs at least one run.")
    return runs[0].root / REPORT_FILE if len(runs) == 1 else runs[-1].runs_dir / REPORT_FILE


def write_report(
    source: RunDir | Path | str | Sequence[RunDir],
    output: Path | str | None = None,
    *,
    sections: Sequence[Section] = DEFAULT_SECTIONS,
) -> Path:
    """Write the HTML report of `source`'s runs (oldest first) to `output` atomically; return its path.

    `source` is a run folder, a runs/ folder (every run in it) or a list of runs;
    `output` defaults to `default_output`.
    """
    runs = report_runs(source)
    target = Path(output) if output is not None else default_output(runs)
    page = render_report(load_report_data(runs), sections)
    return atomic_write_text(target, page)
