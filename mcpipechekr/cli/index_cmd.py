"""`mcpipechekr index [--rebuild]`: bring index.db up to date with the journals."""

from __future__ import annotations

import click

from mcpipechekr.cli.common import writes_project
from mcpipechekr.findings.evidence.index import refresh_index
from mcpipechekr.findings.home import Home


@click.command("index")
@click.option(
    "--rebuild", is_flag=True, help="Rebuild index.db from every journal, ignoring the checkpoints."
)
@writes_project
def index_command(rebuild: bool) -> None:
    """Index the captured call records of the findings home into index.db.

    Only bytes appended since the last run are read; a journal whose indexed
    bytes changed, shrank or vanished, or an append to an earlier journal,
    rebuilds the index from scratch. An attempt traced again counts once:
    its later records replace the earlier ones. A damaged record stops the
    refresh with its file and line, and the previous index stays. The home is
    $MCPIPECHEKR_HOME (default .mcpipechekr/). Exits 0, or 2 for a damaged
    journal.
    """
    home = Home.resolve()
    stats = refresh_index(home, rebuild=rebuild)
    for warning in stats.warnings:
        click.echo(f"warning: {warning}", err=True)
    click.echo(stats.summary())
    if stats.journals == 0:
        click.echo(
            f"no journals under {home.journals} yet: run a server through `mcpipechekr capture -- CMD`, "
            "or run the pipeline's Phase 1.",
            err=True,
        )
