"""Placeholder: replaced by `mcpipechekr server …`."""

import click


@click.group("server")
def server_group() -> None:
    """Start, health-check and inspect the MCP server under test."""
