"""Placeholder: replaced by the module that implements `mcpipechekr check`."""

import click


@click.command("check")
def check_command() -> None:
    """Not implemented yet."""
    raise click.ClickException("not implemented yet")
