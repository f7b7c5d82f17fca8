"""`mcpipechekr server …`: start the server under test by hand and see that it is healthy."""

from __future__ import annotations

import click

from mcpipechekr._util.console import console
from mcpipechekr.cli.common import config_options, effective_config, server_options, writes_project
from mcpipechekr.server.lifecycle import server_under_test
from mcpipechekr.server.logs import describe_target
from mcpipechekr.server.workspace import prepare_repo


@click.group("server")
def server_group() -> None:
    """Start, health-check and prepare the MCP server under test."""


@server_group.command("health")
@config_options
@server_options
@click.option("--timeout", "timeout_s", type=float, help="Seconds allowed for start-up plus tools/list.")
@click.option("--min-tools", type=int, help="Fewest tools a healthy server lists.")
@click.pass_context
def health_command(ctx: click.Context, timeout_s: float | None, min_tools: int | None, **_: object) -> None:
    """Start the server, check that tools/list answers within the timeout, list its tools, stop it.

    Exits 0 when healthy and 2 when the server fails to start, hangs, dies or
    lists too few tools; the message says where its stderr was logged.
    """
    config = effective_config(ctx)
    server = config.server
    health = server.health.model_copy(
        update={k: v for k, v in {"timeout_s": timeout_s, "min_tools": min_tools}.items() if v is not None}
    )
    server = server.model_copy(update={"health": health})
    prepare_repo(server)
    with server_under_test(config, server=server) as live:
        assert live.health is not None
        console.print(
            f"server '{server.name}' is healthy ({config.redactor.redact(describe_target(server))}): "
            f"{len(live.health.tools)} tool(s) in {live.health.elapsed_s:.1f}s"
        )
        for tool in live.list_tools():
            first_line = (tool.description or "").strip().splitlines()[0:1]
            console.print(f"  {tool.name}  {first_line[0] if first_line else ''}", soft_wrap=True)


@server_group.command("prepare")
@config_options
@click.pass_context
@writes_project
def prepare_command(ctx: click.Context, **_: object) -> None:
    """Create server.repo as a git repository copied from server.repo_template, if it does not exist yet."""
    config = effective_config(ctx)
    repo = prepare_repo(config.server)
    if repo is None:
        raise click.ClickException("config.yaml sets no server.repo: there is nothing to prepare.")
    console.print(f"server repository: {repo}")
