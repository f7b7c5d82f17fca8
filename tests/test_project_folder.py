"""The doit graph works from any project folder: a dodo.py that `init` wrote, `doit -f`, `mcpipechekr doit`.

Each project here is made by `mcpipechekr init` around the bookshop server
(tests/servers/bookshop_server.py), and doit runs as a subprocess in it, so the
graph is the installed package's and the config is the folder's, never the
checkout's.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import git
import pytest
from project import installed

from mcpipechekr._util.commands import runnable, script_command
from mcpipechekr.errors import UserError

SERVERS = Path(__file__).parent / "servers"
SERVER = SERVERS / "bookshop_server.py"
BIN = Path(sys.executable).parent
TASKS = """\
tasks:
  - task_id: orders-of-{customer}
    prompt: How many orders has {customer} placed?
    task_type: deterministic
    reference_calls:
      - tool: order_count
        arguments: {{customer: {customer}}}
"""

FIRST_ORDER = """\
tasks:
  - task_id: first-order-mira
    prompt: Which was the first order placed by Mira Castell? Give its id and date.
    task_type: deterministic
    expected_tool: list_orders
    min_calls: 1
    reference_calls:
      - {tool: list_orders, arguments: {customer: Mira Castell, page: 1}}
      - {tool: list_orders, arguments: {customer: Mira Castell, page: 2}}
      - {tool: list_orders, arguments: {customer: Mira Castell, page: 3}}
"""


def command(cwd: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return installed(BIN, cwd, env, *args, timeout=120)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    clean = {key: value for key, value in os.environ.items() if key not in {"PYTHONPATH", "MCPIPECHEKR_HOME"}}
    return {**clean, "BOOKSHOP_DB": str(tmp_path / "shop.db"), "COLUMNS": "200"}


def make_project(folder: Path, customer: str, env: dict[str, str]) -> Path:
    folder.mkdir()
    shutil.copy(SERVER, folder / "server.py")
    result = command(folder, "mcpipechekr", "init", "--command", "python server.py", env=env)
    assert result.returncode == 0, result.stderr
    (folder / "tasks.yaml").write_text(TASKS.format(customer=customer))
    return folder


@pytest.mark.slow
def test_doit_in_a_folder_made_by_init_builds_that_folders_project(
    tmp_path: Path, env: dict[str, str]
) -> None:
    shop = make_project(tmp_path / "shop", "alice", env)
    listed = command(shop, "doit", "list", env=env)
    assert listed.returncode == 0, listed.stderr
    assert [line.split()[0] for line in listed.stdout.splitlines()] == [
        "baseline",
        "check",
        "evaluate",
        "fix",
        "lint",
        "loop",
        "report",
        "review",
        "trace",
    ]
    baseline = command(shop, "doit", "baseline", env=env)
    assert baseline.returncode == 0, baseline.stdout + baseline.stderr
    assert f"project {shop}: config.yaml, server shop" in baseline.stdout
    assert "orders-of-alice" in (shop / "runs" / "baseline.json").read_text()
    assert (shop / ".mcpipechekr" / "doit.sqlite").exists()


@pytest.mark.slow
def test_doit_f_uses_the_folder_of_that_dodo_for_everything(tmp_path: Path, env: dict[str, str]) -> None:
    here = make_project(tmp_path / "here", "alice", env)
    there = make_project(tmp_path / "there", "bo", env)
    result = command(here, "doit", "-f", "../there/dodo.py", "baseline", env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"project {there}: config.yaml, server there" in result.stdout
    assert "orders-of-bo" in (there / "runs" / "baseline.json").read_text()
    assert not (here / "runs").exists() and not (here / ".mcpipechekr").exists()
    # A relative --config is the dodo's folder's too: there is no `alt.yaml` there, only here.
    shutil.copy(here / "config.yaml", here / "alt.yaml")
    missing = command(here, "doit", "-f", "../there/dodo.py", "baseline", "--config", "alt.yaml", env=env)
    assert missing.returncode != 0
    assert "alt.yaml: config file not found" in missing.stdout + missing.stderr


@pytest.mark.slow
def test_mcpipechekr_doit_needs_no_dodo(tmp_path: Path, env: dict[str, str]) -> None:
    shop = make_project(tmp_path / "shop", "alice", env)
    (shop / "dodo.py").unlink()
    listed = command(tmp_path, "mcpipechekr", "doit", "--dir", "shop", "list", env=env)
    assert listed.returncode == 0, listed.stderr
    assert "loop " in listed.stdout and "baseline " in listed.stdout
    baseline = command(shop, "mcpipechekr", "doit", "baseline", env=env)
    assert baseline.returncode == 0, baseline.stdout + baseline.stderr
    assert "orders-of-alice" in (shop / "runs" / "baseline.json").read_text()
    # `loop` is `doit loop`: it checks first what would stop a later step, here the fix step, whose
    # agent needs a model that is not given.
    git.Repo.init(shop).index.commit("the server")
    config = (shop / "config.yaml").read_text().replace("  # repo: path/to/server/repo", "  repo: .  #")
    (shop / "config.yaml").write_text(config.replace("\n  agent: none\n", "\n  agent: opencode\n"))
    refused = command(shop, "mcpipechekr", "loop", env=env)
    assert refused.returncode == 2 and "field 'providers.phase3'" in refused.stdout + refused.stderr
    assert not list(shop.glob("runs/run-*"))
    # With a fix agent that needs no model, it runs; without a terminal it stops at the review, and its
    # hints name commands that work here: no dodo.py, the scripts not on PATH. A review is asked for only
    # with a server bug to approve: the order book's server pages its orders without a sort.
    (shop / "config.yaml").write_text(config.replace("\n  agent: none\n", "\n  agent: demo\n"))
    shutil.copy(SERVERS / "orders_server.py", shop / "server.py")
    shutil.copy(SERVERS / "orders_demo_agent.py", shop / "demo_agent.py")
    (shop / "tasks.yaml").write_text(FIRST_ORDER)
    git.Repo(shop).git.add(all=True)
    git.Repo(shop).index.commit("the order book")
    baseline = command(shop, "mcpipechekr", "doit", "baseline", env=env)
    assert baseline.returncode == 0, baseline.stdout + baseline.stderr
    env["PATH"] = "/usr/bin:/bin"
    loop = command(shop, "mcpipechekr", "loop", "--repeat", "1", env=env)
    assert loop.returncode == 1, loop.stdout + loop.stderr
    assert "iteration 1:" in loop.stdout
    assert f"  {BIN / 'mcpipechekr'} review run-" in loop.stdout
    assert f"then run `{BIN / 'mcpipechekr'} loop` again to go on." in loop.stdout
    assert "`doit" not in loop.stdout
    (report,) = shop.glob("runs/run-*/bug_report.json")


def test_a_second_doit_in_the_same_project_is_refused(tmp_path: Path, env: dict[str, str]) -> None:
    shop = make_project(tmp_path / "shop", "alice", env)
    (shop / ".mcpipechekr").mkdir()
    import fcntl

    with open(shop / ".mcpipechekr" / "project.lock", "a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        held.truncate(0)
        held.write('{"pid": 1, "command": "doit loop", "since": "2026-01-02T03:04:05+00:00", "token": "t"}')
        held.flush()
        refused = command(shop, "mcpipechekr", "loop", env=env)
        by_doit = command(shop, "doit", "baseline", env=env)
    assert refused.returncode == 2 and by_doit.returncode == 2
    for result in (refused, by_doit):
        assert "another mcpipechekr command is working in this project (pid 1: doit loop, since " in (
            result.stderr
        )
        assert "(.mcpipechekr/project.lock)" in result.stderr


# --- commands named in messages ------------------------------------------------------------------


def test_commands_in_messages_name_this_installation_when_it_is_not_on_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    ours = BIN / "mcpipechekr"
    assert script_command("mcpipechekr") == str(ours)
    assert runnable("run `mcpipechekr review RUN --approve` or `doit loop`; keep mcpipechekr") == (
        f"run `{ours} review RUN --approve` or `{BIN / 'doit'} loop`; keep mcpipechekr"
    )
    assert UserError("then `mcpipechekr validate`").format_message() == f"then `{ours} validate`"

    monkeypatch.chdir(BIN.parent.parent)  # beside the virtual environment, as after the quick start
    assert runnable("`mcpipechekr validate`") == f"`{BIN.parent.name}/bin/mcpipechekr validate`"


def test_commands_in_messages_stay_bare_when_the_name_reaches_this_installation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PATH", f"{BIN}:/usr/bin:/bin")
    assert runnable("run `mcpipechekr review RUN --approve`") == "run `mcpipechekr review RUN --approve`"
    assert runnable("`doit loop`") == "`doit loop`"
