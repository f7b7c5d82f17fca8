"""`mcpipechekr generate`: write a one-case verification manifest for a finding."""

from __future__ import annotations

from pathlib import Path

import click

from mcpipechekr._util.console import console
from mcpipechekr.cli.common import writes_project
from mcpipechekr.findings.home import Home
from mcpipechekr.findings.verification.generate import generate_manifest, read_expect

_FILE = click.Path(path_type=Path, dir_okay=False)


@click.command("generate")
@click.option("--finding", "finding_id", metavar="ID", required=True, help="The finding (finding-<16 hex>).")
@click.option(
    "--confirm-read-only",
    is_flag=True,
    help="Confirm that calling the finding's tool repeatedly changes nothing that matters (required).",
)
@click.option(
    "--expect",
    "expect_path",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="JSON file with the case's `expect` block (check-layer format) [default: outcome ok]. "
    "Required for a false-success finding.",
)
@click.option(
    "--output", type=_FILE, required=True, help="Where to write the manifest (YAML); never replaced."
)
@writes_project
def generate_command(
    finding_id: str, confirm_read_only: bool, expect_path: Path | None, output: Path
) -> None:
    """Write a manifest with one case that verifies a finding once its placeholders are filled.

    The case calls the finding's tool with its argument shape; replace every
    `<fill: TYPE>` with a value that reproduced the failure, then run the
    `mcpipechekr verify` command printed at the top of the file. The findings
    home is $MCPIPECHEKR_HOME (default .mcpipechekr/). Exits 0 when written, 2
    for bad input (unknown finding, no tool to call, missing
    --confirm-read-only, a bad --expect file, an existing --output).
    """
    path = generate_manifest(
        Home.resolve(),
        finding_id,
        confirm_read_only=confirm_read_only,
        output=output,
        expect=read_expect(expect_path) if expect_path is not None else None,
        expect_source=str(expect_path) if expect_path is not None else "--expect",
    )
    console.print(
        f"wrote {path}: fill its <fill: …> placeholders, then run the verify command it shows",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
