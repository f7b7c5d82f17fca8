"""`mcpipechekr serve`: the findings as an MCP server over stdio, for a coding agent."""

from __future__ import annotations

import click

from mcpipechekr.findings.views.serve import serve


@click.command("serve")
def serve_command() -> None:
    """Serve the findings over stdio: list_findings, get_finding, generate_case, verify_fix.

    Put `mcpipechekr serve` in a coding agent's MCP configuration so it can
    read the findings and check its own fix. The findings home is
    $MCPIPECHEKR_HOME (default .mcpipechekr/), read at start. A missing or
    corrupt index makes the listing tools answer the "evidence unavailable"
    error `mcpipechekr findings` exits 3 with.
    """
    serve()
