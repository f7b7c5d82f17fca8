"""The session summary: what ran, what was found, what was fixed, costs, and the regression rate.

Written where a session ends, whichever front end ends it: the loop after its
last iteration, `doit report` for the planned run, `mcpipechekr review --exit`
for the run it reviewed.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rich.console import Console

from mcpipechekr._util.console import console
from mcpipechekr._util.yamlsrc import display_path
from mcpipechekr.artifacts import RunDir
from mcpipechekr.config import Config
from mcpipechekr.runplan import read_manifest
from mcpipechekr.steps.handoff import findings_home


def summary_step(
    config: Config | None, runs: Sequence[RunDir], *, ending: str | None = None, out: Console = console
) -> Path:
    """session_summary.md of the last of `runs`, covering them all and the earlier runs whose fixes led to
    the first of them (`before_after.run_chain`: a later invocation that only ends the session keeps what
    the earlier ones fixed); the regression rate comes from the findings home (`config`'s, or the default
    one when the run is reviewed away from its project). `ending` is why the loop ended, from the loop
    itself, told with the session's iterations (every run of the chain, so a later invocation that only
    ends the session counts the earlier ones too); None where a session ends otherwise (`review --exit`,
    `doit report`)."""
    from mcpipechekr.before_after import run_chain
    from mcpipechekr.findings.lifecycle.states import regression_stats
    from mcpipechekr.session_summary import write_session_summary

    runs = run_chain(runs)

    started = [manifest.started_at for run in runs if (manifest := read_manifest(run)) is not None]
    stats = regression_stats(findings_home(config), since=min(started) if started else None)
    lines = [
        f"regression rate: {stats.regressions} regression(s) for {stats.fixes} fix(es) claimed"
        + (f" ({stats.rate:.0%})" if stats.fixes else "")
    ]
    if ending is not None:
        ending = f"{ending} (after {len(runs)} iteration(s))"
    path = write_session_summary(runs, runs[-1].session_summary, regressions=lines, ending=ending)
    out.print(f"session summary → {display_path(path)}", markup=False)
    return path
