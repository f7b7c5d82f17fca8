"""Placeholder: replaced by the module that implements `mcpipechekr schema`."""

import click


@click.command("schema")
def schema_command() -> None:
    """Not implemented yet."""
    raise click.ClickException("not implemented yet")
