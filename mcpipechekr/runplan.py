"""Run identity: which run folder an invocation works in, and the manifest it starts with.

Why: doit rebuilds what changed, but a run folder is a record of one set of
inputs. When the inputs that make runs comparable differ from the latest
run's — the server's source (commit, plus the content of uncommitted
changes), the set of tasks, the Phase 1 models, the repetitions — the
artifacts belong in a new folder; otherwise the latest run is reused and only
its stale targets are rebuilt (editing one task's prompt re-traces that task
in the same run). `--new-run` always starts a fresh folder; folders are never
overwritten. A shard of a run (`--shard K/N`, see `runshard`) has an identity
of its own, the run's with K/N, so a folder is reused only for the same shard.

`new_manifest` pins everything that can change a run's outcome (versions,
hashes, models, the redacted config) when its folder is created.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from mcpipechekr import __version__
from mcpipechekr._util.hashing import sha256_json
from mcpipechekr.artifacts import Manifest, PhaseProviders, RunDir, ServerRef, list_runs, utc_now
from mcpipechekr.artifacts.manifest import RunShard
from mcpipechekr.artifacts.rundir import MAX_RUNS_PER_DAY, existing_run_numbers, format_run_id
from mcpipechekr.artifacts.runstate import load_manifest
from mcpipechekr.config import PHASES, Config
from mcpipechekr.errors import UserError
from mcpipechekr.runshard import Shard, shard_record
from mcpipechekr.server.workspace import server_source_digest
from mcpipechekr.tasks import Task, task_file_hash


@dataclass(frozen=True)
class RunPlan:
    """The folder this invocation works in, and why."""

    run_dir: RunDir
    identity: str
    reused: bool
    parameters: dict[str, Any] = field(default_factory=dict)
    shard: RunShard | None = None
    runner: str | None = None
    """What runs the Phase 1 agent (`demo` for the demo model), as the manifest records it."""

    @property
    def run_id(self) -> str:
        return self.run_dir.run_id


def run_identity(
    config: Config, task_ids: list[str], phase1: list[str], repeat: int, *, source: str | None
) -> str:
    """The hash of the inputs that make a run distinct (see the module docstring).

    `source` is the server's `server_source_digest`, which a shard's record keeps as well.
    """
    return sha256_json(
        {
            "server": config.server.name,
            "source": source,
            "tasks": sorted(task_ids),
            "phase1": phase1,
            "repeat": repeat,
            "harness": __version__,
        }
    )


def read_manifest(run_dir: RunDir) -> Manifest | None:
    """A run's manifest, or None when it is missing or unreadable (such a run is never reused)."""
    try:
        return load_manifest(run_dir)
    except (OSError, UserError, ValueError):
        return None


def next_run_dir(runs_dir: Path, today: date | None = None) -> RunDir:
    """The id `create_run_dir` would give the next run, without creating it."""
    day = today or date.today()
    number = max(existing_run_numbers(runs_dir, day), default=0) + 1
    if number > MAX_RUNS_PER_DAY:
        raise UserError(f"{runs_dir}: all {MAX_RUNS_PER_DAY} run ids of {day:%Y-%m-%d} are taken")
    return RunDir(runs_dir / format_run_id(day, number))


def plan_run(
    config: Config,
    *,
    task_ids: list[str],
    phase1: list[str],
    repeat: int,
    new_run: bool = False,
    parameters: dict[str, Any] | None = None,
    shard: Shard | None = None,
    models: Sequence[str] = (),
) -> RunPlan:
    """Reuse the latest run when its identity matches and `new_run` is not asked; else plan the next id.

    With `shard`, the plan is that shard of the run: `models` (the Phase 1
    models, one string each) name its attempts, and the shard's record goes
    into the manifest.
    """
    source = server_source_digest(config)
    identity = run_identity(config, task_ids, phase1, repeat, source=source)
    record = None
    if shard is not None:
        record = shard_record(
            shard,
            run_identity=identity,
            server_source=source,
            task_ids=task_ids,
            providers=models,
            repeat=repeat,
        )
        identity = sha256_json({"run": identity, "shard": str(shard)})
    runs = list_runs(config.paths.runs)
    if runs and not new_run:
        manifest = read_manifest(runs[-1])
        if manifest is not None and manifest.identity == identity:
            return RunPlan(runs[-1], identity, reused=True, parameters=parameters or {}, shard=record)
    run_dir = next_run_dir(Path(config.paths.runs))
    return RunPlan(run_dir, identity, reused=False, parameters=parameters or {}, shard=record)


def claim_run_dir(plan: RunPlan) -> bool:
    """Create the planned folder; False when it already exists as this identity's run.

    A folder that exists with another identity (another invocation took the
    id meanwhile) is an error: runs are never overwritten.
    """
    plan.run_dir.runs_dir.mkdir(parents=True, exist_ok=True)
    try:
        os.mkdir(plan.run_dir.root)
        return True
    except FileExistsError:
        manifest = read_manifest(plan.run_dir)
        if manifest is None or manifest.identity != plan.identity:
            raise UserError(
                f"{plan.run_dir.root} was created by another invocation meanwhile; run the command again"
            ) from None
        return False


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
    tasks: Sequence[Task],
    *,
    identity: str | None = None,
    parameters: dict[str, Any] | None = None,
    phase1: str | None = None,
    shard: RunShard | None = None,
    runner: str | None = None,
    runner_version: str | None = None,
) -> Manifest:
    """A run's manifest as it starts: everything that can change its outcome, pinned.

    `phase1` names the Phase 1 models when a run compares several (comma-separated,
    in order); default: the config's `providers.phase1`. `shard` marks a shard of a run.
    """
    from mcpipechekr.server.workspace import repo_state  # deferred: `doit list` should not pay for GitPython

    state = repo_state(config.server)
    providers = {phase: str(config.providers.for_phase(phase)) for phase in PHASES}
    if phase1 is not None:
        providers["phase1"] = phase1
    return Manifest(
        run_id=run_id,
        started_at=utc_now(),
        harness_version=__version__,
        mcp_server_sha=state.sha,
        mcp_server_dirty=state.dirty,
        task_file_hash=task_file_hash(config.paths.tasks),
        providers=PhaseProviders(**providers),
        config_hash=config.config_hash,
        config=config.redacted_dump(),
        server=server_ref(config),
        task_ids=[task.task_id for task in tasks],
        identity=identity,
        parameters=parameters or {},
        shard=shard,
        runner=runner,
        runner_version=runner_version,
    )
