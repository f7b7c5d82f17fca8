"""`mcpipechekr run`: Phase 1, agents run each task blind and every attempt becomes a trace."""

from __future__ import annotations

from pathlib import Path

import click
from rich.table import Table

from mcpipechekr._util.console import console
from mcpipechekr._util.fields import MAX_CONCURRENCY, MAX_REPEAT
from mcpipechekr.artifacts.trace import read_trace
from mcpipechekr.cli.common import (
    config_options,
    effective_config,
    provider_option,
    server_options,
    task_selection_options,
    writes_project,
)
from mcpipechekr.config import Config
from mcpipechekr.providers import ProviderSpec
from mcpipechekr.runners.base import DEMO_MODEL_LABEL
from mcpipechekr.runners.engine import DEFAULT_CONCURRENCY, plan_attempts
from mcpipechekr.runners.registry import (
    AGENT_RUNNERS,
    DEFAULT_OPENCODE_MODE,
    DEFAULT_RUNNER,
    OPENCODE_MODES,
    runner_factory,
)
from mcpipechekr.runshard import SHARD_HELP, attempt_id, parse_shard
from mcpipechekr.steps.snapshot import snapshot_step
from mcpipechekr.steps.stage import plan_run_folder
from mcpipechekr.steps.trace import trace_step
from mcpipechekr.tasks import load_tasks, select_tasks


def phase1_providers(config: Config, given: tuple[str, ...]) -> list[ProviderSpec]:
    """The providers to compare: each --phase1-provider in order, else config's providers.phase1.

    The first flag is already config's providers.phase1 (applied when the config
    was loaded); the others are parsed against the same endpoints.
    """
    return [config.providers.phase1, *(config.providers.parse_flag("phase1", text) for text in given[1:])]


def _shown(spec: str) -> str:
    return f"demo ({DEMO_MODEL_LABEL})" if spec == "demo" else spec


def _summary(paths: list[Path]) -> Table:
    table = Table(show_header=True, box=None, pad_edge=False)
    numeric = ("rep", "calls", "errors", "tokens")
    for column in ("task", "provider", "rep", "status", "calls", "errors", "tokens"):
        table.add_column(column, justify="right" if column in numeric else "left")
    for path in paths:
        trace = read_trace(path)
        totals = trace.totals
        status = trace.status if not trace.status_reason else f"{trace.status}: {trace.status_reason}"
        table.add_row(
            trace.task_id,
            _shown(trace.provider),
            str(trace.repetition),
            status,
            str(totals.tool_calls),
            str(totals.errors),
            f"{totals.total_tokens:,}{'' if totals.usage_source == 'reported' else ' (est.)'}",
        )
    return table


@click.command("run")
@config_options
@server_options
@task_selection_options
@provider_option("phase1", repeatable=True)
@click.option(
    "--runner",
    type=click.Choice(AGENT_RUNNERS),
    default=DEFAULT_RUNNER,
    show_default=True,
    help="What drives the agent: native (a pydantic-ai agent), opencode, or claude-code (their CLIs). "
    "The demo provider always runs natively.",
)
@click.option(
    "--keep-builtin-tools",
    is_flag=True,
    help="With --runner opencode or claude-code: leave the agent CLI's own tools (shell, files, ...) "
    "beside the server's. By default they are removed, so the agent can only use the server.",
)
@click.option(
    "--opencode-mode",
    type=click.Choice(OPENCODE_MODES),
    default=DEFAULT_OPENCODE_MODE,
    show_default=True,
    help="With --runner opencode: serve keeps one `opencode serve` for the run and gives each attempt "
    "a session over its HTTP API; run starts `opencode run` for each attempt (seconds more per attempt).",
)
@click.option(
    "--repeat",
    type=click.IntRange(min=1, max=MAX_REPEAT),
    default=1,
    show_default=True,
    help="Attempts per task and provider (models vary from one attempt to the next).",
)
@click.option(
    "--concurrency",
    type=click.IntRange(min=1, max=MAX_CONCURRENCY),
    default=DEFAULT_CONCURRENCY,
    show_default=True,
    help="Attempts running at once.",
)
@click.option(
    "--max-requests",
    type=click.IntRange(min=1, max=100_000),
    default=None,
    help="Model requests one attempt may make; reaching it ends that attempt as incomplete "
    "[default: timeouts.max_requests, 50].",
)
@click.option("--shard", "shard_text", metavar="K/N", default=None, help=SHARD_HELP)
@click.pass_context
@writes_project
def run_command(
    ctx: click.Context,
    phase1_provider: tuple[str, ...],
    runner: str,
    keep_builtin_tools: bool,
    opencode_mode: str,
    repeat: int,
    concurrency: int,
    max_requests: int | None,
    shard_text: str | None,
    task_ids: tuple[str, ...],
    tags: tuple[str, ...],
    **_: object,
) -> None:
    """Phase 1: run each task blind with an agent against the server; one trace per attempt.

    The agent reaches the server only through a capture proxy that journals
    every MCP message (runs/RUN/journals/), and each trace
    (runs/RUN/traces/TASK__PROVIDER__rNNN.json) takes its tool calls from that
    journal. An attempt that times out (timeouts.task_s) or reaches
    --max-requests ends with that status and the run goes on. Each finished
    attempt's calls go to the findings home at once. Every run gets a new run
    folder (models vary between runs; doit's targets reuse a run instead).
    With --shard K/N only the attempts of shard K run, into a folder marked as
    that shard; `mcpipechekr merge` assembles the N shard folders into the run.

    Exit codes: 0 the run finished (whatever each attempt's status); 2 bad
    input, or the server failed (the error names the task; traces written so
    far stay valid, the interrupted ones are marked incomplete).
    """
    shard = parse_shard(shard_text) if shard_text is not None else None
    config = effective_config(ctx)
    specs = phase1_providers(config, phase1_provider)
    # refuses bad flags before a run
    runner_factory(config, runner, keep_builtin_tools=keep_builtin_tools, opencode_mode=opencode_mode)
    tasks = select_tasks(load_tasks(config.paths.tasks), task_ids, tags)
    attempts = plan_attempts(tasks, specs, repeat)
    plan = plan_run_folder(
        config,
        tasks,
        providers=specs,
        runner=runner,
        keep_builtin_tools=keep_builtin_tools,
        repeat=repeat,
        new_run=True,
        # as doit records its flags: those that differ from their defaults (repeat decides the plan)
        parameters={
            **({"keep_builtin_tools": True} if keep_builtin_tools else {}),
            **({"opencode_mode": opencode_mode} if opencode_mode != DEFAULT_OPENCODE_MODE else {}),
            **({"repeat": repeat} if repeat != 1 else {}),
            **({"shard": str(shard)} if shard else {}),
        },
        shard=shard,
    )
    snapshot_step(config, plan, tasks, providers=specs)
    console.print(
        f"{plan.run_id}: {len(tasks)} task(s) x {len(specs)} provider(s) x {repeat} "
        f"({', '.join(_shown(str(spec)) for spec in specs)}; concurrency {concurrency})"
    )
    if plan.shard is not None:
        mine = set(plan.shard.attempts)
        attempts = [
            one for one in attempts if attempt_id(one.task.task_id, str(one.provider), one.repetition) in mine
        ]
        planned = len(plan.shard.planned_attempts)
        console.print(f"shard {shard}: {len(attempts)} of the run's {planned} attempts")
    paths = trace_step(
        config,
        plan.run_dir,
        attempts,
        concurrency=concurrency,
        runner=runner,
        keep_builtin_tools=keep_builtin_tools,
        opencode_mode=opencode_mode,
        max_requests=max_requests,
        progress=True,
    )
    console.print(_summary(paths), soft_wrap=True)
    console.print(f"{len(paths)} trace(s) in {plan.run_dir.traces}")
