"""Placeholder: replaced by the module that implements `mcpipechekr validate`."""

import click


@click.command("validate")
def validate_command() -> None:
    """Not implemented yet."""
    raise click.ClickException("not implemented yet")
