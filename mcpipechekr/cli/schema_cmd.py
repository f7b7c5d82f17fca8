"""`mcpipechekr schema`: write the JSON Schemas of the artifact formats, or check they are current.

The schemas are for editors and other tools that read the pipeline's files; they
are generated from the models so they cannot disagree with what the pipeline
accepts. `--check` exits 1 when the files on disk are stale, for CI.
"""

from __future__ import annotations

from pathlib import Path

import click

from mcpipechekr.artifacts.schemas import SCHEMA_MODELS, export_schemas, stale_schemas

DEFAULT_OUT = "docs/schemas"


@click.command("schema")
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=DEFAULT_OUT,
    show_default=True,
    help="Folder for the `<format>.schema.json` files.",
)
@click.option("--check", is_flag=True, help="Write nothing; exit 1 if any schema file is missing or stale.")
def schema_command(out_dir: Path, check: bool) -> None:
    """Write one JSON Schema per artifact format (manifest, baseline, bug_report, tef_report, trace).

    Files are rewritten only when their content changes. Exit status: 0 up to
    date or written, 1 stale (with --check).
    """
    if check:
        stale = stale_schemas(out_dir)
        if stale:
            names = "\n".join(f"  {path}" for path in stale)
            click.echo(
                f"{len(stale)} schema file(s) are missing or out of date:\n{names}\n"
                f"Run `mcpipechekr schema --out {out_dir}` to update them.",
                err=True,
            )
            raise SystemExit(1)
        click.echo(f"{out_dir}: {len(SCHEMA_MODELS)} schema files are up to date.")
        return
    written = export_schemas(out_dir)
    for path in written:
        click.echo(f"wrote {path}")
    if not written:
        click.echo(f"{out_dir}: {len(SCHEMA_MODELS)} schema files are up to date.")
