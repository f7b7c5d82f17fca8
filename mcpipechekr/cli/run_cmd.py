"""Placeholder: replaced by the module that implements `mcpipechekr run`."""

import click


@click.command("run")
def run_command() -> None:
    """Not implemented yet."""
    raise click.ClickException("not implemented yet")
