"""One project lock for every writing command: a second writer stops at once and names the holder.

The holder here is a real `mcpipechekr loop` waiting at its review prompt
(a pseudo-terminal), in a project that `mcpipechekr init` made around the
bookshop server (tests/servers/bookshop_server.py). Every command runs as a
subprocess of this checkout (`python -m mcpipechekr`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import sys
from pathlib import Path

import git
import pexpect
import pytest
from project import mcpipechekr

from mcpipechekr._util.project_lock import project_lock

SERVER = Path(__file__).parent / "servers" / "bookshop_server.py"
TASKS = """\
tasks:
  - task_id: orders-of-alice
    prompt: How many orders has alice placed?
    task_type: deterministic
    reference_calls:
      - tool: order_count
        arguments: {customer: alice}
"""


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    clean = {key: value for key, value in os.environ.items() if key != "MCPIPECHEKR_HOME"}
    return {**clean, "BOOKSHOP_DB": str(tmp_path / "shop.db"), "COLUMNS": "200"}


@pytest.fixture
def shop(tmp_path: Path, env: dict[str, str]) -> Path:
    """A project with its baseline, a repository for the fix step and a fix agent that needs no model."""
    folder = tmp_path / "shop"
    folder.mkdir()
    shutil.copy(SERVER, folder / "server.py")
    made = mcpipechekr(folder, env, "init", "--command", "python server.py")
    assert made.returncode == 0, made.stderr
    (folder / "tasks.yaml").write_text(TASKS)
    git.Repo.init(folder).index.commit("the server")
    config = (folder / "config.yaml").read_text()
    config = config.replace("  # repo: path/to/server/repo", "  repo: .  #")
    (folder / "config.yaml").write_text(re.sub(r"(?m)^  agent: \S+", "  agent: demo", config))
    baseline = mcpipechekr(folder, env, "doit", "baseline")
    assert baseline.returncode == 0, baseline.stdout + baseline.stderr
    return folder


@pytest.mark.slow
def test_writers_stop_while_a_loop_works_and_go_on_once_it_was_killed(
    shop: Path, env: dict[str, str], tmp_path: Path
) -> None:
    loop = pexpect.spawn(
        sys.executable,
        ["-m", "mcpipechekr", "loop", "--repeat", "1"],
        cwd=str(shop),
        env=env,
        encoding="utf-8",
        timeout=300,
        dimensions=(50, 160),
    )
    loop.logfile_read = (tmp_path / "loop.log").open("w")
    try:
        loop.expect("review> ")  # the loop holds the project while it waits for a decision
        holder = f"(pid {loop.pid}: mcpipechekr loop --repeat 1, since "
        session = shop / "session.json"
        session.write_text("{}")
        writers = {
            "run": ("run",),
            "evaluate": ("evaluate",),
            "index": ("index",),
            "promote": ("promote",),
            "lint": ("lint",),
            "import": ("import", "--from", "opencode", str(session), "--task", "orders-of-alice"),
            "review --exit": ("review", "--exit"),
            "doit trace": ("doit", "trace"),
        }
        for name, args in writers.items():
            refused = mcpipechekr(shop, env, *args)
            assert refused.returncode == 2, (name, refused.stdout + refused.stderr)
            assert "another mcpipechekr command is working in this project " + holder in refused.stderr, name
            assert "(.mcpipechekr/project.lock)" in refused.stderr, name
        # The project is the config file's folder, wherever the command is typed.
        elsewhere = mcpipechekr(shop.parent, env, "evaluate", "--config", "shop/config.yaml")
        assert elsewhere.returncode == 2 and holder in elsewhere.stderr, elsewhere.stdout + elsewhere.stderr
        assert "(shop/.mcpipechekr/project.lock)" in elsewhere.stderr
        # Readers never wait: `review` without a decision only shows the report (and exits 2 without one),
        # `findings` says there is no index yet (3).
        readers = {"validate": 0, "findings": 3, "doit list": 0, "review": 2, "run --help": 0}
        for reader, code in readers.items():
            read = mcpipechekr(shop, env, *reader.split())
            assert "another mcpipechekr command" not in read.stdout + read.stderr, reader
            assert read.returncode == code, (reader, read.stdout + read.stderr)
        (run,) = shop.glob("runs/run-*")
        assert not (run / "review.json").exists()  # the refused `review --exit` recorded nothing
    finally:
        loop.kill(signal.SIGKILL)  # flock goes with the process: nothing to clean up
        loop.close(force=True)
    evaluated = mcpipechekr(shop, env, "evaluate")
    assert evaluated.returncode == 0, evaluated.stdout + evaluated.stderr
    indexed = mcpipechekr(shop, env, "index")
    assert indexed.returncode == 0, indexed.stdout + indexed.stderr
    listed = mcpipechekr(shop, env, "findings")
    assert listed.returncode == 0, listed.stdout + listed.stderr


def test_commands_the_holder_starts_work_under_its_lock(tmp_path: Path, env: dict[str, str]) -> None:
    """A child of the holder (the fix agent's `mcpipechekr …`) goes on instead of waiting for its parent:
    it carries the holder's token, or descends from it when its environment was cleaned."""
    with project_lock(tmp_path, "doit loop"):
        described = json.loads((tmp_path / ".mcpipechekr" / "project.lock").read_text())
        assert (described["pid"], described["command"]) == (os.getpid(), "doit loop")
        with project_lock(tmp_path):  # reentrant in one process: the loop's nested steps
            token = os.environ["MCPIPECHEKR_PROJECT_LOCK"]  # what the holder's children inherit
            with_token = mcpipechekr(tmp_path, {**env, "MCPIPECHEKR_PROJECT_LOCK": token}, "index")
        without_token = mcpipechekr(tmp_path, env, "index")  # env was copied before the lock was taken
    assert with_token.returncode == 0, with_token.stderr
    assert without_token.returncode == 0, without_token.stderr
    assert (tmp_path / ".mcpipechekr" / "project.lock").read_text() == ""  # released: no holder described
