"""`mcpipechekr import --from opencode|claude-code FILE --task ID`: a session you already have, as a trace."""

from __future__ import annotations

from pathlib import Path

import click

from mcpipechekr._util.console import console
from mcpipechekr.artifacts.trace import read_trace
from mcpipechekr.cli.common import config_options, effective_config, writes_project
from mcpipechekr.session_import import SESSION_KINDS, import_session


@click.command("import")
@click.option(
    "--from",
    "kind",
    type=click.Choice(SESSION_KINDS),
    required=True,
    help="What FILE is: an `opencode export <session>` JSON, or a Claude Code "
    "`claude -p --output-format stream-json --verbose` log.",
)
@click.argument("file", type=click.Path(path_type=Path, exists=True, dir_okay=False))
@click.option(
    "--task", "task_id", metavar="ID", required=True, help="The task in tasks.yaml the session worked on."
)
@click.option(
    "--run",
    "run",
    metavar="RUN",
    help="The run to add the trace to: a run id (run-YYYYMMDD-NNN) or `latest` "
    "[default: the latest run, or a new one when there is none].",
)
@click.option(
    "--new-run",
    "new_run",
    is_flag=True,
    help="Import into a new run (manifest, tools.json from the live server), even when runs exist.",
)
@click.option(
    "--provider",
    metavar="LABEL",
    help="Provider recorded in the trace [default: the session's own, e.g. openai/gpt-4o].",
)
@config_options
@click.pass_context
@writes_project
def import_command(
    ctx: click.Context,
    kind: str,
    file: Path,
    task_id: str,
    run: str | None,
    new_run: bool,
    provider: str | None,
    **_: object,
) -> None:
    """Convert a session you already have into a trace of a run.

    The trace (runner `import`) goes into the run's traces/ as the next
    repetition of the task, so Phase 2 evaluates it like any other, and the
    run's manifest lists it under `imports` (client, its version, the file's
    hash). With no run yet, or with --new-run, a new run is made for it. Tool
    names are mapped to the server's tools (the run's tools.json, else the
    live server's list): the client's prefix (`<server>_`, `mcp__<server>__`)
    is dropped whatever the server is called in config.yaml; the client's own
    tools (bash, Read, ...) stay as calls that never reached the server. A
    file that is not a session of the given kind, or that calls a tool of the
    server it does not list, is refused with what is wrong, and nothing is
    written. Exits 0 on success, 2 for bad input.
    """
    config = effective_config(ctx)
    imported = import_session(
        config,
        kind,
        file,
        task_id,
        run=run,
        new_run=new_run,
        model_label=provider,  # type: ignore[arg-type]
    )
    if imported.created_run:
        console.print(
            f"created run {imported.run_dir.run_id} for the import: {imported.run_dir.root}",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    trace = read_trace(imported.path)
    console.print(
        f"wrote {imported.path}: {trace.status}, {trace.totals.model_turns} model turn(s), "
        f"{trace.totals.tool_calls} tool call(s), {trace.totals.total_tokens} tokens",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
    if imported.mapping.kept:
        console.print(
            "note: not the server's tools, kept as calls that never reached it: "
            + ", ".join(imported.mapping.kept),
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
