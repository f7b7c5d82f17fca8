"""Placeholder: replaced by the module that implements `mcpipechekr evaluate`."""

import click


@click.command("evaluate")
def evaluate_command() -> None:
    """Not implemented yet."""
    raise click.ClickException("not implemented yet")
