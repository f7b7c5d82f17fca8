"""`mcpipechekr merge SHARD_FOLDER…`: the shards of one run (`run --shard K/N`) → the run folder."""

from __future__ import annotations

from pathlib import Path

import click

from mcpipechekr.cli.common import config_options, effective_config, writes_project
from mcpipechekr.steps.merge import merge_shards


@click.command("merge")
@click.argument(
    "folders",
    metavar="SHARD_FOLDER…",
    nargs=-1,
    required=True,
    type=click.Path(path_type=Path, file_okay=False),
)
@config_options
@click.option(
    "--output",
    "output",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="The run folder to create, named by a run id (run-YYYYMMDD-NNN) [default: the next run id in "
    "the project's runs folder, where `evaluate` finds the baseline].",
)
@click.pass_context
@writes_project
def merge_command(ctx: click.Context, folders: tuple[Path, ...], output: Path | None, **_: object) -> None:
    """Merge the shard folders of one run into the run folder that `evaluate` reads.

    Each SHARD_FOLDER is a run folder made by `mcpipechekr run --shard K/N` (or
    `doit trace --shard K/N`), on this machine or copied from another. They
    must be all N shards of one run (same server source, tasks, models,
    repetitions and config hash), each completed, none given twice: then
    every planned attempt is traced exactly once. The merged run has each
    attempt's trace and journal as its shard wrote them, a manifest that
    lists the shards (`merged_from`), and its calls in the findings home.

    Exit codes: 0 merged; 2 a foreign, overlapping, missing or incomplete
    shard (the error names the folders and what is wrong), or bad input.
    """
    config = effective_config(ctx)
    merge_shards(config, list(folders), output=output)
