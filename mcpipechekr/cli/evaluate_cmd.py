"""`mcpipechekr evaluate RUN`: Phase 2, a run's traces → bug_report.json and phase2_narrative.md."""

from __future__ import annotations

import click

from mcpipechekr._util.console import console, err_console
from mcpipechekr.artifacts.atomic import dumps_json
from mcpipechekr.cli.common import (
    allow_incomplete_option,
    config_options,
    effective_config,
    provider_option,
    resolve_run,
    writes_project,
)
from mcpipechekr.steps.evaluate import evaluate_step


@click.command("evaluate")
@click.argument("run", metavar="RUN", default="latest")
@config_options
@provider_option("phase2")
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="text: a summary of the bugs; json: bug_report.json on stdout (the summary on stderr).",
)
@allow_incomplete_option
@click.pass_context
@writes_project
def evaluate_command(
    ctx: click.Context, run: str, output_format: str, allow_incomplete: bool, **_: object
) -> None:
    """Evaluate a run's traces into bug_report.json and phase2_narrative.md.

    RUN is a run id (run-YYYYMMDD-NNN), `latest` (the default), or a run
    folder. Every trace is checked by the analyzers (call count, repeated
    calls, date-window walks, paging walks, errors and their workarounds,
    unread fields, wrong tool, oversized results) and against the baseline.
    The bugs are registered as findings in the findings home, and findings
    whose fix was claimed are verified by this run (the outcome is added to
    phase2_narrative.md). A run that lacks some of its planned traces (see
    docs/artifacts.md, run states) is refused, naming them, unless
    --allow-incomplete. Exits 0 with or without bugs, 2 for bad input or an
    incomplete run.
    """
    config = effective_config(ctx)
    run_dir = resolve_run(ctx, run, config)
    as_json = output_format == "json"
    report = evaluate_step(
        config, run_dir, allow_incomplete=allow_incomplete, out=err_console if as_json else console
    )
    if as_json:
        click.echo(dumps_json(report.model_dump(mode="json")).decode(), nl=False)
