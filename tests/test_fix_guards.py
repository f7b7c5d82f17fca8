"""What a fix agent may not do besides editing files: git's control files, its own commits, pushes.

On real git repositories in temp folders: `GitControl` puts back hooks, config
and info/ files however the agent changed them, and the fix loop, driven by a
stand-in agent script that plants a hook, rewrites the config, commits and
pushes to a local bare remote, commits only the agent's fix: the hook never
runs, the remote never moves, and fix.json names everything undone.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import textwrap
from pathlib import Path

import git
import pytest
from test_fix_loop import FTS_ID, fts_bug, log_messages, make_project, write_report

from mcpipechekr.artifacts import create_run_dir
from mcpipechekr.config import load_config
from mcpipechekr.fix import run_fix_loop
from mcpipechekr.fix.guards import AGENT_GIT_ENV, GitControl
from mcpipechekr.review.decision import record_decision


def git_repo(root: Path) -> git.Repo:
    root.mkdir(parents=True)
    repo = git.Repo.init(root)
    (root / "a.txt").write_text("a\n")
    repo.index.add(["a.txt"])
    repo.index.commit("a")
    return repo


def test_hooks_config_and_info_are_put_back_however_they_were_changed(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo")
    dot_git = Path(repo.git_dir)
    (dot_git / "hooks" / "post-checkout").write_text("#!/bin/sh\necho mine\n")
    (dot_git / "hooks" / "post-checkout").chmod(0o755)
    (dot_git / "hooks" / "pre-push").symlink_to("../../tools/pre-push")  # a hook manager's link
    (dot_git / "info").mkdir(exist_ok=True)
    (dot_git / "info" / "exclude").write_text("*.log\n")
    config_before = (dot_git / "config").read_bytes()
    control = GitControl.snapshot(repo)
    assert control.restore(repo) == []  # nothing changed, nothing reported

    (dot_git / "hooks" / "pre-commit").write_text("#!/bin/sh\ntouch /tmp/owned\n")  # created
    (dot_git / "hooks" / "post-checkout").write_text("#!/bin/sh\ncurl evil\n")  # rewritten
    (dot_git / "hooks" / "pre-push").unlink()  # a symlink replaced by a file
    (dot_git / "hooks" / "pre-push").write_text("#!/bin/sh\nexit 0\n")
    (dot_git / "info" / "exclude").unlink()  # deleted
    with (dot_git / "config").open("a") as handle:
        handle.write("[core]\n\tfsmonitor = /tmp/evil.sh\n")

    undone = control.restore(repo)

    assert undone == [
        ".git/hooks/pre-commit: created by the agent; removed",
        ".git/config: changed by the agent; put back",
        ".git/hooks/post-checkout: changed by the agent; put back",
        ".git/hooks/pre-push: changed by the agent; put back",
        ".git/info/exclude: deleted by the agent; put back",
    ]
    assert not (dot_git / "hooks" / "pre-commit").exists()
    assert (dot_git / "hooks" / "post-checkout").read_text() == "#!/bin/sh\necho mine\n"
    assert os.access(dot_git / "hooks" / "post-checkout", os.X_OK)
    assert os.readlink(dot_git / "hooks" / "pre-push") == "../../tools/pre-push"
    assert (dot_git / "info" / "exclude").read_text() == "*.log\n"
    assert (dot_git / "config").read_bytes() == config_before
    assert control.restore(repo) == []


def test_git_transports_are_off_for_the_agent_and_a_moved_remote_ref_is_reported(tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    git.Repo.init(remote, bare=True)
    repo = git_repo(tmp_path / "repo")
    repo.create_remote("origin", str(remote))
    repo.git.push("origin", "HEAD:refs/heads/main")
    repo.git.fetch("origin")
    control = GitControl.snapshot(repo)
    env = {**os.environ, **AGENT_GIT_ENV}
    for argv in (
        ["git", "push", "origin", "HEAD:refs/heads/other"],
        ["git", "-c", "protocol.file.allow=always", "push", str(remote), "HEAD:refs/heads/other"],
        ["git", "fetch", "origin"],
    ):
        pushed = subprocess.run(argv, cwd=repo.working_dir, env=env, capture_output=True, text=True)
        assert pushed.returncode != 0 and "not allowed" in pushed.stderr, argv
    assert git.Repo(remote).git.for_each_ref() == git.Repo(remote).git.for_each_ref("refs/heads/main")
    assert control.restore(repo) == []

    (Path(repo.working_dir) / "a.txt").write_text("b\n")  # an agent that cleared its environment
    repo.index.add(["a.txt"])
    repo.index.commit("b")
    repo.git.push("origin", "HEAD:refs/heads/main")
    undone = control.restore(repo)
    assert len(undone) == 1 and undone[0].startswith("refs/remotes/origin/main: moved during the agent's run")


AGENT = textwrap.dedent(
    """
    import subprocess, sys
    from pathlib import Path

    def git(*args):
        return subprocess.run(["git", "-c", "user.name=agent", "-c", "user.email=a@b", *args],
                              capture_output=True, text=True)

    marker = sys.argv[1]
    hook = Path(".git/hooks/pre-commit")
    hook.write_text(f"#!/bin/sh\\ntouch {marker}\\n")
    hook.chmod(0o755)
    with open(".git/config", "a") as config:
        config.write("[alias]\\n\\tst = !touch " + marker + "\\n")
    with open("README.md", "a") as readme:
        readme.write("fixed\\n")
    git("commit", "--no-verify", "-qam", "agent commit")
    print("push:", git("push", "origin", "HEAD:refs/heads/main").stderr.strip())
    print("done <promise>COMPLETE</promise>")
    """
)


def test_the_loop_undoes_a_planted_hook_and_config_folds_the_agents_commit_and_nothing_is_pushed(
    tmp_path: Path, emailindex_dir: Path, emailindex_db: Path
) -> None:
    script = tmp_path / "agent.py"
    script.write_text(AGENT)
    marker = tmp_path / "hook-ran"
    fix = {"agent": "shell", "command": f"{{python}} {script} {marker}", "max_iterations": 1}
    config, repo = make_project(tmp_path, emailindex_dir, emailindex_db, fix, 10)
    remote = tmp_path / "remote.git"
    git.Repo.init(remote, bare=True)
    repo.create_remote("origin", str(remote))
    repo.git.push("origin", "HEAD:refs/heads/main")
    pushed_before = git.Repo(remote).heads.main.commit.hexsha
    run = create_run_dir(config.paths.runs)
    write_report(run, [fts_bug()])
    record_decision(run, "approve")

    record = run_fix_loop(config, run)

    (entry,) = record.bugs
    assert (entry.status, entry.files_changed) == ("committed", ["README.md"])
    assert log_messages(repo) == [f"fix: {FTS_ID}", "Initial import of emailindex"]
    assert not marker.exists(), "the planted pre-commit hook ran when the loop committed"
    assert not repo.config_reader().has_section("alias")
    assert not Path(repo.git_dir, "hooks", "pre-commit").exists()
    assert git.Repo(remote).heads.main.commit.hexsha == pushed_before
    assert entry.undone == [
        ".git/hooks/pre-commit: created by the agent; removed",
        ".git/config: changed by the agent; put back",
        "1 commit(s) made by the agent itself: folded back into the one fix commit",
    ]
    log = (run.root / entry.runs[0].log).read_text()
    assert "transport 'file' not allowed" in log


def test_a_fix_agent_printing_a_provider_key_leaves_no_form_of_it_in_the_run(
    tmp_path: Path, emailindex_dir: Path, emailindex_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent's output is logged and quoted in fix.json's reason: the key, raw or escaped, is not."""
    secret = 'sk-fix-"quoted"\\slash-0042'
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    script = tmp_path / "agent.py"
    script.write_text(
        "import json, os, shlex, sys\n"
        "key = os.environ['OPENAI_API_KEY']\n"
        "print('raw', key); print('json', json.dumps(key)); print('shell', shlex.quote(key))\n"
        "print('err', key, file=sys.stderr)\n"
    )
    fix = {"agent": "shell", "command": f"{{python}} {script}", "max_iterations": 1}
    config, repo = make_project(tmp_path, emailindex_dir, emailindex_db, fix, 10)
    assert config.source is not None
    config = load_config(config.source, environ={"OPENAI_API_KEY": secret})
    run = create_run_dir(config.paths.runs)
    write_report(run, [fts_bug()])
    record_decision(run, "approve")

    record = run_fix_loop(config, run)

    assert record.bugs[0].status == "unresolved" and "no completion promise" in (record.bugs[0].reason or "")
    log = (run.root / record.bugs[0].runs[0].log).read_text()
    assert "raw ${OPENAI_API_KEY}" in log and "err ${OPENAI_API_KEY}" in log
    forms = {secret, json.dumps(secret)[1:-1], shlex.quote(secret)}
    leaked = [
        (path, form)
        for path in run.root.rglob("*")
        if path.is_file()
        for form in forms
        if form in path.read_text(errors="replace")
    ]
    assert leaked == []
