"""`check`: protocol compliance, functional cases and response sizes, in a run folder or on its own.

In a run (doit's `check` target) the report is written to check_report.json
and the run's manifest records how the step ended; without one
(`mcpipechekr check` on any server) the report is only returned, for the
command to render in the format asked.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from rich.console import Console

from mcpipechekr._util import progress as live_progress
from mcpipechekr._util.console import console
from mcpipechekr._util.yamlsrc import display_path
from mcpipechekr.artifacts import RunDir
from mcpipechekr.artifacts.check_report import LAYERS, CheckReport, Layer
from mcpipechekr.config import Config
from mcpipechekr.steps.stage import run_stage


def check_step(
    config: Config,
    run_dir: RunDir | None = None,
    *,
    layers: Iterable[Layer] = LAYERS,
    cases_path: Path | None = None,
    expected_failures_path: Path | None = None,
    call_timeout_s: float | None = None,
    progress: Callable[[str], None] | None = None,
    out: Console = console,
    trust_read_only: Sequence[str] = (),
    record_trust: bool = False,
) -> CheckReport:
    """Check the configured server (see `check.orchestrate.run_check` for the options) and return the report.

    With `run_dir`, the report becomes its check_report.json and one summary
    line goes to `out`. Without `progress`, what runs now goes to the live
    progress line, if one is up (`_util.progress`: doit's `check` task).
    """
    from mcpipechekr.check.orchestrate import run_check, write_check_report

    stage = run_stage(config, run_dir, "check") if run_dir is not None else contextlib.nullcontext()
    with stage:
        report = run_check(
            config,
            layers=layers,
            cases_path=cases_path,
            expected_failures_path=expected_failures_path,
            call_timeout_s=call_timeout_s,
            progress=progress or live_progress.detail,
            trust_read_only=trust_read_only,
            record_trust=record_trust,
        )
        if run_dir is None:
            return report
        write_check_report(run_dir, report)
    summary = report.summary
    out.print(
        f"check: {summary.passed}/{summary.total} passed, {summary.failed} failed, "
        f"{summary.warned} warnings, {summary.skipped} skipped, {summary.expected_failures} expected "
        f"failure(s) → {display_path(run_dir.check_report)}",
        markup=False,
    )
    return report
