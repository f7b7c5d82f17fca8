"""The run folder a step works in, and a manifest that stays honest about how each step ended.

Both front ends plan the run folder the same way (`plan_run_folder`, the
rule of `runplan.plan_run`) and create it the same way (`open_planned_run`).
Each step then runs inside `run_stage`: the manifest says `running` while the
step works and `completed`, `failed` or `interrupted` after, so a crash, a
halted server or Ctrl-C never leaves a run that looks alive.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rich.console import Console

from mcpipechekr._util.console import console
from mcpipechekr._util.stops import note_kept
from mcpipechekr._util.yamlsrc import display_path
from mcpipechekr.artifacts import Manifest, RunDir, read_model, write_model
from mcpipechekr.artifacts.manifest import RunStatus
from mcpipechekr.config import Config
from mcpipechekr.providers import ProviderSpec
from mcpipechekr.runplan import RunPlan, claim_run_dir, new_manifest, plan_run
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
) -> RunPlan:
    """The run folder for these Phase 1 inputs: the latest run when its identity matches, else a new one.

    `providers` defaults to the config's `providers.phase1`. `prepare` readies
    the server's repository first, since its state is part of the identity; a
    caller that changes nothing (`doit list`) leaves it as it is.
    """
    if prepare:
        from mcpipechekr.server.workspace import prepare_repo  # deferred: `doit list` needs no GitPython

        prepare_repo(config.server)
    return plan_run(
        config,
        task_ids=[task.task_id for task in tasks],
        phase1=[_phase1_names(config, providers), runner, f"builtin={keep_builtin_tools}"],
        repeat=repeat,
        new_run=new_run,
        parameters=parameters,
    )


def _phase1_names(config: Config, providers: Sequence[ProviderSpec]) -> str:
    """The Phase 1 models as the manifest records them: comma-separated, in order."""
    return ", ".join(str(spec) for spec in providers) if providers else str(config.providers.phase1)


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
    return read_model(plan.run_dir.manifest, Manifest)


@contextmanager
def run_stage(config: Config, run_dir: RunDir, step: str) -> Iterator[Manifest | None]:
    """Mark the run `running` for one step, then record how the step ended.

    Yields the manifest as the step starts; None for a run folder without one
    (made by hand, or by a tool of its own): it has no status to keep.
    """
    note_kept(run_dir.root)
    if not run_dir.manifest.exists():
        yield None
        return
    manifest = read_model(run_dir.manifest, Manifest)
    running = manifest.model_copy(update={"status": "running", "status_reason": None, "finished_at": None})
    write_model(run_dir.manifest, running)

    def finish(status: RunStatus, reason: str | None) -> None:
        latest = read_model(run_dir.manifest, Manifest)  # a step may have updated it (accepted risks)
        write_model(run_dir.manifest, latest.finished(status, reason))

    with recording_end(config, finish, step):
        yield running


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


def announce_project(config: Config, out: Console = console) -> None:
    """Name the project a long step works on: with `doit -f elsewhere/dodo.py` it is that folder's."""
    source = display_path(config.source) if config.source else "no config file"
    out.print(f"project {Path.cwd()}: {source}, server {config.server.name}", markup=False)
