"""Run states stay true when the process working on a run dies, and the loop resumes what it left.

Real processes throughout: the owner of a run is a child Python process that
takes the run's lock and is then killed; the end to end test starts `mcpipechekr
loop` on a project of tests/servers/tiny_server.py, kills it (SIGKILL, the
whole process group) while one attempt is held open by the server's `--gate`
file and the other is traced, and then evaluates, reviews, fixes and resumes
the run as a user would.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import git
import pytest
from click.testing import CliRunner
from project import mcpipechekr
from trace_builder import make_trace, say

from mcpipechekr.artifacts import (
    BugReport,
    Manifest,
    RunDir,
    ServerRef,
    read_model,
    read_trace,
    utc_now,
    write_model,
)
from mcpipechekr.artifacts.run_owner import owner_path
from mcpipechekr.artifacts.runstate import load_manifest
from mcpipechekr.artifacts.trace import write_trace
from mcpipechekr.cli import main
from mcpipechekr.config import load_config
from mcpipechekr.findings.home import Home
from mcpipechekr.runplan import RunPlan
from mcpipechekr.steps.snapshot import snapshot_step
from mcpipechekr.steps.stage import plan_run_folder, run_stage
from mcpipechekr.tasks import load_tasks

TINY = Path(__file__).parent / "servers" / "tiny_server.py"
HASH = "sha256:" + "0" * 64
GONE = re.compile(
    r"^the process that ran it \(pid (\d+)\) is gone; last seen \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$"
)

OWNER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from mcpipechekr.artifacts import RunDir
    from mcpipechekr.artifacts.run_owner import take_run

    lock = take_run(RunDir(Path(sys.argv[1])))  # held while the process lives
    Path(sys.argv[2]).touch()
    time.sleep(600)
    """
)


def wait_for(found: object, what: str, timeout: float = 120) -> None:
    """Poll `found()` until it is true: the kill points are files appearing, never a sleep."""
    deadline = time.monotonic() + timeout
    while not found():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def running_run(root: Path) -> RunDir:
    run = RunDir(root / "runs" / "run-20260101-001")
    run.root.mkdir(parents=True)
    manifest = Manifest(
        run_id=run.run_id,
        started_at=utc_now(),
        harness_version="test",
        task_file_hash=HASH,
        config_hash=HASH,
        server=ServerRef(name="tiny", transport="stdio", command="python tiny_server.py"),
    )
    write_model(run.manifest, manifest)
    return run


def start_owner(run: RunDir, tmp_path: Path) -> subprocess.Popen[bytes]:
    ready = tmp_path / "owner-ready"
    child = subprocess.Popen([sys.executable, "-c", OWNER, str(run.root), str(ready)])
    wait_for(ready.exists, "the owner to take the run")
    return child


def test_a_running_run_stays_running_while_its_owner_lives_and_is_interrupted_once_it_is_killed(
    tmp_path: Path,
) -> None:
    run = running_run(tmp_path)
    child = start_owner(run, tmp_path)
    try:
        assert load_manifest(run).status == "running"
        assert read_model(run.manifest, Manifest).status == "running"
    finally:
        child.kill()
        child.wait()
    manifest = load_manifest(run)
    assert manifest.status == "interrupted" and manifest.finished_at is not None
    match = GONE.match(manifest.status_reason or "")
    assert match and int(match.group(1)) == child.pid, manifest.status_reason
    assert read_model(run.manifest, Manifest) == manifest  # written back, not only shown


def test_a_held_lock_whose_pid_was_reused_counts_as_gone(tmp_path: Path) -> None:
    run = running_run(tmp_path)
    child = start_owner(run, tmp_path)
    try:
        record = owner_path(run).read_text()
        assert f'"pid":{child.pid}' in record
        # The same pid, started at another time: another process that got the dead owner's pid.
        owner_path(run).write_text(re.sub(r'"start":"\d+"', '"start":"1"', record))
        manifest = load_manifest(run)
    finally:
        child.kill()
        child.wait()
    assert manifest.status == "interrupted"
    assert f"(pid {child.pid}) is gone" in (manifest.status_reason or "")


def test_a_running_manifest_nobody_holds_is_interrupted(tmp_path: Path) -> None:
    run = running_run(tmp_path)  # no lock file at all: a run of a process that never took one
    manifest = load_manifest(run)
    assert manifest.status == "interrupted"
    assert manifest.status_reason is not None and manifest.status_reason.startswith(
        "the process that ran it is gone; last seen "
    )


def tiny_config(root: Path, server: Path = TINY, extra: str = "") -> Path:
    """Two tasks on the tiny server, every phase on the demo model; `sleep` waits while root/gate exists."""
    (root / "tasks.yaml").write_text(
        "tasks:\n"
        "  - task_id: echo-hello\n"
        '    prompt: Echo the text "hello" back.\n'
        "    task_type: deterministic\n"
        "  - task_id: sleep-briefly\n"
        "    prompt: Sleep for 0.1 seconds, then say so.\n"
        "    task_type: deterministic\n"
    )
    config = root / "config.yaml"
    config.write_text(
        "server:\n"
        "  name: tiny\n"
        f"  command: {sys.executable}\n"
        f"  args: [{server}, --gate, {root / 'gate'}]\n" + extra + "providers: {phase0: demo, phase05: demo, "
        "phase1: demo, phase2: demo, phase3: demo}\nfix: {agent: demo}\n"
    )
    return config


def test_a_step_never_marks_a_run_completed_while_planned_traces_are_missing(tmp_path: Path) -> None:
    config = load_config(tiny_config(tmp_path))
    tasks = load_tasks(config.paths.tasks).tasks
    plan: RunPlan = plan_run_folder(
        config, tasks, runner="native", keep_builtin_tools=False, repeat=2, new_run=True,
        parameters={"repeat": 2},
    )  # fmt: skip
    snapshot_step(config, plan, tasks)
    assert load_manifest(plan.run_dir).status == "completed"  # nothing traced yet, nothing begun
    plan.run_dir.traces.mkdir()
    with run_stage(config, plan.run_dir, "evaluate"):
        pass
    manifest = load_manifest(plan.run_dir)
    assert manifest.status == "interrupted"
    assert manifest.status_reason == (
        "evaluate: 0 of 4 planned attempts traced; not traced: echo-hello__demo__r001, "
        "echo-hello__demo__r002, sleep-briefly__demo__r001, sleep-briefly__demo__r002"
    )
    with run_stage(config, plan.run_dir, "trace"):
        for task in tasks:
            write_trace(plan.run_dir, make_trace(task.task_id, [say("done")], repetition=1))
        cut_short = make_trace("echo-hello", [say("so far")], repetition=2, status="incomplete")
        reason = "interrupted by the user (Ctrl-C)"  # the engine cut it short: to be traced again
        write_trace(plan.run_dir, cut_short.model_copy(update={"status_reason": reason}))
        spent = make_trace("sleep-briefly", [say("more")], repetition=2, status="incomplete")
        reason = "the agent reached the limit of 50 model requests"  # the attempt's own end: traced
        write_trace(plan.run_dir, spent.model_copy(update={"status_reason": reason}))
    manifest = load_manifest(plan.run_dir)
    assert (manifest.status, manifest.status_reason) == (
        "interrupted",
        "trace: 3 of 4 planned attempts traced; not traced: echo-hello__demo__r002",
    )
    with run_stage(config, plan.run_dir, "trace"):
        write_trace(plan.run_dir, make_trace("echo-hello", [say("done")], repetition=2))
    manifest = load_manifest(plan.run_dir)
    assert (manifest.status, manifest.status_reason) == ("completed", None)


def test_evaluate_review_and_fix_refuse_a_run_that_lacks_traces_unless_allowed(
    tmp_path: Path, home: Home
) -> None:
    config_path = tiny_config(tmp_path)
    config = load_config(config_path)
    tasks = load_tasks(config.paths.tasks).tasks
    plan = plan_run_folder(config, tasks, runner="native", keep_builtin_tools=False, repeat=1, new_run=True)
    snapshot_step(config, plan, tasks)
    with run_stage(config, plan.run_dir, "trace"):  # the tracing stopped after the first attempt
        write_trace(plan.run_dir, make_trace("echo-hello", [say("hello")]))
    cli = CliRunner()
    for command in ("evaluate", "review", "fix"):
        refused = cli.invoke(
            main, [command, plan.run_id, "--config", str(config_path)], catch_exceptions=False
        )
        said = " ".join(refused.output.split())
        assert refused.exit_code == 2, said
        assert said.startswith(
            f"Error: {plan.run_id} is incomplete (interrupted: trace: 1 of 2 planned attempts traced; "
            "not traced: sleep-briefly__demo__r001); 1 of 2 planned attempts traced; not traced: "
            "sleep-briefly__demo__r001. Run "
        ), said
        assert f"or pass --allow-incomplete to {command} only what is there." in said
    assert not plan.run_dir.bug_report.exists()

    args = ["evaluate", plan.run_id, "--config", str(config_path), "--allow-incomplete"]
    allowed = cli.invoke(main, args, catch_exceptions=False)
    assert allowed.exit_code == 0, allowed.output
    note = "covers 1 of 2 planned attempts (--allow-incomplete); not traced: sleep-briefly__demo__r001"
    assert f"note: {note}" in allowed.output
    assert read_model(plan.run_dir.bug_report, BugReport).notes[0] == note
    manifest = load_manifest(plan.run_dir)
    assert (manifest.status, manifest.status_reason) == (
        "interrupted",
        "evaluate: 1 of 2 planned attempts traced; not traced: sleep-briefly__demo__r001",
    )
    args = ["review", plan.run_id, "--config", str(config_path), "--exit", "--allow-incomplete"]
    reviewed = cli.invoke(main, args, catch_exceptions=False)
    assert reviewed.exit_code == 0, reviewed.output
    assert f"note: the report {note}" in reviewed.output


def loop_project(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """The tiny server in a git repository of its own, the two tasks, and their baseline."""
    project = tmp_path / "project"
    server = project / "server"
    server.mkdir(parents=True)
    shutil.copy(TINY, server / "server.py")
    repo = git.Repo.init(server)
    repo.index.add(["server.py"])
    repo.index.commit("tiny server")
    tiny_config(project, Path("server.py"), "  cwd: server\n  repo: server\n")
    env = {**os.environ, "MCPIPECHEKR_HOME": str(tmp_path / "home")}
    baseline = mcpipechekr(project, env, "doit", "baseline")
    assert baseline.returncode == 0, baseline.stdout + baseline.stderr
    return project, env


def stop_loop_half_way(project: Path, env: dict[str, str], signal_number: int) -> int:
    """Start `mcpipechekr loop`, send its process group `signal_number` once one attempt is traced and
    the other waits in `sleep`, and return the loop's pid once it has ended."""
    gate = project / "gate"
    gate.touch()  # the sleep-briefly attempt's call waits for this file to go
    with open(project.parent / "loop.log", "wb") as out:
        loop = subprocess.Popen(
            [sys.executable, "-m", "mcpipechekr", "loop", "--concurrency", "2"],
            cwd=project, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    runs = project / "runs"

    def one_traced_one_held() -> bool:
        traced = list(runs.glob("run-*/traces/echo-hello__demo__r001.json"))
        held = list(runs.glob("run-*/journals/sleep-briefly__demo__r001.jsonl"))
        return bool(traced) and bool(held) and b'"sleep"' in held[0].read_bytes()

    try:
        wait_for(one_traced_one_held, "one attempt traced while the other waits in `sleep`")
        os.killpg(loop.pid, signal_number)  # the loop and the server it started
        loop.wait(timeout=120)  # only a failure waits it out
    finally:
        if loop.poll() is None:
            os.killpg(loop.pid, signal.SIGKILL)
            loop.wait()
        gate.unlink()
    return loop.pid


@pytest.mark.slow
def test_ctrl_c_of_the_loop_marks_its_run_interrupted_though_its_traces_ran_in_threads(
    tmp_path: Path,
) -> None:
    project, env = loop_project(tmp_path)
    stop_loop_half_way(project, env, signal.SIGINT)
    (run_root,) = (project / "runs").glob("run-*")
    manifest = read_model(RunDir(run_root).manifest, Manifest)  # the file itself, as the loop left it
    assert (manifest.status, manifest.status_reason) == ("interrupted", "interrupted by the user (Ctrl-C)")


@pytest.mark.slow
def test_a_killed_loop_is_interrupted_refused_then_resumed_without_tracing_twice(tmp_path: Path) -> None:
    project, env = loop_project(tmp_path)
    pid = stop_loop_half_way(project, env, signal.SIGKILL)
    runs = project / "runs"
    (run_root,) = runs.glob("run-*")
    run = RunDir(run_root)
    echo = run.traces / "echo-hello__demo__r001.json"
    first_trace, first_mtime = read_trace(echo), echo.stat().st_mtime_ns
    assert not (run.traces / "sleep-briefly__demo__r001.json").exists()

    manifest = load_manifest(run)
    assert manifest.status == "interrupted"
    match = GONE.match(manifest.status_reason or "")
    assert match and int(match.group(1)) == pid, manifest.status_reason

    for command in ("evaluate", "review", "fix"):
        refused = mcpipechekr(project, env, command, run.run_id)
        said = " ".join((refused.stdout + refused.stderr).split())
        assert refused.returncode == 2, said
        assert f"{run.run_id} is incomplete (interrupted: the process that ran it (pid {pid}) is gone" in said
        assert "1 of 2 planned attempts traced; not traced: sleep-briefly__demo__r001" in said
        assert "--allow-incomplete" in said
    assert not run.bug_report.exists()

    allowed = mcpipechekr(project, env, "evaluate", run.run_id, "--allow-incomplete")
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    note = "covers 1 of 2 planned attempts (--allow-incomplete); not traced: sleep-briefly__demo__r001"
    assert f"note: {note}" in allowed.stdout
    assert read_model(run.bug_report, BugReport).notes[0] == note
    manifest = load_manifest(run)
    assert (manifest.status, manifest.status_reason) == (
        "interrupted",
        "evaluate: 1 of 2 planned attempts traced; not traced: sleep-briefly__demo__r001",
    )

    again = mcpipechekr(project, env, "loop", "--concurrency", "1")
    output = again.stdout + again.stderr
    assert f"resuming {run.run_id}: 1 of 2 attempts already traced" in output
    assert "trace echo-hello · demo · r1: already traced" in output
    assert f"loop finished: {run.run_id} has no server-side bug left to fix" in output  # evaluated, done
    assert read_trace(echo) == first_trace  # not traced again: the model was not paid twice
    assert echo.stat().st_mtime_ns == first_mtime
    assert read_trace(run.traces / "sleep-briefly__demo__r001.json").status == "completed"
    assert [path.name for path in sorted(runs.glob("run-*"))] == [run.run_id]
    manifest = load_manifest(run)
    assert (manifest.status, manifest.status_reason) == ("completed", None)
    assert read_model(run.bug_report, BugReport).notes == []


@pytest.mark.slow
def test_a_run_killed_after_its_last_trace_keeps_every_trace_when_traced_again(tmp_path: Path) -> None:
    """Killed outright after its last trace was written and before doit recorded the targets: tracing the
    run again keeps every trace, so the model is not paid twice for a run that lacks none."""
    project, env = loop_project(tmp_path)
    first = mcpipechekr(project, env, "doit", "trace")
    assert first.returncode == 0, first.stdout + first.stderr
    (run_root,) = (project / "runs").glob("run-*")
    run = RunDir(run_root)
    traced = {path.name: path.read_bytes() for path in sorted(run.traces.glob("*.json"))}
    assert len(traced) == 2
    # what a SIGKILL at that moment leaves: no record of doit's, a run that never completed
    (project / ".mcpipechekr" / "doit.sqlite").unlink()
    manifest = read_model(run.manifest, Manifest)
    write_model(run.manifest, manifest.finished("interrupted", "killed", at=manifest.started_at))
    again = mcpipechekr(project, env, "doit", "trace")
    output = again.stdout + again.stderr
    assert again.returncode == 0, output
    assert output.count(": already traced →") == 2, output
    assert {path.name: path.read_bytes() for path in sorted(run.traces.glob("*.json"))} == traced
