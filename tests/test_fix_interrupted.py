"""An interrupted fix leaves no mess: real `mcpipechekr fix` processes stopped while a scripted agent edits.

The server under test is tests/servers/tiny_server.py committed in a git
repository of its own; the fix agent is a small script (`AGENT`) that edits a
file, creates one, starts a grandchild that keeps running, writes a marker
file naming its process group, and then either promises completion or (while
the `hang` switch file exists) sleeps until it is stopped. Every kill point
waits for that marker, never for a fixed time.

- SIGINT (Ctrl-C) or SIGTERM to `mcpipechekr fix`: exit 130 and one line; the agent's whole group
  gone; the work tree at the last commit; the edits in
  fix/interrupted-<bug>.patch; the next `fix` goes on with that bug only.
- SIGKILL of `mcpipechekr fix`: the agent runs on, orphaned, and the tree
  stays dirty; the next `fix` ends the group, saves the edits, restores the
  tree and fixes the remaining bug without redoing the committed one.
- A timeout ends the whole group, the grandchild included.
- A second Ctrl-C while an agent that ignores SIGTERM is being stopped
  changes nothing of the above.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from datetime import UTC, datetime
from pathlib import Path

import git
import pytest
import yaml

from mcpipechekr.artifacts import Bug, BugReport, RunDir, create_run_dir, write_model
from mcpipechekr.artifacts.fix_record import FixRecord, read_fix_record
from mcpipechekr.config import Config, load_config
from mcpipechekr.findings.home import HOME_ENV
from mcpipechekr.fix import run_fix_loop
from mcpipechekr.fix.agent_group import end_leftover, record_group
from mcpipechekr.review.decision import record_decision

pytestmark = pytest.mark.slow

SERVERS = Path(__file__).parent / "servers"
FIRST, SECOND = "BUG-echo-drops-newlines", "GAP-no-bulk-echo"

AGENT = textwrap.dedent(
    """
    import os, signal, subprocess, sys, time
    from pathlib import Path

    bug, markers = sys.argv[1], Path(sys.argv[2])
    if (markers / "stubborn").exists():  # ignores SIGTERM, saying so: only SIGKILL ends it
        signal.signal(signal.SIGTERM, lambda *_: (markers / f"{bug}.term").touch())
    with open("notes.md", "a") as notes:
        notes.write(f"working on {bug}\\n")
    Path(f"new-{bug}.txt").write_text(f"made for {bug}\\n")
    hang = (markers / "hang").exists() and bug == sys.argv[3]
    if hang:
        grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        ready = markers / f"{bug}.ready"
        ready.with_suffix(".tmp").write_text(f"{os.getpgrp()} {grandchild.pid}")
        ready.with_suffix(".tmp").rename(ready)
        time.sleep(600)
    with open(markers / f"{bug}.runs", "a") as runs:
        runs.write("run\\n")
    print("done <promise>COMPLETE</promise>")
    """
)


def bug(bug_id: str, severity: str, gap: int) -> Bug:
    return Bug(
        id=bug_id,
        type="bug" if bug_id.startswith("BUG") else "feature_gap",
        severity=severity,
        source="analyzer",
        tool="echo",
        trigger="calling `echo` with text over several lines",
        observed="the lines came back joined",
        expected="the text unchanged",
        token_cost_observed=gap + 100,
        token_cost_optimal=100,
        token_cost_of_gap=gap,
    )


def make_project(root: Path, hang_on: str, timeout_s: float = 120) -> tuple[Config, git.Repo, RunDir, Path]:
    """tiny_server in a git repository, a shell fix agent running AGENT, an approved two-bug report."""
    server = root / "server"
    server.mkdir(parents=True)
    shutil.copy(SERVERS / "tiny_server.py", server / "server.py")
    (server / "notes.md").write_text("# notes\n")
    repo = git.Repo.init(server)
    repo.index.add(["server.py", "notes.md"])
    author = git.Actor("author", "author@example.com")
    repo.index.commit("tiny server", author=author, committer=author)
    markers = root / "markers"
    markers.mkdir()
    (markers / "hang").touch()
    script = root / "agent.py"
    script.write_text(AGENT)
    config = {
        "server": {
            "name": "tiny",
            "command": sys.executable,
            "args": ["server.py"],
            "cwd": "server",
            "repo": "server",
            "health": {"timeout_s": 30},
        },
        "paths": {"tasks": "tasks.yaml", "runs": "runs", "home": "home"},
        "fix": {
            "agent": "shell",
            "command": f"exec {{python}} {script} {{bug_id}} {markers} {hang_on}",
            "max_iterations": 1,
            "timeout_s": timeout_s,
            # unconfined: the markers lie beside the project and name host process groups; the same
            # stops inside the sandbox are tests/test_fix_sandbox.py's
            "sandbox": "off",
        },
    }
    (root / "config.yaml").write_text(yaml.safe_dump(config))
    loaded = load_config(root / "config.yaml", environ={})
    run = create_run_dir(loaded.paths.runs)
    report = BugReport(
        run_id=run.run_id,
        phase1_provider="demo",
        evaluated_at=datetime(2026, 12, 2, 10, 0, tzinfo=UTC),
        bugs=[bug(FIRST, "high", 900), bug(SECOND, "medium", 500)],
    )
    write_model(run.bug_report, report)
    record_decision(run, "approve")
    return loaded, repo, run, markers


def start_fix(root: Path, run: RunDir) -> subprocess.Popen[str]:
    env = {**os.environ, HOME_ENV: str(root / "home")}
    return subprocess.Popen(
        [sys.executable, "-m", "mcpipechekr", "fix", run.run_id],
        cwd=root,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def fix_again(root: Path, run: RunDir) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, HOME_ENV: str(root / "home")}
    return subprocess.run(
        [sys.executable, "-m", "mcpipechekr", "fix", run.run_id],
        cwd=root,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=180,
    )


def wait_for(marker: Path, process: subprocess.Popen[str] | None = None, timeout: float = 120) -> str:
    """The marker's text once the agent wrote it; fails at once if `process` ended first."""
    deadline = time.monotonic() + timeout
    while not marker.exists():
        if process is not None and process.poll() is not None:
            pytest.fail(
                f"fix ended before the agent was ready:\n{process.stdout.read() if process.stdout else ''}"
            )
        assert time.monotonic() < deadline, f"no {marker.name} within {timeout}s"
        time.sleep(0.05)
    return marker.read_text()


def running_in_group(pgid: int) -> list[int]:
    """Processes of group `pgid` that still run (zombies waiting for a reaper do not)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
            found.append(int(entry.name))
    return found


def running(pid: int) -> bool:
    """Whether `pid` runs (a zombie, dead and waiting for a parent to reap it, does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] not in "ZX"


def assert_gone(pgid: int, grandchild: int) -> None:
    assert running_in_group(pgid) == [], f"process group {pgid} still runs"
    assert not running(grandchild), "the agent's grandchild still runs"


def messages(repo: git.Repo) -> list[str]:
    return [commit.message.strip() for commit in repo.iter_commits()]


def statuses(record: FixRecord) -> list[tuple[str, str]]:
    return [(entry.bug_id, entry.status) for entry in record.bugs]


@pytest.fixture(autouse=True)
def _linux_only() -> None:
    if not Path("/proc/self/stat").exists():
        pytest.skip("reads process groups from /proc")


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_ctrl_c_ends_the_agents_group_keeps_its_edits_as_a_patch_and_fix_goes_on(
    tmp_path: Path, stop: signal.Signals
) -> None:
    config, repo, run, markers = make_project(tmp_path, hang_on=SECOND)
    fixing = start_fix(tmp_path, run)
    try:
        pgid, grandchild = map(int, wait_for(markers / f"{SECOND}.ready", fixing).split())
        assert running_in_group(pgid)  # the agent and its grandchild run, mid-edit
        fixing.send_signal(stop)
        output, _ = fixing.communicate(timeout=120)
    finally:
        fixing.kill()

    assert fixing.returncode == 130, output
    patch = run.root / "fix" / f"interrupted-{SECOND}.patch"
    (line,) = [line for line in output.splitlines() if line.startswith("interrupted:")]
    kept = f"edits for {SECOND} saved to {patch.relative_to(tmp_path)}"
    assert line.startswith(f"interrupted: 1 bug fixed and committed, {kept}; `")
    assert line.endswith(f"mcpipechekr fix {run.run_id}` goes on with the rest")
    assert "Aborted" not in output
    assert_gone(pgid, grandchild)
    assert messages(repo) == [f"fix: {FIRST}", "tiny server"]
    assert not repo.is_dirty(untracked_files=True)
    text = patch.read_text()
    assert f"+working on {SECOND}" in text and f"new-{SECOND}.txt" in text
    git.Repo(repo.working_dir).git.apply("--check", str(patch))  # it applies on the restored tree
    record = read_fix_record(run.fix_record)
    assert statuses(record) == [(FIRST, "committed"), (SECOND, "interrupted")]
    assert record.bugs[1].patch == f"fix/interrupted-{SECOND}.patch" and record.in_progress is None
    assert record.finished_at is None

    (markers / "hang").unlink()
    again = fix_again(tmp_path, run)

    assert again.returncode == 0, again.stdout + again.stderr
    record = read_fix_record(run.fix_record)
    assert statuses(record) == [(FIRST, "committed"), (SECOND, "committed")]
    assert record.bugs[1].earlier_patches == [f"fix/interrupted-{SECOND}.patch"]
    assert messages(repo) == [f"fix: {SECOND}", f"fix: {FIRST}", "tiny server"]
    assert (markers / f"{FIRST}.runs").read_text() == "run\n"  # the committed bug was not redone
    assert not repo.is_dirty(untracked_files=True)


def test_after_sigkill_the_next_fix_ends_the_orphaned_agent_restores_the_tree_and_goes_on(
    tmp_path: Path,
) -> None:
    config, repo, run, markers = make_project(tmp_path, hang_on=SECOND)
    fixing = start_fix(tmp_path, run)
    try:
        pgid, grandchild = map(int, wait_for(markers / f"{SECOND}.ready", fixing).split())
        fixing.kill()
        fixing.communicate(timeout=120)
        left = read_fix_record(run.fix_record)
        assert left.in_progress is not None and left.in_progress.bug_id == SECOND
        assert left.in_progress.agent is not None and left.in_progress.agent.pgid == pgid
        assert running_in_group(pgid)  # orphaned, and still able to edit
        assert repo.is_dirty(untracked_files=True)

        (markers / "hang").unlink()
        again = fix_again(tmp_path, run)
    finally:
        for pid in running_in_group(pgid) if "pgid" in locals() else []:
            os.kill(pid, signal.SIGKILL)

    assert again.returncode == 0, again.stdout + again.stderr
    assert (
        f"{SECOND}: the fix loop was killed while working on it; its agent (process group {pgid})"
        in again.stdout
    )
    assert_gone(pgid, grandchild)
    patch = run.root / "fix" / f"interrupted-{SECOND}.patch"
    assert f"+working on {SECOND}" in patch.read_text() and f"new-{SECOND}.txt" in patch.read_text()
    record = read_fix_record(run.fix_record)
    assert statuses(record) == [(FIRST, "committed"), (SECOND, "committed")]
    assert record.bugs[1].earlier_patches == [f"fix/interrupted-{SECOND}.patch"]
    assert record.in_progress is None and record.finished_at is not None
    assert messages(repo) == [f"fix: {SECOND}", f"fix: {FIRST}", "tiny server"]
    assert (markers / f"{FIRST}.runs").read_text() == "run\n"
    committed = repo.head.commit.tree["notes.md"].data_stream.read().decode()
    assert committed.count(f"working on {SECOND}") == 1  # the killed run's edit is in the patch, not the fix
    assert not repo.is_dirty(untracked_files=True)


def test_a_timeout_ends_the_agents_whole_group_grandchild_included(tmp_path: Path) -> None:
    config, repo, run, markers = make_project(tmp_path, hang_on=FIRST, timeout_s=5)
    record_path = run.fix_record

    record = run_fix_loop(config, run)

    pgid, grandchild = map(int, wait_for(markers / f"{FIRST}.ready", timeout=1).split())
    assert_gone(pgid, grandchild)
    first = record.bugs[0]
    assert first.status == "unresolved" and first.runs[0].timed_out
    assert read_fix_record(record_path).bugs[0].status == "unresolved"
    assert messages(repo)[0] == f"fix: {SECOND}"
    assert not repo.is_dirty(untracked_files=True)


def test_a_recorded_group_is_ended_only_while_it_is_provably_the_same_one(tmp_path: Path) -> None:
    """A pid reused by another process (another start time) is never signalled; the recorded one is."""
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
    try:
        recorded = record_group(sleeper.pid)
        assert recorded.pgid == sleeper.pid and recorded.started
        reused = recorded.model_copy(update={"started": recorded.started + "0"})
        assert not end_leftover(reused)
        assert running(sleeper.pid)
        assert end_leftover(recorded)
        sleeper.wait(timeout=10)
        assert not running_in_group(sleeper.pid) and not end_leftover(recorded)
    finally:
        sleeper.kill()
        sleeper.wait()


def test_a_fix_on_another_run_cleans_up_after_a_killed_one_first(tmp_path: Path) -> None:
    """The killed loop's run is not the one fixed next (`doit loop` plans a new run): cleaned all the same."""
    config, repo, first_run, markers = make_project(tmp_path, hang_on=SECOND)
    fixing = start_fix(tmp_path, first_run)
    try:
        pgid, grandchild = map(int, wait_for(markers / f"{SECOND}.ready", fixing).split())
        fixing.kill()
        fixing.communicate(timeout=120)
        second_run = create_run_dir(config.paths.runs)
        shutil.copy(first_run.bug_report, second_run.bug_report)
        record_decision(second_run, "approve")
        (markers / "hang").unlink()
        again = fix_again(tmp_path, second_run)
    finally:
        for pid in running_in_group(pgid) if "pgid" in locals() else []:
            os.kill(pid, signal.SIGKILL)

    assert again.returncode == 0, again.stdout + again.stderr
    assert f"{first_run.run_id}: {SECOND}: the fix loop was killed while working on it" in again.stdout
    assert_gone(pgid, grandchild)
    left = read_fix_record(first_run.fix_record)
    assert statuses(left) == [(FIRST, "committed"), (SECOND, "interrupted")] and left.in_progress is None
    assert left.bugs[1].patch == f"fix/interrupted-{SECOND}.patch"
    assert statuses(read_fix_record(second_run.fix_record)) == [(FIRST, "committed"), (SECOND, "committed")]
    assert not repo.is_dirty(untracked_files=True)


def test_a_second_ctrl_c_while_the_agent_is_being_stopped_still_leaves_no_mess(tmp_path: Path) -> None:
    config, repo, run, markers = make_project(tmp_path, hang_on=FIRST)
    (markers / "stubborn").touch()
    fixing = start_fix(tmp_path, run)
    try:
        pgid, grandchild = map(int, wait_for(markers / f"{FIRST}.ready", fixing).split())
        fixing.send_signal(signal.SIGINT)
        wait_for(markers / f"{FIRST}.term", fixing)  # the agent got SIGTERM and ignored it
        fixing.send_signal(signal.SIGINT)
        output, _ = fixing.communicate(timeout=120)
    finally:
        fixing.kill()
        for pid in running_in_group(pgid) if "pgid" in locals() else []:
            os.kill(pid, signal.SIGKILL)

    assert fixing.returncode == 130, output
    assert_gone(pgid, grandchild)
    assert messages(repo) == ["tiny server"] and not repo.is_dirty(untracked_files=True)
    assert f"+working on {FIRST}" in (run.root / "fix" / f"interrupted-{FIRST}.patch").read_text()
    record = read_fix_record(run.fix_record)
    assert statuses(record) == [(FIRST, "interrupted")] and record.in_progress is None
