"""One project lock for every writing command: a second writer stops at once and names the holder.

The holder here is a real `mcpipechekr loop` waiting at its review prompt
(a pseudo-terminal), in a copy of the bundled example project with one task,
whose first run has server bugs to approve (a run with none ends the loop
before its review). Every command runs as a subprocess of this checkout
(`python -m mcpipechekr`).
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import pexpect
import pytest
from project import copy_project, mcpipechekr

from mcpipechekr._util.project_lock import project_lock

TASK = "find-first-email-ron-chinn"


@pytest.fixture
def env(tmp_path: Path, emailindex_env: dict[str, str]) -> dict[str, str]:
    clean = {key: value for key, value in emailindex_env.items() if key != "MCPIPECHEKR_HOME"}
    return {**clean, "COLUMNS": "200"}


@pytest.fixture
def shop(tmp_path: Path, env: dict[str, str]) -> Path:
    """The bundled example with its baseline for one task: its repository and demo fixer come with it."""
    folder = tmp_path / "shop"
    folder.mkdir()
    copy_project(folder)
    baseline = mcpipechekr(folder, env, "doit", "baseline", "--task", TASK)
    assert baseline.returncode == 0, baseline.stdout + baseline.stderr
    return folder


@pytest.mark.slow
def test_writers_stop_while_a_loop_works_and_go_on_once_it_was_killed(
    shop: Path, env: dict[str, str], tmp_path: Path
) -> None:
    loop = pexpect.spawn(
        sys.executable,
        ["-m", "mcpipechekr", "loop", "--task", TASK],
        cwd=str(shop),
        env=env,
        encoding="utf-8",
        timeout=300,
        dimensions=(50, 160),
    )
    loop.logfile_read = (tmp_path / "loop.log").open("w")
    try:
        loop.expect("review> ")  # the loop holds the project while it waits for a decision
        holder = f"(pid {loop.pid}: mcpipechekr loop --task {TASK}, since "
        session = shop / "session.json"
        session.write_text("{}")
        writers = {
            "run": ("run",),
            "evaluate": ("evaluate",),
            "index": ("index",),
            "promote": ("promote",),
            "lint": ("lint",),
            "import": ("import", "--from", "opencode", str(session), "--task", TASK),
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
