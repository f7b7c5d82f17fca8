"""`mcpipechekr serve`: one project's findings as an MCP server over stdio, for a coding agent."""

from __future__ import annotations

from pathlib import Path

import click

from mcpipechekr.cli.common import config_option, effective_config
from mcpipechekr.findings.views.serve import serve
from mcpipechekr.steps.handoff import findings_home


@click.command("serve")
@config_option
@click.pass_context
def serve_command(ctx: click.Context, config_path: Path) -> None:
    """Serve a project's findings over stdio: list_findings, get_finding, generate_case, verify_fix.

    Put it in a coding agent's MCP configuration so the agent can read the
    findings and check its own fix. It is bound at start to one project: the
    config file (whose `server` is the server verify_fix starts) and the
    findings home ($MCPIPECHEKR_HOME, else the config's `paths.home`). The
    tools take finding ids and case values, never a command, URL or path:
    generate_case writes <home>/cases/<finding-id>.yaml, and verify_fix runs
    it against the configured server. Verifications made here are recorded as
    advisory and never move a finding; see docs/findings.md. A missing or
    corrupt index makes the listing tools answer the "evidence unavailable"
    error `mcpipechekr findings` exits 3 with. Exits 2 when the config cannot
    be read.
    """
    config = effective_config(ctx)
    serve(config, findings_home(config))
