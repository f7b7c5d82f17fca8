"""`mcpipechekr lint`: Phase 0.5, the tool descriptions scored before any agent runs; with `--suggest RUN`,
new descriptions for the bugs a description caused in an evaluated run."""

from __future__ import annotations

import click

from mcpipechekr._util.console import console, err_console
from mcpipechekr._util.fields import MAX_REPEAT
from mcpipechekr._util.yamlsrc import display_path
from mcpipechekr.artifacts import RunDir, list_runs
from mcpipechekr.artifacts.atomic import dumps_json
from mcpipechekr.cli.common import (
    config_options,
    effective_config,
    provider_option,
    resolve_run,
    server_options,
    writes_project,
)
from mcpipechekr.config import Config
from mcpipechekr.errors import UserError
from mcpipechekr.lint import render_text
from mcpipechekr.lint.suggest import render_suggestions
from mcpipechekr.steps.lint import lint_step
from mcpipechekr.steps.suggest import suggest_step


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
    help="text: the readable report; json: tef_report.json on stdout (with --suggest: "
    "description_suggestions.json).",
)
@click.option("--no-cache", is_flag=True, help="Evaluate again even if nothing changed since the last lint.")
@click.option(
    "--suggest",
    "suggest_run",
    metavar="RUN",
    help="Instead of linting, propose new descriptions for the bugs a description caused in an evaluated run "
    "(a run id, `latest` or a run folder), each re-scored by the selection test; writes "
    "description_suggestions.json into the run.",
)
@click.pass_context
@writes_project
def lint_command(
    ctx: click.Context,
    repeat: int,
    accept_risks: tuple[str, ...],
    accept_reason: str | None,
    output_format: str,
    no_cache: bool,
    suggest_run: str | None,
    **_: object,
) -> None:
    """Lint the server's tool descriptions: static rules, overlapping tools, a tool-selection test,
    hidden instructions and drift since the last lint.

    Exits 0 when nothing blocks, 1 when a tool is misleading or a finding is of
    severity error (accept it with --accept-risk TOOL[:RULE]), and 2 for bad
    input or a server that cannot be reached.

    With --suggest RUN it reads the run's bug report, traces and tools.json
    instead of the server, and proposes for each bug a description caused
    (wrong or late tool, an unused parameter that would have saved calls, a
    parameter's values guessed) a new tool or parameter text, quoting the trace
    steps behind it and re-scoring tool selection with it (offline, and with the
    phase-0.5 model when one is configured). Exits 0, or 2 for bad input.
    """
    config = effective_config(ctx)
    if suggest_run is not None:
        if accept_risks:
            raise UserError(
                "--accept-risk belongs to a lint of the server, not to --suggest: run "
                "`mcpipechekr lint --accept-risk TOOL` on its own."
            )
        run_dir = _evaluated_run(ctx, suggest_run, config)
        suggestions = suggest_step(config, run_dir, repeat=repeat)
        if output_format == "json":
            click.echo(dumps_json(suggestions.model_dump(mode="json")).decode(), nl=False)
        else:
            text = render_suggestions(suggestions, display_path(run_dir.description_suggestions))
            console.print(text, markup=False, highlight=False, soft_wrap=True, end="")
        return
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


def _evaluated_run(ctx: click.Context, run: str, config: Config) -> RunDir:
    """The run --suggest names; in a project with no runs yet, the refusal says how to make one."""
    try:
        return resolve_run(ctx, run, config)
    except UserError as exc:
        if list_runs(config.paths.runs):
            raise
        raise UserError(
            f"{exc.message} --suggest reads an evaluated run: make one with `mcpipechekr run`, then "
            "`mcpipechekr evaluate`, then `mcpipechekr lint --suggest latest`."
        ) from None
