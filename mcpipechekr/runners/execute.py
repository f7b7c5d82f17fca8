"""Phase 1 execution: every task x provider x repetition, concurrently, each attempt one trace.

`run_phase1` plans the attempts and `execute_attempts` runs them with the
engine (`engine.py`, which holds the rules for timeouts, server failures and
Ctrl-C) in one event loop in this process, with the progress display (`progress.py`) on stderr.

One process is enough: an attempt spends seconds waiting for the model and a
few hundred milliseconds of this interpreter's CPU, so `concurrency` attempts
in flight keep one event loop far from busy. bench/phase1_concurrency.py
measures it against the same attempts spread over forked processes, with a
model that takes 1-3 s per request: the processes gain nothing.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anyio

from mcpipechekr._util.console import err_console
from mcpipechekr.artifacts.rundir import RunDir
from mcpipechekr.config import Config
from mcpipechekr.providers import ProviderSpec
from mcpipechekr.runners.engine import (
    DEFAULT_CONCURRENCY,
    Attempt,
    Phase1State,
    RunnerFor,
    plan_attempts,
    run_attempts,
)
from mcpipechekr.runners.progress import Phase1Progress
from mcpipechekr.runners.registry import DEFAULT_OPENCODE_MODE, DEFAULT_RUNNER, runner_factory
from mcpipechekr.server.workspace import refuse_changes_after_fix
from mcpipechekr.tasks import Task


def run_phase1(
    config: Config,
    run_dir: RunDir | Path,
    tasks: Sequence[Task],
    providers: Sequence[ProviderSpec],
    *,
    repeat: int = 1,
    **options: Any,
) -> list[Path]:
    """Run every task with every provider `repeat` times; returns the trace files written, in plan order.

    The options are `execute_attempts`'.
    """
    return execute_attempts(config, run_dir, plan_attempts(tasks, providers, repeat), **options)


def execute_attempts(
    config: Config,
    run_dir: RunDir | Path,
    attempts: Sequence[Attempt],
    *,
    concurrency: int = DEFAULT_CONCURRENCY,
    runner_for: RunnerFor | None = None,
    runner: str = DEFAULT_RUNNER,
    keep_builtin_tools: bool = False,
    opencode_mode: str = DEFAULT_OPENCODE_MODE,
    max_requests: int | None = None,
    progress: bool = True,
    on_attempt: Callable[[Attempt], None] | None = None,
) -> list[Path]:
    """Run `attempts` (a doit target runs one, `mcpipechekr run` all it planned); returns the trace
    files written, in plan order.

    `runner_for` picks the runner per provider (default: the registry, with
    `runner` for non-demo providers, and the agent CLIs' built-in tools left
    to them when `keep_builtin_tools`, and the opencode runner in
    `opencode_mode`). At most `concurrency` attempts run at
    once. `progress` shows done / running / failed and tokens on stderr.
    Raises ServerHalt when the server fails (see `runners.engine`) and
    KeyboardInterrupt on Ctrl-C, after writing the traces of the attempts in
    flight. `on_attempt` is told of each attempt as soon as it is finished
    and its trace written (not those cancelled by another's server halt,
    Ctrl-C or the phase timeout).
    """
    attempts = list(attempts)
    refuse_changes_after_fix(config.server)
    if runner_for is None:
        runner_for = runner_factory(
            config, runner, keep_builtin_tools=keep_builtin_tools, opencode_mode=opencode_mode
        )
    display = Phase1Progress(err_console) if progress else None

    def update(state: Phase1State, attempt: Attempt | None) -> None:
        if display is not None:
            display.update(state, attempt)
        if attempt is not None and on_attempt is not None:
            on_attempt(attempt)

    try:
        state = anyio.run(
            functools.partial(
                run_attempts,
                config,
                run_dir,
                attempts,
                runner_for,
                concurrency=concurrency,
                max_requests=max_requests or config.timeouts.max_requests,
                on_change=update,
            )
        )
    finally:
        if display is not None:
            display.close()
    return [attempt.trace for attempt in state.attempts if attempt.trace is not None]
