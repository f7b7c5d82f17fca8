"""`mcpipechekr evaluate RUN`: Phase 2, a run's traces → bug_report.json and phase2_narrative.md."""

from __future__ import annotations

import click

from mcpipechekr._util.console import console
from mcpipechekr.artifacts.atomic import dumps_json
from mcpipechekr.cli.common import config_options, effective_config, provider_option, resolve_run
from mcpipechekr.evaluate import evaluate_run


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
    help="text: a summary of the bugs; json: bug_report.json on stdout.",
)
@click.pass_context
def evaluate_command(ctx: click.Context, run: str, output_format: str, **_: object) -> None:
    """Evaluate a run's traces into bug_report.json and phase2_narrative.md.

    RUN is a run id (run-YYYYMMDD-NNN), `latest` (the default), or a run
    folder. Every trace is checked by the analyzers (call count, repeated
    calls, date-window walks, paging walks, errors and their workarounds,
    unread fields, wrong tool, oversized results) and against the baseline.
    Exits 0 with or without bugs, 2 for bad input.
    """
    config = effective_config(ctx)
    run_dir = resolve_run(ctx, run, config)
    report = evaluate_run(config, run_dir)
    if output_format == "json":
        click.echo(dumps_json(report.model_dump(mode="json")).decode(), nl=False)
        return
    console.print(
        f"{report.run_id}: {len(report.bugs)} bug(s), {len(report.review_flags)} answer(s) to review",
        markup=False,
        highlight=False,
    )
    for bug in report.bugs:
        console.print(
            f"  {bug.id}  {bug.severity}  x{bug.occurrences}  gap {bug.token_cost_of_gap} tokens",
            markup=False,
            highlight=False,
        )
    for note in report.notes:
        console.print(f"note: {note}", markup=False, highlight=False)
    console.print(f"wrote {run_dir.bug_report} and {run_dir.phase2_narrative}", markup=False, highlight=False)
