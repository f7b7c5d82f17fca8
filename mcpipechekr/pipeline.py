"""One harness run: its folder, its manifest, and the server kept up across its phases.

`open_run` does everything a phase needs before it can start — validate the
task file, prepare the server's repository, create `runs/{run-id}/`, pin the
run's identity in manifest.json, start the server and pass its health check,
snapshot its tools — and `close_run` ends it, recording how it ended. A crash,
a halted server or Ctrl-C still closes the manifest as `failed` or
`interrupted`, so no run is left looking as if it were running.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcpipechekr import __version__
from mcpipechekr.artifacts import (
    Manifest,
    PhaseProviders,
    RunDir,
    ServerRef,
    ToolsSnapshot,
    create_run_dir,
    snapshot_tools,
    utc_now,
    write_model,
)
from mcpipechekr.artifacts.manifest import RunStatus
from mcpipechekr.config import PHASES, Config
from mcpipechekr.providers import ProviderSpec
from mcpipechekr.runners.engine import DEFAULT_CONCURRENCY, RunnerFor
from mcpipechekr.runners.execute import run_phase1
from mcpipechekr.runners.registry import DEFAULT_RUNNER
from mcpipechekr.server.lifecycle import HealthReport, ServerUnderTest
from mcpipechekr.server.workspace import prepare_repo, repo_state
from mcpipechekr.tasks import Task, load_tasks, select_tasks, task_file_hash


@dataclass
class HarnessRun:
    """Everything the phases of one run share."""

    config: Config
    tasks: list[Task]
    run_dir: RunDir
    manifest: Manifest
    server: ServerUnderTest
    tools: ToolsSnapshot


def server_ref(config: Config) -> ServerRef:
    """How the server was reached, with secrets scrubbed, for the manifest."""
    server = config.server
    if server.command:
        command = shlex.join([server.command, *server.args])
        return ServerRef(name=server.name, transport="stdio", command=config.redactor.redact(command))
    return ServerRef(name=server.name, transport="http", url=config.redactor.redact(server.url))


def new_manifest(
    config: Config,
    run_id: str,
    tasks: list[Task],
    *,
    identity: str | None = None,
    parameters: dict[str, Any] | None = None,
) -> Manifest:
    """A run's manifest as it starts: everything that can change its outcome, pinned."""
    state = repo_state(config.server)
    return Manifest(
        run_id=run_id,
        started_at=utc_now(),
        harness_version=__version__,
        mcp_server_sha=state.sha,
        mcp_server_dirty=state.dirty,
        task_file_hash=task_file_hash(config.paths.tasks),
        providers=PhaseProviders(**{phase: str(config.providers.for_phase(phase)) for phase in PHASES}),
        config_hash=config.config_hash,
        config=config.redacted_dump(),
        server=server_ref(config),
        task_ids=[task.task_id for task in tasks],
        identity=identity,
        parameters=parameters or {},
    )


@contextmanager
def harness_run(
    config: Config, task_ids: Sequence[str] = (), tags: Sequence[str] = ()
) -> Iterator[HarnessRun]:
    """Open a run, yield it to the phases, and always close it with the right status."""
    selected = select_tasks(load_tasks(config.paths.tasks), task_ids, tags)
    prepare_repo(config.server)
    run_dir = create_run_dir(config.paths.runs)
    manifest = new_manifest(config, run_dir.run_id, selected)
    write_model(run_dir.manifest, manifest)
    server = ServerUnderTest(config.server, run_dir.server_stderr_log)

    def finish(status: RunStatus, reason: str | None) -> None:
        try:
            server.stop()
        finally:
            write_model(run_dir.manifest, manifest.finished(status, reason))

    with recording_end(config, finish):
        health = server.start()
        tools = server_tools(config, server, health)
        write_model(run_dir.tools, tools)
        yield HarnessRun(config, selected, run_dir, manifest, server, tools)


@contextmanager
def recording_end(
    config: Config, finish: Callable[[RunStatus, str | None], None], step: str = ""
) -> Iterator[None]:
    """Run the body, then tell ``finish`` how it ended, whether it returned or raised.

    `completed`; `interrupted` on Ctrl-C; else `failed` with the error's first
    line, redacted. A ``step`` names what ran at the start of the reason.
    """
    prefix = f"{step}: " if step else ""
    status: RunStatus = "completed"
    reason: str | None = None
    try:
        yield
    except KeyboardInterrupt:
        status, reason = "interrupted", f"{prefix}interrupted by the user (Ctrl-C)"
        raise
    except BaseException as exc:
        status = "failed"
        text = str(getattr(exc, "message", exc)) or type(exc).__name__
        reason = config.redactor.redact(f"{prefix}{text.splitlines()[0]}")
        raise
    finally:
        finish(status, reason)


def server_tools(config: Config, server: ServerUnderTest, health: HealthReport) -> ToolsSnapshot:
    """The tools the started server offers, with its health check's protocol version and server info."""
    return snapshot_tools(
        config.server.name,
        server.list_tools(),
        protocol_version=health.protocol_version,
        server_info=health.server_info,
    )


def phase1_for_run(
    run: HarnessRun,
    providers: Sequence[ProviderSpec] = (),
    *,
    repeat: int = 1,
    concurrency: int = DEFAULT_CONCURRENCY,
    runner: str = DEFAULT_RUNNER,
    keep_builtin_tools: bool = False,
    max_requests: int | None = None,
    runner_for: RunnerFor | None = None,
    progress: bool = True,
) -> list[Path]:
    """Phase 1 inside an open harness run (`pipeline.harness_run`), as `mcpipechekr run` and doit do it.

    `providers` defaults to the config's `providers.phase1`. With several, the
    manifest's `providers.phase1` lists them all, comma-separated, in order.
    `keep_builtin_tools` is recorded in the manifest's `parameters`.
    """
    specs = list(providers) or [run.config.providers.phase1]
    names = ", ".join(str(spec) for spec in specs)
    changed = run.manifest.providers.phase1 != names
    run.manifest.providers.phase1 = names
    if keep_builtin_tools and run.manifest.parameters.get("keep_builtin_tools") is not True:
        run.manifest.parameters["keep_builtin_tools"] = True
        changed = True
    if changed:
        write_model(run.run_dir.manifest, run.manifest)
    return run_phase1(
        run.config,
        run.run_dir,
        run.tasks,
        specs,
        repeat=repeat,
        concurrency=concurrency,
        runner_for=runner_for,
        runner=runner,
        keep_builtin_tools=keep_builtin_tools,
        max_requests=max_requests,
        progress=progress,
    )
