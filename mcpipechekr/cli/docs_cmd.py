"""`mcpipechekr docs`: write the command-line reference (docs/cli.md), or check that it is current.

The page is rendered from the commands themselves (`cli/reference.py`), so it
cannot disagree with `--help`; `--check` exits 1 while the file on disk is
stale, for CI, like `mcpipechekr schema --check`.
"""

from __future__ import annotations

from pathlib import Path

import click

from mcpipechekr._util.commands import runnable
from mcpipechekr.artifacts.atomic import atomic_write_text
from mcpipechekr.cli.reference import render_reference

DEFAULT_OUT = "docs/cli.md"


@click.command("docs")
@click.option(
    "--out",
    "out_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=DEFAULT_OUT,
    show_default=True,
    help="The reference page to write or check.",
)
@click.option("--check", is_flag=True, help="Write nothing; exit 1 if the page is missing or stale.")
@click.pass_context
def docs_command(ctx: click.Context, out_path: Path, check: bool) -> None:
    """Write the command-line reference: every command with its usage, help and options, and the doit tasks.

    The page is rewritten only when its content changes. Exit status: 0 up to
    date or written, 1 stale (with --check).
    """
    text = render_reference(ctx.find_root().command)
    current = out_path.read_bytes().decode("utf-8", errors="replace") if out_path.is_file() else None
    if current == text:
        click.echo(f"{out_path} is up to date.")
        return
    if check:
        state = "missing" if current is None else "out of date"
        hint = f"{out_path} is {state}. Run `mcpipechekr docs --out {out_path}` to update it."
        click.echo(runnable(hint), err=True)
        raise SystemExit(1)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out_path, text)
    click.echo(f"wrote {out_path}")
