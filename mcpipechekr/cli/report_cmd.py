"""`mcpipechekr report [RUN…]`: one self-contained HTML file of a run, or of every run of the project."""

from __future__ import annotations

from pathlib import Path

import click

from mcpipechekr.cli.common import config_option, effective_config, resolve_run
from mcpipechekr.report import default_output, report_runs
from mcpipechekr.steps.report import report_step


@click.command("report")
@click.argument("runs", metavar="[RUN…]", nargs=-1)
@config_option
@click.option(
    "--output",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Where to write the HTML file [default: runs/<run>/report.html for one RUN, "
    "runs/report.html otherwise].",
)
@click.pass_context
def report_command(ctx: click.Context, runs: tuple[str, ...], output: Path | None, **_: object) -> None:
    """Write an HTML report of runs: charts, bugs, and every trace step by step.

    RUN is a run id (run-YYYYMMDD-NNN), `latest`, or a run folder; several
    make one report across them, in the order given (each an iteration);
    none reports on every run of the project, oldest first. The file is
    self-contained (inline CSS, SVG and script; nothing is fetched): per-task
    success, tool calls, tokens and wasted tokens across the runs as charts;
    each run's bug table, whose evidence links open the trace steps that show
    the bug; and each attempt's turns, tool calls, arguments and results, the
    wasted steps marked. It only reads the run folders, so it may run while a
    loop waits at its review. See docs/report.md.
    """
    if runs:
        chosen = [resolve_run(ctx, run) for run in runs]
    else:
        chosen = report_runs(effective_config(ctx).paths.runs)
    report_step(chosen, output=output or default_output(chosen))
