"""`mcpipechekr export-issues`: one issue-ready markdown file per finding not yet closed."""

from __future__ import annotations

from pathlib import Path

import click

from mcpipechekr._util.console import console
from mcpipechekr.findings.home import Home
from mcpipechekr.findings.views.export import export_issues


@click.command("export-issues")
@click.option(
    "--dir",
    "out_dir",
    type=click.Path(path_type=Path, file_okay=False),
    required=True,
    help="Folder for the `<finding id>.md` files (created if missing).",
)
def export_command(out_dir: Path) -> None:
    """Write one markdown issue per finding that is not closed: evidence, severity, repro, fix, verify.

    The repro is shape-level (tool, argument keys and types); argument values
    and error texts are never stored, so the files are safe to share. Files of
    findings closed since the last export are removed. The findings home is
    $MCPIPECHEKR_HOME (default .mcpipechekr/). Exits 0, or 3 when the index is
    missing, corrupt or incomplete (run `mcpipechekr index`).
    """
    result = export_issues(Home.resolve(), out_dir)
    if not result.written:
        click.echo(
            "no finding to export: every registered finding is closed, or none is registered.", err=True
        )
    summary = f"wrote {len(result.written)} issue file(s) to {out_dir}"
    if result.removed:
        summary += f"; removed {len(result.removed)} of findings closed since"
    console.print(summary, markup=False, highlight=False, soft_wrap=True)
