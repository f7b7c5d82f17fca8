"""The run folder a step works in, and a manifest that stays honest about how each step ended.

Both front ends plan the run folder the same way (`plan_run_folder`, the
rule of `runplan.plan_run`) and create it the same way (`open_planned_run`).
Each step then runs inside `run_stage`: the manifest says `running` while the
step works and `completed`, `failed` or `interrupted` after, so a crash, a
halted server or Ctrl-C never leaves a run that looks alive.
"""

from __future__ import annotations

import dataclasses
import shutil
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from mcpipechekr._util.commands import runnable
from mcpipechekr._util.console import console
from mcpipechekr._util.stops import note_kept
from mcpipechekr._util.yamlsrc import display_path
from mcpipechekr.artifacts import Manifest, RunDir, read_model, write_model
from mcpipechekr.artifacts.manifest import RunStatus
from mcpipechekr.artifacts.run_owner import OwnerLock, take_run
from mcpipechekr.artifacts.runstate import TraceCoverage, load_manifest, trace_coverage
from mcpipechekr.config import Config
from mcpipechekr.errors import UserError
from mcpipechekr.providers import ProviderSpec
from mcpipechekr.runners.registry import runner_name_for, runner_version
from mcpipechekr.runplan import RunPlan, claim_run_dir, new_manifest, plan_run
from mcpipechekr.runshard import Shard
from mcpipechekr.tasks import Task


def plan_run_folder(
    config: Config,
    tasks: Sequence[Task],
    *,
    providers: Sequence[ProviderSpec] = (),
    runner: str,
    keep_builtin_tools: bool,
    repeat: int,
    new_run: bool,
    parameters: dict[str, Any] | None = None,
    prepare: bool = True,
    shard: Shard | None = None,
) -> RunPlan:
    """The run folder for these Phase 1 inputs: the latest run when its identity matches, else a new one.

    `providers` defaults to the config's `providers.phase1`. `prepare` readies
    the server's repository first, since its state is part of the identity; a
    caller that changes nothing (`doit list`) leaves it as it is. With `shard`,
    the folder is that shard of the run (`runshard`).
    """
    if prepare:
        from mcpipechekr.server.workspace import prepare_repo  # deferred: `doit list` needs no GitPython

        prepare_repo(config.server)
    plan = plan_run(
        config,
        task_ids=[task.task_id for task in tasks],
        phase1=[_phase1_names(config, providers), runner, f"builtin={keep_builtin_tools}"],
        repeat=repeat,
        new_run=new_run,
        parameters=parameters,
        shard=shard,
        models=[str(spec) for spec in providers] if providers else [str(config.providers.phase1)],
    )
    names = sorted({runner_name_for(spec, runner) for spec in providers or [config.providers.phase1]})
    return dataclasses.replace(plan, runner=", ".join(names))


def _phase1_names(config: Config, providers: Sequence[ProviderSpec]) -> str:
    """The Phase 1 models as the manifest records them: comma-separated, in order."""
    return ", ".join(str(spec) for spec in providers) if providers else str(config.providers.phase1)


def _runner_version(runner: str | None) -> str | None:
    """Each runner's version (`opencode 1.18.33`), `; `-joined when a run used several."""
    if runner is None:
        return None
    found = [runner_version(name.strip()) for name in runner.split(",")]
    return "; ".join(v for v in found if v) if all(found) else None


def open_planned_run(
    config: Config, plan: RunPlan, tasks: Sequence[Task], *, providers: Sequence[ProviderSpec] = ()
) -> Manifest:
    """Create the planned run folder and its manifest, or return the manifest of the reused run.

    The manifest is made before the folder (making it reads the inputs again,
    which may fail), and a folder whose manifest cannot be written is removed:
    a run folder never exists without its manifest.
    """
    manifest = None
    if not plan.reused:
        manifest = new_manifest(
            config,
            plan.run_id,
            tasks,
            identity=plan.identity,
            parameters=plan.parameters,
            phase1=_phase1_names(config, providers),
            shard=plan.shard,
            runner=plan.runner,
            runner_version=_runner_version(plan.runner),
        )
    if manifest is not None and claim_run_dir(plan):
        created = manifest.finished("completed", "created; no step has run yet")
        try:
            write_model(plan.run_dir.manifest, created)
        except BaseException:
            shutil.rmtree(plan.run_dir.root, ignore_errors=True)
            raise
        note_kept(plan.run_dir.root)
        return created
    note_kept(plan.run_dir.root)
    return load_manifest(plan.run_dir)


@contextmanager
def run_stage(config: Config, run_dir: RunDir, step: str) -> Iterator[Manifest | None]:
    """Own the run and mark it `running` for one step, then record how the step ended.

    Yields the manifest as the step starts; None for a run folder without one
    (made by hand, or by a tool of its own): it has no status to keep. Steps
    of one run may overlap in this process (doit's trace targets run in
    threads): the first to start takes the run's owner lock and marks it
    running, the last to end writes the outcome — the worst of theirs — and
    lets go. An end without error is `completed` only while every planned
    attempt is traced, once tracing has begun; otherwise the run is
    `interrupted` with the count of what is missing.
    """
    note_kept(run_dir.root)
    if not run_dir.manifest.exists():
        yield None
        return
    running = _enter(run_dir)

    def finish(status: RunStatus, reason: str | None) -> None:
        _leave(run_dir, status, reason, step)

    with recording_end(config, finish, step):
        yield running


@dataclass
class _Work:
    """The steps of one run this process is working on, and the worst way one of them ended."""

    lock: OwnerLock
    manifest: Manifest
    steps: int = 1
    status: RunStatus = "completed"
    reason: str | None = None


_SEVERITY = {"completed": 0, "interrupted": 1, "failed": 2}
_working: dict[Path, _Work] = {}
_working_guard = threading.Lock()


def _key(run_dir: RunDir) -> Path:
    """One key per run folder, however its path was spelled (relative, absolute, through a link)."""
    return run_dir.root.resolve()


def _enter(run_dir: RunDir) -> Manifest:
    with _working_guard:
        work = _working.get(_key(run_dir))
        if work is not None:
            work.steps += 1
            return work.manifest
        lock = take_run(run_dir)
        try:
            manifest = load_manifest(run_dir)
            running = manifest.model_copy(
                update={"status": "running", "status_reason": None, "finished_at": None}
            )
            write_model(run_dir.manifest, running)
        except BaseException:
            lock.release()
            raise
        _working[_key(run_dir)] = _Work(lock, running)
        return running


def _leave(run_dir: RunDir, status: RunStatus, reason: str | None, step: str) -> None:
    with _working_guard:
        work = _working.get(_key(run_dir))
        if work is None:  # `interrupt_runs` ended it meanwhile
            return
        if _SEVERITY[status] > _SEVERITY[work.status]:
            work.status, work.reason = status, reason
        work.steps -= 1
        if work.steps:
            return
        del _working[_key(run_dir)]
        try:
            latest = read_model(run_dir.manifest, Manifest)  # a step may have updated it (accepted risks)
            status, reason = work.status, work.reason
            if status == "completed" and run_dir.traces.is_dir():
                coverage = trace_coverage(run_dir, latest)
                if not coverage.complete:
                    status, reason = (
                        "interrupted",
                        f"{step}: {coverage.describe()}" if step else coverage.describe(),
                    )
            write_model(run_dir.manifest, latest.finished(status, reason))
        finally:
            work.lock.release()


def interrupt_runs(reason: str) -> None:
    """Mark every run this process works on `interrupted` with `reason`, and let go of them.

    For Ctrl-C in a front end whose steps run in other threads (doit's `-P
    thread`): only the main thread sees the KeyboardInterrupt, so the steps'
    own ends never run before the process exits. A step that still ends later
    in its thread leaves the run as written here.
    """
    with _working_guard:
        for key, work in list(_working.items()):
            del _working[key]
            try:
                manifest = RunDir(key).manifest
                write_model(manifest, read_model(manifest, Manifest).finished("interrupted", reason))
            finally:
                work.lock.release()


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


ALLOW_INCOMPLETE_HELP = (
    "Go on with a run that lacks some of its planned traces (interrupted, or stopped by a failure); "
    "what it writes notes how many attempts it covers."
)
"""The `--allow-incomplete` flag of `evaluate`, `review` and `fix`, and of doit, in one place."""


def require_traced(run_dir: RunDir, step: str, *, allow_incomplete: bool = False) -> TraceCoverage | None:
    """Stop `step` on a run that lacks planned traces, unless `allow_incomplete`; None when it lacks none.

    What `evaluate`, `review` and `fix` meet first: a bug report of half a run
    would pass for the whole of it, and so would one of a shard. With `allow_incomplete` the coverage comes
    back, for the step to say how much it covers. A run folder without a
    manifest (made by hand) has no plan to compare with and passes.
    """
    if not run_dir.manifest.exists():
        return None
    manifest = load_manifest(run_dir)
    coverage = trace_coverage(run_dir, manifest, whole=True)
    if coverage.complete:
        return None
    if allow_incomplete:
        return coverage
    if manifest.shard is not None:
        raise UserError(
            f"{run_dir.run_id} is shard {manifest.shard.index}/{manifest.shard.count} of a run; "
            f"{coverage.counts()}. Merge it with the other shards first "
            f"({runnable('`mcpipechekr merge SHARD_FOLDER…`')}), or pass --allow-incomplete to {step} "
            "only this shard."
        )
    state = f"{manifest.status}: {manifest.status_reason}" if manifest.status_reason else manifest.status
    then = (
        "Wait for the process working on it to end"
        if manifest.status == "running"
        else f"Run {runnable('`doit loop`')} to trace the missing attempts"
    )
    raise UserError(
        f"{run_dir.run_id} is incomplete ({state}); {coverage.describe(limit=10)}. "
        f"{then}, or pass --allow-incomplete to {step} only what is there."
    )


def coverage_note(coverage: TraceCoverage) -> str:
    """How much of the run a report or decision covers, for its notes."""
    covered = f"{len(coverage.traced)} of {len(coverage.planned)}"
    return f"covers {covered} planned attempts (--allow-incomplete); {coverage.not_traced()}"


def announce_project(config: Config, out: Console = console) -> None:
    """Name the project a long step works on: with `doit -f elsewhere/dodo.py` it is that folder's."""
    source = display_path(config.source) if config.source else "no config file"
    out.print(f"project {Path.cwd()}: {source}, server {config.server.name}", markup=False)
