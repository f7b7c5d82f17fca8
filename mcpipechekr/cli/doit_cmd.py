"""`mcpipechekr doit …` and `mcpipechekr loop …`: the doit graph without a dodo.py in the folder.

Both run the graph from the installed package in the project folder (`--dir`,
default the current one), exactly as `doit …` does where `mcpipechekr init` has
written a dodo.py: the same tasks, flags, state folder and lock.
"""

from __future__ import annotations

from pathlib import Path

import click

from mcpipechekr.graph import run_doit

_PASS_THROUGH = {"ignore_unknown_options": True, "allow_interspersed_args": False}
project_option = click.option(
    "--dir",
    "project",
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    default=Path("."),
    show_default=True,
    help="The project folder (config.yaml, tasks.yaml); relative paths in ARGS are taken from it.",
)


@click.command("doit", context_settings=_PASS_THROUGH)
@project_option
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def doit_command(project: Path, args: tuple[str, ...]) -> None:
    """Run doit on the pipeline's graph: ARGS are doit's (a command, targets, flags).

    \b
    Examples:
      mcpipechekr doit list                    # the targets
      mcpipechekr doit baseline                # Phase 0, once
      mcpipechekr doit loop --phase1-provider openai/gpt-4o
      mcpipechekr doit runs/run-20261202-001/bug_report.json

    The same as `doit ARGS` in a folder with the dodo.py that `mcpipechekr init`
    writes. Exits with doit's status: 0 done, 1 a step failed, 2 a problem in
    the inputs (config.yaml, tasks.yaml, a flag) or the files, 130 on Ctrl-C.
    """
    raise SystemExit(run_doit(list(args), project))


@click.command("loop", context_settings=_PASS_THROUGH)
@project_option
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def loop_command(project: Path, args: tuple[str, ...]) -> None:
    """Run the loop: lint, trace, evaluate, review, fix, restart, again (`doit loop ARGS`).

    \b
    Examples:
      mcpipechekr loop
      mcpipechekr loop --phase1-provider openai/gpt-4o --task find-invoice
      mcpipechekr loop --phase3-provider anthropic/claude-sonnet-4-6

    ARGS are the graph's flags (`mcpipechekr doit help loop` lists them). The
    baseline must exist: `mcpipechekr doit baseline` makes it. Exits with
    doit's status: 0 done, 1 a step failed, 2 a problem in the inputs or the
    files, 130 on Ctrl-C.
    """
    raise SystemExit(run_doit(["loop", *args], project))
