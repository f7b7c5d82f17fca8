"""Runners kept for the life of a process, for front ends that run Phase 1 one attempt per call.

doit's trace targets each run one attempt (`steps.trace.trace_step` with one
attempt), one after another or in threads of one process (`doit -n N -P
thread`, which the loop uses), each call with an event loop of its own. A
runner that holds a process between attempts (opencode's serve mode: one
`opencode serve`) would start it for every target and stop it at the end, and
a user would wait for that start once per attempt. Kept here, it is started
by the first target and serves the others, whichever thread they run in; the
engine's close at the end of each call lets go only of what belongs to that
call's event loop (the runner's `arelease`).

`close_kept` stops the kept runners: the doit front ends call it when a doit
run ends (`graph.build`, `graph.run_doit`), and it runs at exit for a bare
`doit`. A runner is kept only when it says it gains from it
(`kept_across_calls`), and never in a process that multiprocessing started
(`doit -n N` with processes), whose exit skips `atexit`.
"""

from __future__ import annotations

import atexit
import multiprocessing
import threading
from typing import Any

import anyio

from mcpipechekr.config import Config
from mcpipechekr.providers import ProviderSpec
from mcpipechekr.runners.base import Runner, RunnerOutput, RunRequest
from mcpipechekr.runners.engine import RunnerFor
from mcpipechekr.runners.registry import runner_factory

_kept: dict[tuple[Any, ...], Runner] = {}
_lock = threading.Lock()


class _Shared:
    """A kept runner as one Phase 1 call sees it: closing it lets go of that call's event loop only."""

    def __init__(self, runner: Runner):
        self._runner = runner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._runner, name)

    async def run(self, request: RunRequest) -> RunnerOutput:
        return await self._runner.run(request)

    async def aclose(self) -> None:
        release = getattr(self._runner, "arelease", None)
        if release is not None:
            await release()


def kept_runner_for(config: Config, runner: str, **flags: Any) -> RunnerFor:
    """`runner_factory(config, runner, **flags)`, with the runners worth keeping kept for later calls."""
    factory = runner_factory(config, runner, **flags)
    if multiprocessing.parent_process() is not None:
        return factory

    def get(provider: ProviderSpec) -> Runner:
        key = (config.config_hash, runner, str(provider), tuple(sorted(flags.items())))
        with _lock:
            kept = _kept.get(key)
            if kept is None:
                made = factory(provider)
                if not getattr(made, "kept_across_calls", False):
                    return made
                kept = _kept[key] = made
        return _Shared(kept)  # type: ignore[return-value]

    return get


def close_kept() -> None:
    """Stop every kept runner (their servers); called where no event loop runs."""
    with _lock:
        runners = list(_kept.values())
        _kept.clear()
    for runner in runners:
        close = getattr(runner, "aclose", None)
        if close is not None:
            try:
                anyio.run(close)
            except Exception:  # the traces are written; a server that fails to stop changes none of them
                pass


atexit.register(close_kept)
