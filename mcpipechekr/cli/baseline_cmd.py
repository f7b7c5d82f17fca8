"""Placeholder: replaced by the module that implements `mcpipechekr baseline`."""

import click


@click.command("baseline")
def baseline_command() -> None:
    """Not implemented yet."""
    raise click.ClickException("not implemented yet")
