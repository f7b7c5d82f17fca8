"""`mcpipechekr lint`: Phase 0.5, the tool descriptions scored before any agent runs."""

from __future__ import annotations

import click

from mcpipechekr._util.console import console, err_console
from mcpipechekr._util.fields import MAX_REPEAT
from mcpipechekr.artifacts.atomic import dumps_json
from mcpipechekr.cli.common import (
    config_options,
    effective_config,
    provider_option,
    server_options,
    writes_project,
)
from mcpipechekr.lint import render_text
from mcpipechekr.steps.lint import lint_step


@click.command("lint")
@config_options
@server_options
@provider_option("phase05")
@click.option(
    "--repeat",
    type=click.IntRange(min=1, max=MAX_REPEAT),
    default=1,
    show_default=True,
    help="Times each selection query is asked (a model's answers vary; lexical answers do not).",
)
@click.option(
    "--accept-risk",
    "accept_risks",
    metavar="TOOL[:RULE]",
    multiple=True,
    help="Accept the blocking findings of TOOL (or only RULE's) as a known risk; repeatable. "
    "Kept until the tool's definition changes.",
)
@click.option("--reason", "accept_reason", metavar="TEXT", help="Why the --accept-risk risks are accepted.")
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="text: the readable report; json: tef_report.json on stdout.",
)
@click.option("--no-cache", is_flag=True, help="Evaluate again even if nothing changed since the last lint.")
@click.pass_context
@writes_project
def lint_command(
    ctx: click.Context,
    repeat: int,
    accept_risks: tuple[str, ...],
    accept_reason: str | None,
    output_format: str,
    no_cache: bool,
    **_: object,
) -> None:
    """Lint the server's tool descriptions: static rules, overlapping tools, a tool-selection test,
    hidden instructions and drift since the last lint.

    Exits 0 when nothing blocks, 1 when a tool is misleading or a finding is of
    severity error (accept it with --accept-risk TOOL[:RULE]), and 2 for bad
    input or a server that cannot be reached.
    """
    config = effective_config(ctx)
    outcome = lint_step(
        config,
        None,
        repeat=repeat,
        accept_risks=accept_risks,
        accept_reason=accept_reason,
        use_cache=not no_cache,
    )
    report = outcome.report
    if output_format == "json":
        click.echo(dumps_json(report.model_dump(mode="json")).decode(), nl=False)
        for warning in outcome.warnings:
            err_console.print(f"warning: {warning}", markup=False)
        for note in outcome.notes:
            err_console.print(f"note: {note}", markup=False)
    else:
        text = render_text(
            report, precision_threshold=config.thresholds.tef_precision_warning, reused=outcome.reused
        )
        console.print(text, markup=False, highlight=False, soft_wrap=True)
    if outcome.blocking:
        ctx.exit(1)
