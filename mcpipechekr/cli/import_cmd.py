"""`mcpipechekr import --from opencode|claude-code FILE --task ID`: a session you already have, as a trace."""

from __future__ import annotations

from pathlib import Path

import click

from mcpipechekr._util.console import console
from mcpipechekr.artifacts.trace import read_trace
from mcpipechekr.cli.common import config_options, effective_config
from mcpipechekr.runners.session_import import SESSION_KINDS, import_session


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
    default="latest",
    show_default=True,
    help="The run to add the trace to: a run id (run-YYYYMMDD-NNN) or `latest`.",
)
@click.option(
    "--provider",
    metavar="LABEL",
    help="Provider recorded in the trace [default: the session's own, e.g. openai/gpt-4o].",
)
@config_options
@click.pass_context
def import_command(
    ctx: click.Context, kind: str, file: Path, task_id: str, run: str, provider: str | None, **_: object
) -> None:
    """Convert a session you already have into a trace of a run.

    The trace (runner `import`) goes into the run's traces/ as the next
    repetition of the task, so Phase 2 evaluates it like any other. The
    session's MCP tool names (`<server>_<tool>`, `mcp__<server>__<tool>`) are
    mapped back using the server name in config.yaml. A file that is not a
    session of the given kind is refused with what is wrong, and nothing is
    written. Exits 0 on success, 2 for bad input.
    """
    config = effective_config(ctx)
    path = import_session(config, kind, file, task_id, run=run, provider=provider)  # type: ignore[arg-type]
    trace = read_trace(path)
    console.print(
        f"wrote {path}: {trace.status}, {trace.totals.model_turns} model turn(s), "
        f"{trace.totals.tool_calls} tool call(s), {trace.totals.total_tokens} tokens",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
