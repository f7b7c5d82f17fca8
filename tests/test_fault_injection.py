"""`doit loop` killed with SIGKILL at fixed points, then run again to its end: the project must be sound.

Each kill point waits for a file that marks a phase (the first trace, the bug
report, the first fix agent's log), kills the loop's whole process group at
once, and resumes as a user would (tests/kill_resume.py); the invariants are
those of tests/fault_invariants.py. The bundled example runs offline with its
demo models, on two of its tasks and for one loop iteration
(`loop.max_iterations: 1`) to keep each case short. bench/fault_soak.py does
the same at many seeded random points.

The checks themselves are shown to catch what they are for on a project with
one finished run and planted damage: half a trace, a leftover temp file, a run left `running`,
a `completed` run short of a trace, a trace rewritten after the kill.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import yaml
from fault_invariants import (
    artifacts_valid,
    attempts_paid_once,
    check_invariants,
    index_rebuilds,
    no_temp_files,
    run_states_true,
    trace_digests,
)
from kill_resume import KillPoint, drive_to_end, file_appeared
from project import copy_project, doit
from trace_builder import call, make_trace

from mcpipechekr.artifacts import Manifest, RunDir, create_run_dir, read_model, write_model, write_trace
from mcpipechekr.artifacts.atomic import temp_name_for
from mcpipechekr.artifacts.run_owner import take_run
from mcpipechekr.config import load_config
from mcpipechekr.findings.home import HOME_ENV
from mcpipechekr.runplan import new_manifest
from mcpipechekr.tasks import load_tasks

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("test_fault_injection")]

# Each case: where to kill, and the phases the kill may land in.
KILL_POINTS = [
    pytest.param(
        KillPoint("tracing", "loop", file_appeared("runs/*/traces/*.json")),
        {"trace"},
        id="tracing",
    ),
    pytest.param(
        KillPoint("evaluation", "loop", file_appeared("runs/*/bug_report.json")),
        {"evaluate", "review"},
        id="evaluation",
    ),
    pytest.param(
        KillPoint("fix", "loop", file_appeared("runs/*/fix/*.run-1.log")),
        {"fix"},
        id="fix",
    ),
]


TASKS = ["find-first-email-ron-chinn", "list-office-move-emails-2024"]
"""Two of the example's tasks, whose traces show the two bugs the demo fixer fixes: a short loop."""


def small_project(root: Path) -> Path:
    """The user's project (tests/project.py) cut short: two tasks, one loop iteration (run, review, fix)."""
    project = copy_project(root)
    config = project / "config.yaml"
    text = config.read_text()
    assert "\n  max_iterations: 3 " in text
    config.write_text(text.replace("\n  max_iterations: 3 ", "\n  max_iterations: 1 ", 1))
    tasks = yaml.safe_load((project / "tasks.yaml").read_text())
    tasks["tasks"] = [task for task in tasks["tasks"] if task["task_id"] in TASKS]
    assert [task["task_id"] for task in tasks["tasks"]] == TASKS
    (project / "tasks.yaml").write_text(yaml.safe_dump(tasks, sort_keys=False))
    return project


@pytest.fixture(scope="module")
def loop_env(emailindex_env: dict[str, str]) -> dict[str, str]:
    return {**emailindex_env, "COLUMNS": "160", "TERM": "dumb", "NO_COLOR": "1"}


@pytest.fixture(scope="module")
def baselined(tmp_path_factory: pytest.TempPathFactory, loop_env: dict[str, str]) -> Path:
    """The small project with its baseline made, shared read-only: each case loops in a copy of it."""
    project = small_project(tmp_path_factory.mktemp("baselined"))
    baseline = doit(project, loop_env, "baseline")
    assert baseline.returncode == 0, baseline.stdout + baseline.stderr
    return project


@pytest.mark.parametrize(("point", "phases"), KILL_POINTS)
def test_a_loop_killed_and_run_again_leaves_a_sound_project(
    tmp_path: Path,
    baselined: Path,
    loop_env: dict[str, str],
    point: KillPoint,
    phases: set[str],
) -> None:
    project = Path(shutil.copytree(baselined, tmp_path / "project", symlinks=True))
    session = drive_to_end(project, loop_env, point)

    assert session.killed_in in phases, session.transcript[-3000:]
    assert session.finished, f"{session.problem}\n{session.transcript[-3000:]}"
    problems = check_invariants(project, loop_env, session.at_kill)
    assert {name: found for name, found in problems.items() if found} == {}


# ---------------------------------------------------------------------------------------------------------
# The checks catch what they are for.


@pytest.fixture
def damaged(tmp_path: Path) -> Path:
    """A project with one `completed` run of two traces, as the checks find it; the test damages it."""
    project = small_project(tmp_path)
    config = load_config(project / "config.yaml")
    tasks = load_tasks(config.paths.tasks).tasks
    run = create_run_dir(config.paths.runs)
    manifest = new_manifest(config, run.run_id, tasks, identity="sha256:" + "0" * 64)
    write_model(run.manifest, manifest.finished("completed"))
    for task in tasks:
        write_trace(run, make_trace(task.task_id, [call("count_emails", {"keywords": "Ron"}, {"count": 3})]))
    return project


def the_run(project: Path) -> Path:
    (run,) = (project / "runs").glob("run-*")
    return run


def test_a_sound_project_passes_every_file_check(damaged: Path) -> None:
    assert artifacts_valid(damaged) == []
    assert no_temp_files(damaged) == []
    assert run_states_true(damaged) == []
    assert attempts_paid_once(damaged, trace_digests(damaged)) == []


def test_half_a_trace_is_a_broken_artifact(damaged: Path) -> None:
    trace = sorted((the_run(damaged) / "traces").glob("*.json"))[0]
    trace.write_bytes(trace.read_bytes()[: trace.stat().st_size // 2])
    (problem,) = artifacts_valid(damaged)
    assert problem.startswith(f"{trace.relative_to(damaged)}: not valid JSON (line ")


def test_a_leftover_temp_file_is_found(damaged: Path) -> None:
    bug_report = the_run(damaged) / "bug_report.json"
    leftover = bug_report.parent / temp_name_for(bug_report)
    leftover.write_bytes(b'{"version": ')
    assert no_temp_files(damaged) == [f"{leftover.relative_to(damaged)}: left by an interrupted write"]
    assert artifacts_valid(damaged) == []  # a temp file is not an artifact


def test_a_run_still_running_after_the_rerun_is_untrue(damaged: Path) -> None:
    run = the_run(damaged)
    manifest = read_model(run / "manifest.json", Manifest)
    running = Manifest.model_validate({**manifest.model_dump(), "status": "running", "finished_at": None})
    write_model(run / "manifest.json", running)
    owner = take_run(RunDir(run))  # a live owner: the run reads `running`, which nothing may be by now
    try:
        assert run_states_true(damaged) == [f"{manifest.run_id}: `running`, though nothing runs any more"]
    finally:
        owner.release()
    # Its owner gone, the check opens it as every command does: `interrupted`, and so written.
    assert run_states_true(damaged) == []
    assert read_model(run / "manifest.json", Manifest).status == "interrupted"


def test_a_completed_run_short_of_a_planned_trace_is_untrue(damaged: Path) -> None:
    run = the_run(damaged)
    assert read_model(run / "manifest.json", Manifest).status == "completed"
    trace = sorted((run / "traces").glob("*.json"))[-1]
    trace.unlink()
    assert run_states_true(damaged) == [f"{run.name}: `completed` without 1 planned trace(s): {trace.name}"]


def test_a_trace_rewritten_or_traced_again_is_paid_twice(damaged: Path) -> None:
    at_kill = trace_digests(damaged)
    run = the_run(damaged)
    first, *_ = sorted((run / "traces").glob("*.json"))
    first.write_bytes(first.read_bytes().replace(b'"task_id"', b'"task_id" ', 1))
    again = damaged / "runs" / "run-99991231-001"
    shutil.copytree(run, again)
    problems = attempts_paid_once(damaged, at_kill)
    assert problems[0] == f"{first.relative_to(damaged)}: complete when killed, traced again by the rerun"
    assert f"run-99991231-001/traces/{first.name}: traced again, though {run.name}" in problems[1]
    assert len(problems) == 1 + len(at_kill)


def test_a_damaged_journal_fails_the_index_rebuild(damaged: Path) -> None:
    env = {name: value for name, value in os.environ.items() if name != HOME_ENV}
    assert index_rebuilds(damaged, env) == []
    journal = damaged / ".mcpipechekr" / "journals" / "20000101T000000.000000Z-phase1-1-abcdef.jsonl"
    journal.parent.mkdir(parents=True, exist_ok=True)
    journal.write_bytes(b"{not json\n")
    (problem,) = index_rebuilds(damaged, env)
    assert problem.startswith("`mcpipechekr index --rebuild` exited 2: ")
    (damage,) = artifacts_valid(damaged)
    assert damage.startswith(f"{journal.relative_to(damaged)}: line 1 is not valid JSON (")
