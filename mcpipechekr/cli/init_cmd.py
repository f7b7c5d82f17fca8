"""Placeholder: replaced by the module that implements `mcpipechekr init`."""

import click


@click.command("init")
def init_command() -> None:
    """Not implemented yet."""
    raise click.ClickException("not implemented yet")
