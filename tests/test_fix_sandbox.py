"""The fix agent's sandbox (`fix/sandbox.py`), on real bubblewrap, real git repositories and real processes.

A `shell` fix agent on the bundled example tries everything its own shell
tool lets it: a write outside the repository by python and by a computed
path, a push to a local bare repository with `GIT_ALLOW_PROTOCOL` set to
`file` and with it removed (`env -u`), a `setsid nohup` process that edits
the repository after the run, a read of the `~/.ssh/id_rsa` planted in the
(fake) home, the credentials of its environment. Each fails, the one fix is
committed, and the loop reports what it saw refused. Then Ctrl-C, SIGTERM
and a timeout while a sandboxed agent's detached process keeps editing: every
process ends with the fix, and the work tree is clean before the command
exits. Without bwrap the fix stops before any agent runs, saying how to
install it; `fix.sandbox: off` runs unconfined and says so.

Skipped only where bwrap truly cannot make a sandbox here (tried, not
guessed); under CI (`.ci/run` installs bubblewrap) that fails instead.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import git
import pytest
from test_fix_loop import FTS_ID, fts_bug, log_messages, make_project, write_report

from mcpipechekr.artifacts import create_run_dir
from mcpipechekr.artifacts.fix_record import read_fix_record
from mcpipechekr.config import Config
from mcpipechekr.errors import UserError
from mcpipechekr.fix import run_fix_loop
from mcpipechekr.fix.sandbox import BWRAP_ENV, SandboxUnavailable, require_sandbox
from mcpipechekr.review.decision import record_decision

PRIVATE_KEY = "-----BEGIN OPENSSH PRIVATE KEY----- planted-for-the-test"
GH_TOKEN = "ghp_plantedForTheSandboxTest0123456789"


def require_bwrap() -> None:
    """Skip where bwrap cannot make its sandbox here; fail under CI, which installs it."""
    try:
        require_sandbox()
    except SandboxUnavailable as exc:
        if os.environ.get("CI"):
            pytest.fail(exc.message)
        pytest.skip(exc.message)


def processes_with(marker: str) -> list[int]:
    """Pids of live processes whose environment holds `marker` (Linux /proc), but this test's own
    children (GitPython's `git cat-file`)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if marker.encode() in (entry / "environ").read_bytes():
                state, parent = (entry / "stat").read_text().rsplit(")", 1)[1].split()[:2]
                if state != "Z" and int(parent) != os.getpid():
                    found.append(int(entry.name))
        except (OSError, IndexError):
            continue
    return found


def approved_project(tmp_path: Path, emailindex_dir: Path, db: Path, fix: dict) -> tuple[Config, git.Repo]:
    config, repo = make_project(tmp_path, emailindex_dir, db, fix, 30)
    return config, repo


def bare_remote(tmp_path: Path, repo: git.Repo) -> tuple[Path, str]:
    remote = tmp_path / "remote.git"
    git.Repo.init(remote, bare=True)
    repo.create_remote("origin", str(remote))
    repo.git.push("origin", "HEAD:refs/heads/main")
    return remote, git.Repo(remote).git.for_each_ref()


ATTACKS = textwrap.dedent(
    """\
    #!/bin/sh
    # $1: a folder outside the repository, $2: the bare remote, $3: the real home, $4: the word to edit late
    outside="$1"; remote="$2"; real_home="$3"; go="$4"
    python3 -c "open('$outside/by-python.txt', 'w').write('escaped')" 2>&1 | tail -1
    sh -c "echo escaped > \\$(printf %s "$outside")/by-computed-path.txt" 2>&1
    id="-c user.name=agent -c user.email=agent@example.com"
    git $id commit --no-verify -qam wip --allow-empty
    GIT_ALLOW_PROTOCOL=file git push "$remote" HEAD:refs/heads/by-allow-protocol 2>&1 | tail -2
    env -u GIT_ALLOW_PROTOCOL git push "$remote" HEAD:refs/heads/by-env-u 2>&1 | tail -2
    started="$TMPDIR/late-started"
    wait_go="touch '$started'; for i in \\$(seq 300); do [ -e '$go' ] && break; sleep 0.1; done"
    setsid nohup sh -c "$wait_go; echo '# edited after the run' >> server.py" >/dev/null 2>&1 &
    for i in $(seq 100); do [ -e "$started" ] && break; sleep 0.1; done  # it runs: the agent may end
    echo "key: $(cat "$real_home/.ssh/id_rsa" 2>&1)"
    echo "agent: ${SSH_AUTH_SOCK:-none} token: ${GH_TOKEN:-none}${GITHUB_TOKEN:-}"
    echo "fixed" >> README.md
    echo "done <promise>COMPLETE</promise>"
    """
)


def test_a_shell_agent_trying_every_escape_leaves_nothing_outside_no_push_no_process_and_a_clean_repo(
    tmp_path: Path, emailindex_dir: Path, emailindex_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_bwrap()
    home = tmp_path / "real-home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(PRIVATE_KEY + "\n")
    (home / ".git-credentials").write_text("https://user:secret@example.com\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GH_TOKEN", GH_TOKEN)
    monkeypatch.setenv("SSH_AUTH_SOCK", str(tmp_path / "agent.sock"))
    marker = f"MCPIPECHEKR_SANDBOX_TEST={uuid.uuid4().hex}"
    monkeypatch.setenv(*marker.split("=", 1))
    outside = tmp_path / "outside"
    outside.mkdir()
    script = tmp_path / "attacks.sh"
    script.write_text(ATTACKS)
    remote = tmp_path / "remote.git"
    go = tmp_path / "late-edit-go"  # made once the run is over: a detached process that survived edits then
    fix = {"agent": "shell", "command": f"sh {script} {outside} {remote} {home} {go}", "max_iterations": 1}
    config, repo = approved_project(tmp_path, emailindex_dir, emailindex_db, fix)
    _, refs_before = bare_remote(tmp_path, repo)
    run = create_run_dir(config.paths.runs)
    write_report(run, [fts_bug()])
    record_decision(run, "approve")

    record = run_fix_loop(config, run)
    go.touch()
    time.sleep(1.0)  # a detached process that survived the run polls for it every 0.1 s

    (entry,) = record.bugs
    assert record.sandbox == "bwrap"
    assert (entry.status, entry.files_changed) == ("committed", ["README.md"])
    assert log_messages(repo) == [f"fix: {FTS_ID}", "Initial import of emailindex"]
    assert list(outside.iterdir()) == []
    assert git.Repo(remote).git.for_each_ref() == refs_before
    assert not repo.is_dirty(untracked_files=True)
    assert "edited after the run" not in Path(repo.working_dir, "server.py").read_text()
    assert processes_with(marker) == []
    log = (run.root / entry.runs[0].log).read_text()
    assert PRIVATE_KEY not in log and "key: " in log
    assert GH_TOKEN not in log and "agent: none token: none" in log
    refused = entry.runs[0].refused
    assert any("Read-only file system" in line and "by-python.txt" in line for line in refused), refused
    assert any("Read-only file system" in line and "by-computed-path.txt" in line for line in refused)
    # the detached process, named by its command line (`sh -c touch …; for i in $(seq 300) …`)
    left = [line for line in refused if "still running when the agent exited" in line]
    assert any("seq 300" in line for line in left), refused
    assert read_fix_record(run.fix_record).bugs[0].runs[0].refused == refused


HANGING = textwrap.dedent(
    """\
    #!/bin/sh
    echo "working" >> server.py
    echo "made by the agent" > new-file.txt
    setsid nohup sh -c 'while true; do echo "# still editing" >> server.py; sleep 0.2; done' \\
        >/dev/null 2>&1 &
    touch .git/sandbox-ready
    sleep 600
    """
)


def fix_process(tmp_path: Path, emailindex_dir: Path, db: Path, **fix: object) -> tuple[Path, git.Repo, str]:
    """A project whose shell agent edits, starts a detached editor and hangs; its run approved."""
    script = tmp_path / "hang.sh"
    script.write_text(HANGING)
    settings = {"agent": "shell", "command": f"sh {script}", "max_iterations": 1, **fix}
    config, repo = approved_project(tmp_path, emailindex_dir, db, settings)
    run = create_run_dir(config.paths.runs)
    write_report(run, [fts_bug()])
    record_decision(run, "approve")
    assert config.source is not None
    return config.source, repo, run.run_id


def wait_for(path: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"no {path.name} within {timeout}s"
        time.sleep(0.05)


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_ctrl_c_or_sigterm_ends_every_process_of_the_sandbox_and_restores_the_tree_before_exiting(
    tmp_path: Path, emailindex_dir: Path, emailindex_db: Path, stop: signal.Signals
) -> None:
    require_bwrap()
    config_path, repo, run_id = fix_process(tmp_path, emailindex_dir, emailindex_db)
    marker = f"MCPIPECHEKR_SANDBOX_TEST={uuid.uuid4().hex}"
    env = {**os.environ, marker.split("=")[0]: marker.split("=")[1]}
    process = subprocess.Popen(
        [sys.executable, "-m", "mcpipechekr", "fix", run_id, "--config", str(config_path)],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(Path(repo.git_dir) / "sandbox-ready", 60)
        time.sleep(0.5)  # the detached editor has written at least once
        process.send_signal(stop)
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, out + err
    # the moment it exited: nothing of the sandbox runs, and the tree is clean; it stays so
    assert processes_with(marker) == []
    assert not repo.is_dirty(untracked_files=True), repo.git.status()
    time.sleep(1)
    assert not repo.is_dirty(untracked_files=True), repo.git.status()
    record = read_fix_record(tmp_path / "runs" / run_id / "fix.json")
    (entry,) = record.bugs
    assert entry.status == "interrupted" and entry.patch is not None
    patch = (tmp_path / "runs" / run_id / entry.patch).read_text()
    assert "made by the agent" in patch and "working" in patch
    assert f"edits for {FTS_ID} saved to" in out + err


def test_a_timeout_ends_the_detached_process_with_the_sandbox(
    tmp_path: Path, emailindex_dir: Path, emailindex_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_bwrap()
    config_path, repo, run_id = fix_process(tmp_path, emailindex_dir, emailindex_db, timeout_s=3)
    marker = f"MCPIPECHEKR_SANDBOX_TEST={uuid.uuid4().hex}"
    monkeypatch.setenv(*marker.split("=", 1))
    from mcpipechekr.artifacts.rundir import RunDir
    from mcpipechekr.config import load_config

    config = load_config(config_path, environ={})
    record = run_fix_loop(config, RunDir(tmp_path / "runs" / run_id))

    assert processes_with(marker) == []
    (entry,) = record.bugs
    assert entry.status == "unresolved" and entry.runs[0].timed_out
    assert not repo.is_dirty(untracked_files=True)
    time.sleep(1)
    assert not repo.is_dirty(untracked_files=True), repo.git.status()


def test_without_bwrap_the_fix_stops_before_the_agent_runs_and_says_how_to_install_it(
    tmp_path: Path, emailindex_dir: Path, emailindex_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran = tmp_path / "agent-ran"
    fix = {"agent": "shell", "command": f"touch {ran}; echo '<promise>COMPLETE</promise>'"}
    config, repo = approved_project(tmp_path, emailindex_dir, emailindex_db, fix)
    run = create_run_dir(config.paths.runs)
    write_report(run, [fts_bug()])
    record_decision(run, "approve")
    monkeypatch.setenv(BWRAP_ENV, str(tmp_path / "no-such-bwrap"))

    with pytest.raises(UserError) as refused:
        run_fix_loop(config, run)

    assert "`sudo apt-get install bubblewrap`" in refused.value.message
    assert "fix.sandbox: off" in refused.value.message
    assert not ran.exists()
    assert len(log_messages(repo)) == 1


def test_sandbox_off_runs_the_agent_unconfined_and_says_so_in_fix_json_and_at_the_fix(
    tmp_path: Path, emailindex_dir: Path, emailindex_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outside = tmp_path / "outside.txt"
    command = f"echo escaped > {outside}; echo fixed >> README.md; echo '<promise>COMPLETE</promise>'"
    fix = {"agent": "shell", "command": command, "max_iterations": 1, "sandbox": False}  # YAML's bare `off`
    config, repo = approved_project(tmp_path, emailindex_dir, emailindex_db, fix)
    run = create_run_dir(config.paths.runs)
    write_report(run, [fts_bug()])
    record_decision(run, "approve")
    monkeypatch.setenv(BWRAP_ENV, str(tmp_path / "no-such-bwrap"))  # not needed when off
    from rich.console import Console

    console = Console(record=True, width=200)
    record = run_fix_loop(config, run, console=console)

    assert config.fix.sandbox == "off" and record.sandbox == "off"
    assert record.bugs[0].status == "committed"
    assert outside.read_text() == "escaped\n"  # what the sandbox would have refused
    assert "fix.sandbox is off: the shell fix agent runs unconfined" in console.export_text()


def test_a_change_made_after_the_fix_step_ended_is_refused_by_the_next_trace_naming_its_files(
    tmp_path: Path, emailindex_dir: Path, emailindex_db: Path
) -> None:
    """Whatever edits the repository after the fix loop ended (a process that escaped it, an undo
    cut short), the next trace refuses that tree, naming the file and what to type; a commit ends it."""
    from mcpipechekr.runners.execute import execute_attempts
    from mcpipechekr.server.workspace import refuse_changes_after_fix

    require_bwrap()
    command = "echo fixed >> README.md; echo '<promise>COMPLETE</promise>'"
    fix = {"agent": "shell", "command": command, "max_iterations": 1}
    config, repo = approved_project(tmp_path, emailindex_dir, emailindex_db, fix)
    run = create_run_dir(config.paths.runs)
    write_report(run, [fts_bug()])
    record_decision(run, "approve")
    record = run_fix_loop(config, run)
    assert record.bugs[0].status == "committed"
    refuse_changes_after_fix(config.server)  # the tree as the loop left it: nothing to say
    (Path(repo.working_tree_dir) / "server.log").write_text("a server may write its own files\n")
    refuse_changes_after_fix(config.server)  # an untracked file is no change to the code
    server_py = Path(repo.working_tree_dir) / "server.py"
    with server_py.open("a") as handle:  # something else edits it afterwards
        handle.write("# edited after the run\n")
    with pytest.raises(UserError) as refused:
        execute_attempts(config, create_run_dir(config.paths.runs), [], progress=False)
    message = refused.value.message
    assert "changed after the last fix step ended, with no commit: server.py." in message
    assert "status`; keep them with `git -C" in message and "checkout -- ." in message
    repo.git.add("server.py")
    repo.index.commit("keep the edit")
    refuse_changes_after_fix(config.server)  # committed: that tree is chosen


def test_fix_sandbox_reads_yamls_bare_off_and_names_a_wrong_value(tmp_path: Path) -> None:
    from mcpipechekr.config import load_config

    path = tmp_path / "config.yaml"
    body = "server:\n  name: s\n  command: python\nfix:\n  sandbox: {}\n"
    for written, read in (("off", "off"), ("on", "on"), ('"off"', "off")):
        path.write_text(body.format(written))
        assert load_config(path, environ={}).fix.sandbox == read
    path.write_text(body.format("maybe"))
    with pytest.raises(UserError) as wrong:
        load_config(path, environ={})
    assert wrong.value.message.endswith("config.yaml:5: field 'fix.sandbox': must be on or off")
