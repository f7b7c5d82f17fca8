"""What the graph is built from: config, tasks and the planned run, or the reason they are unavailable.

Computed once per graph load (every task creator asks), so that planning the run,
which reads the server's repository, happens once per doit invocation.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

from mcpipechekr._util.fields import MAX_CONCURRENCY, MAX_REPEAT
from mcpipechekr.config import Config, ConfigOverrides, load_config
from mcpipechekr.errors import InputError, UserError
from mcpipechekr.graph.flags import Settings, _preparing, current_settings
from mcpipechekr.runplan import RunPlan
from mcpipechekr.runshard import parse_shard
from mcpipechekr.steps.stage import plan_run_folder
from mcpipechekr.tasks import Task, load_tasks, select_tasks

# What the graph is built from: config, tasks and the planned run, or the reason they are unavailable.


@dataclass(frozen=True)
class GraphInputs:
    settings: Settings
    config: Config | None = None
    tasks: list[Task] = field(default_factory=list)
    plan: RunPlan | None = None
    error: str | None = None

    def require(self) -> tuple[Config, list[Task], RunPlan]:
        if self.error or self.config is None or self.plan is None:
            raise InputError(self.error or "no configuration")
        return self.config, self.tasks, self.plan


def load_graph_config(settings: Settings) -> Config:
    overrides = ConfigOverrides(providers={phase: value for phase, value in settings.providers if value})
    return load_config(settings.config, overrides)


@functools.cache
def graph_inputs(settings: Settings) -> GraphInputs:
    """Config, selected tasks and the run plan, computed once per graph load."""
    try:
        _check_counts(settings)
        shard = parse_shard(settings.shard) if settings.shard else None
        config = load_graph_config(settings)
        tasks = select_tasks(load_tasks(config.paths.tasks), settings.task_ids, settings.tags)
        plan = plan_run_folder(
            config,
            tasks,
            runner=settings.runner,
            keep_builtin_tools=settings.keep_builtin_tools,
            repeat=settings.repeat,
            new_run=settings.new_run,
            parameters=settings.given(),
            prepare=_preparing(),
            shard=shard,
        )
    except UserError as exc:
        return GraphInputs(settings, error=exc.message)
    return GraphInputs(settings, config, tasks, plan)


def _check_counts(settings: Settings) -> None:
    """`--repeat` and `--concurrency` within their bounds, as the CLI's own flags are."""
    bounds = [("--repeat", settings.repeat, MAX_REPEAT)]
    bounds.append(("--concurrency", settings.concurrency, MAX_CONCURRENCY))
    for flag, value, most in bounds:
        if value > most:
            shown = str(value) if len(str(value)) <= 12 else f"a number of {len(str(value))} digits"
            raise InputError(f"{flag}: must be at most {most}, not {shown}")


def _inputs() -> GraphInputs:
    return graph_inputs(current_settings())
