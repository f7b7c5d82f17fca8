"""`mcpipechekr tasks …`: help with tasks.yaml; `tasks propose` drafts verified tasks from the server."""

from __future__ import annotations

from pathlib import Path

import click

from mcpipechekr._util.console import console
from mcpipechekr.cli.common import (
    config_options,
    effective_config,
    server_options,
    tasks_file,
    writes_project,
)
from mcpipechekr.errors import UserError
from mcpipechekr.propose import (
    existing_tasks,
    proposal_target,
    propose_tasks,
    replaces_example,
    write_proposed,
)
from mcpipechekr.propose.run import DEFAULT_COUNT
from mcpipechekr.providers import parse_provider


@click.group("tasks")
def tasks_group() -> None:
    """Work on tasks.yaml: propose tasks from the server's own data."""


@tasks_group.command("propose")
@config_options
@server_options
@click.option(
    "--count",
    type=click.IntRange(1, 200),
    default=DEFAULT_COUNT,
    show_default=True,
    help="How many verified tasks to write (fewer when the server offers less).",
)
@click.option(
    "--model",
    "model_text",
    metavar="PROVIDER/MODEL",
    help="A model rewords the questions as users ask them and adds its own tasks, from the explored "
    "data (any configured provider, e.g. openai/gpt-4o). Default: providers.phase0 when it names a "
    "model, else the offline templates alone.",
)
@click.option(
    "--about",
    metavar="TEXT",
    help="Steer the tasks to a subject: its words are searched for while exploring, and the tasks that "
    "mention them come first.",
)
@click.option(
    "--tools",
    "tool_names",
    metavar="NAME[,NAME...]",
    help="Only tasks whose answer comes from one of these tools (others may still be called to reach it).",
)
@click.option("--append", is_flag=True, help="Add the tasks to the end of the existing task file.")
@click.option(
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the tasks to this new file instead of the task file.",
)
@click.pass_context
@writes_project
def propose_command(
    ctx: click.Context,
    count: int,
    model_text: str | None,
    about: str | None,
    tool_names: str | None,
    append: bool,
    output: Path | None,
    **_: object,
) -> None:
    """Explore the server with read-only calls and propose tasks in the tasks.yaml format.

    Only tools annotated readOnlyHint: true (and not destructiveHint: true)
    are called: first with the arguments `check` synthesizes, then with what
    their results hold (JSON or text: a listing leads to its items, an item to
    its details). Templates turn the content into questions people ask:
    look-ups, counts with a filter, the latest or largest, comparisons,
    two-call questions, lists, and a few negative cases. With --model (or
    providers.phase0 naming a model) the model rewords them and adds its own.
    Every task is verified by replaying its reference_calls twice on a freshly
    started server and deriving the same answer; answers that move with the
    clock are refused, and every refusal is listed with its reason. About one
    task in four is `split: holdout`.

    An existing task file is never overwritten: --append adds to it, --output
    writes elsewhere. The one exception is the example tasks.yaml that
    `mcpipechekr init` writes: as long as it is exactly as init wrote it, it is
    replaced. Exits 0 when tasks were written, 1 when none could be verified, 2
    for bad input.
    """
    config = effective_config(ctx)
    spec = None
    if model_text:
        try:
            spec = parse_provider(model_text, endpoints=config.providers.endpoints)
        except ValueError as exc:
            raise UserError(f"--model: {exc}") from None
    source = tasks_file(ctx.params, config)
    target = proposal_target(source, output, append)
    replacing = replaces_example(target, output, append)
    if replacing:
        console.print(
            f"{target} holds only the example `mcpipechekr init` wrote: the proposed tasks replace it",
            markup=False,
        )
    taken = existing_tasks(target, append)
    outcome = propose_tasks(
        config,
        count=count,
        spec=spec,
        taken_ids=[task.task_id for task in taken],
        taken_prompts=[task.prompt for task in taken],
        progress=lambda text: console.print(text, markup=False),
        about=about,
        tools=(tool_names or "").split(","),
    )
    for refusal in outcome.refused:
        console.print(
            f"refused ({refusal.template}): {refusal.prompt} — {refusal.reason}", soft_wrap=True, markup=False
        )
    if not outcome.tasks:
        console.print(
            f"no task could be verified: {outcome.why_none()}; nothing written. "
            "Write your users' requests into the task file "
            "yourself (docs/tasks.md), or let a model draft them: `mcpipechekr tasks propose --model "
            "PROVIDER/MODEL`",
            markup=False,
            soft_wrap=True,
        )
        ctx.exit(1)
    write_proposed(target, outcome.tasks, append)
    for task in outcome.tasks:
        console.print(f"  {task.task_id} [{task.split}]: {task.prompt}", soft_wrap=True, markup=False)
    held = sum(1 for task in outcome.tasks if task.split == "holdout")
    how = "written to" if not replacing else "replaced init's example in"
    console.print(
        f"{len(outcome.tasks)} task(s) {how} {target} ({held} holdout), "
        f"{len(outcome.refused)} refused; check them with `mcpipechekr validate`",
        markup=False,
    )
