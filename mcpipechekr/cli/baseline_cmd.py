"""`mcpipechekr baseline`: Phase 0, the accepted answer of each task → runs/baseline.json."""

from __future__ import annotations

import click

from mcpipechekr.cli.common import (
    config_options,
    effective_config,
    provider_option,
    server_options,
    task_selection_options,
    writes_project,
)
from mcpipechekr.steps.baseline import baseline_step


@click.command("baseline")
@config_options
@server_options
@task_selection_options
@provider_option("phase0")
@click.option(
    "--regenerate-baseline",
    "regenerate",
    is_flag=True,
    help="Baseline the selected tasks again, replacing their entries. Without it only tasks with no "
    "entry yet, and stale entries (made against other tool definitions), are baselined.",
)
@click.pass_context
@writes_project
def baseline_command(
    ctx: click.Context, task_ids: tuple[str, ...], tags: tuple[str, ...], regenerate: bool, **_: object
) -> None:
    """Record the accepted answer of each task in runs/baseline.json.

    Tasks with reference_calls are answered by running those calls against the
    server, without a model; the others by the phase-0 agent. Each result gets
    a plausibility score from the judge (a model, or rules with `demo`). A task
    added to tasks.yaml later is baselined on its own; the rest are kept.

    An entry made against other tool definitions than the server offers now
    (a fix added a parameter) is stale: it is reported and rebuilt, and the
    phase-0 agent is tried on it too, so a cheaper way the fix opened becomes
    the task's minimum.

    Exits 0 when every result was obtained, 1 when a task's calls or agent
    failed (its entry is written with score 0), 2 for bad input.
    """
    outcome = baseline_step(effective_config(ctx), task_ids=task_ids, tags=tags, regenerate=regenerate)
    if outcome.problems:
        ctx.exit(1)
