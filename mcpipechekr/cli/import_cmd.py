"""Placeholder: replaced by the module that implements `mcpipechekr import`."""

import click


@click.command("import")
def import_command() -> None:
    """Not implemented yet."""
    raise click.ClickException("not implemented yet")
