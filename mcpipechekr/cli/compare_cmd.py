"""`mcpipechekr compare RUN_A RUN_B`: is run B better than run A? Per task, per bug, and a verdict."""

from __future__ import annotations

import os
from pathlib import Path

import click

from mcpipechekr._util.console import err_console
from mcpipechekr.artifacts.atomic import atomic_write_text, dumps_json
from mcpipechekr.artifacts.rundir import RunDir
from mcpipechekr.cli.common import config_option, resolve_run
from mcpipechekr.report.compare import compare_runs
from mcpipechekr.report.compare_text import render_comparison_text


def _run_argument(ctx: click.Context, text: str) -> RunDir:
    """A folder as given (the library says if it is no run), else a run id or `latest` of the project."""
    if Path(text).exists() or os.sep in text or (os.altsep and os.altsep in text):
        return RunDir(Path(text).absolute())
    return resolve_run(ctx, text)


@click.command("compare")
@click.argument("run_a", metavar="RUN_A")
@click.argument("run_b", metavar="RUN_B")
@config_option
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="text: aligned tables, the verdict last; json: the comparison (schema: comparison.schema.json).",
)
@click.option(
    "--output",
    "output_path",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Write the comparison to this file (atomically) instead of stdout; the verdict goes to stderr.",
)
@click.pass_context
def compare_command(
    ctx: click.Context, run_a: str, run_b: str, output_format: str, output_path: Path | None, **_: object
) -> None:
    """Compare run B with run A: per task, per bug, and a verdict.

    RUN_A and RUN_B are run ids (run-YYYYMMDD-NNN), `latest`, or run folders;
    each must have been evaluated (bug_report.json). Tasks are matched by id:
    the success rates with Fisher's exact test, calls and tokens per attempt
    with a 95% bootstrap interval of the difference (seeded: the same runs
    always give the same output), and a verdict per task at alpha 0.05. Bugs
    are matched by id: fixed, new or unchanged. Runs of different servers or
    task sets are compared on their common tasks, with a warning. With
    holdout tasks (tasks.yaml `split: holdout`), train and holdout side by
    side, and a warning when only train improved. Reads the
    runs, writes nothing into them. Exits 0 whatever the verdict, 2 for a
    folder that is not an evaluated run.
    """
    comparison = compare_runs(_run_argument(ctx, run_a), _run_argument(ctx, run_b))
    if output_format == "json":
        content = dumps_json(comparison.model_dump(mode="json")).decode()
    else:
        content = render_comparison_text(comparison)
    if output_format == "json" or output_path is not None:
        for warning in [*comparison.warnings, *comparison.split_warnings]:
            err_console.print(f"warning: {warning}", markup=False)
    if output_path is None:
        click.echo(content, nl=False)
        return
    atomic_write_text(output_path, content)
    err_console.print(f"{output_path}: {comparison.verdict_line}", markup=False)
