"""Placeholder: replaced by the module that implements `mcpipechekr lint`."""

import click


@click.command("lint")
def lint_command() -> None:
    """Not implemented yet."""
    raise click.ClickException("not implemented yet")
