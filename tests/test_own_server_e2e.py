"""The README's "whole cycle on your own server", as a new user runs it, in an empty folder.

The server is the bookshop (tests/servers/bookshop_server.py), not the bundled
example: other tools, other data, its own git repository. Every step is the
installed command line run in the project folder, exactly as docs/own-server.md
shows it: `mcpipechekr init`, tasks with reference calls, `validate`, `check`,
`doit baseline`, then `doit loop` typed at a real pseudo-terminal, with Phase 1
on a scripted OpenAI-compatible endpoint whose key is only in `.env`, through
to the review prompt and `exit`.

The scripts come from $MCPIPECHEKR_TEST_BIN when set (.ci/run points it at a
virtual environment where the package was installed from its wheel, so this
proves the wheel alone is enough), else from beside this interpreter.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import git
import pytest
from fakes.openai_server import FakeOpenAI, Reply, last_user_text, text_reply, tool_call_reply
from project import at_the_review_prompt, installed

from mcpipechekr.artifacts import BugReport, list_runs, read_model, read_trace
from mcpipechekr.artifacts.review import Review
from mcpipechekr.artifacts.trace import ToolCall, Trace

pytestmark = pytest.mark.slow

SERVER = Path(__file__).parent / "servers" / "bookshop_server.py"
BIN = Path(os.environ.get("MCPIPECHEKR_TEST_BIN") or Path(sys.executable).parent)
KEY = "sk-shop-7f3a9c1e5b2d"

TASKS = """\
tasks:
  - task_id: cheapest-harbour-book
    prompt: Which is the cheapest book with "Harbour" in its title? Give its title and price.
    task_type: deterministic
    expected_tool: search_books
    min_calls: 3
    reference_calls:
      - tool: search_books
        arguments: {text: Harbour, page: 1}
      - tool: search_books
        arguments: {text: Harbour, page: 2}
    tags: [catalogue]

  - task_id: orders-of-alice
    prompt: How many orders has the customer alice placed?
    task_type: deterministic
    expected_tool: order_count
    min_calls: 1
    reference_calls:
      - tool: order_count
        arguments: {customer: alice}
    tags: [orders]
"""


def bookshop_agent(body: dict[str, Any]) -> Reply:
    """A model that pages through the search results one call at a time, as agents do without a sort."""
    results = [m for m in body.get("messages") or [] if m.get("role") == "tool"]
    if "alice" in last_user_text(body):
        if not results:
            return tool_call_reply("order_count", {"customer": "alice"})
        return text_reply("alice has placed 2 orders.")
    if len(results) < 3:
        return tool_call_reply("search_books", {"text": "Harbour", "page": len(results) + 1})
    return text_reply("The cheapest is Harbour Birds at 7.50.")


def tools_called(trace: Trace) -> list[str]:
    return [step.tool for step in trace.steps if isinstance(step, ToolCall)]


def run(project: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """One command of the installed package (`mcpipechekr …`, `doit …`) in the project folder."""
    return installed(BIN, project, env, *args)


def make_server_repo(folder: Path) -> None:
    folder.mkdir()
    shutil.copy(SERVER, folder / "server.py")
    (folder / ".gitignore").write_text("*.db\n")
    repo = git.Repo.init(folder)
    repo.index.add(["server.py", ".gitignore"])
    repo.index.commit("bookshop server")


def configure(project: Path, base_url: str) -> None:
    """The edits docs/own-server.md asks for: a fix agent, and Phases 1 and 3 on an endpoint.

    `init` set server.repo itself: server/server.py is tracked in server/'s git checkout.
    """
    config = (project / "config.yaml").read_text()
    assert "\n  repo: server\n" in config
    edits = {
        "\n  agent: none\n": "\n  agent: opencode\n",
        "  phase1: demo   # the agent that runs the tasks blind": "  phase1: shop-llm/fake-model",
        "  phase3: demo   # the fix loop": "  phase3: shop-llm/fake-model",
        "  # endpoints:\n": "  endpoints:\n",
        "  #   local:\n": "    shop-llm:\n",
        "  #     base_url: http://127.0.0.1:11434/v1\n": f"      base_url: {base_url}\n",
        "  #     api_key_env: LOCAL_API_KEY": "      api_key_env: SHOP_LLM_KEY",
    }
    for old, new in edits.items():
        assert old in config, old
        config = config.replace(old, new)
    (project / "config.yaml").write_text(config)
    (project / "tasks.yaml").write_text(TASKS)
    (project / ".env").write_text(f"SHOP_LLM_KEY={KEY}\n")


def test_whole_cycle_on_a_server_of_ones_own(tmp_path: Path) -> None:
    project = tmp_path / "shop"
    project.mkdir()
    make_server_repo(project / "server")
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"PYTHONPATH", "SHOP_LLM_KEY", "MCPIPECHEKR_HOME"} and not key.startswith("BOOKSHOP")
    }
    env.update({"COLUMNS": "160", "TERM": "dumb", "NO_COLOR": "1", "BOOKSHOP_DB": str(tmp_path / "shop.db")})

    init = run(project, env, "mcpipechekr", "init", "--command", "python server/server.py")
    assert init.returncode == 0, init.stderr
    for name in ("config.yaml", "tasks.yaml", "dodo.py", ".gitignore"):
        assert f"wrote {name}" in init.stdout
    listed = run(project, env, "doit", "list")
    assert listed.returncode == 0, listed.stderr
    assert {"baseline", "loop", "trace", "evaluate", "review", "fix"} <= {
        line.split()[0] for line in listed.stdout.splitlines() if line.strip()
    }

    with FakeOpenAI(bookshop_agent) as fake:
        configure(project, fake.base_url)

        validate = run(project, env, "mcpipechekr", "validate")
        assert validate.returncode == 0, validate.stdout + validate.stderr

        check = run(project, env, "mcpipechekr", "check")
        assert check.returncode == 0, check.stdout + check.stderr
        assert "search_books" in check.stdout + check.stderr

        baseline = run(project, env, "doit", "baseline")
        assert baseline.returncode == 0, baseline.stdout + baseline.stderr
        assert "2 task(s) baselined" in baseline.stdout

        status, transcript = at_the_review_prompt(
            [str(BIN / "doit"), "loop"], project, env, ["exit"], tmp_path / "loop.log", width=80
        )
        assert status == 0, transcript[-3000:]
        assert fake.requests, "Phase 1 never reached the endpoint"
        assert {headers.get("authorization") for headers in fake.headers} == {f"Bearer {KEY}"}

    (run_dir,) = list_runs(project / "runs")
    traces = {read_trace(path).task_id: read_trace(path) for path in (run_dir.root / "traces").glob("*.json")}
    assert set(traces) == {"cheapest-harbour-book", "orders-of-alice"}
    search = traces["cheapest-harbour-book"]
    assert tools_called(search) == ["search_books"] * 3
    assert search.status == "completed" and "Harbour Birds" in (search.final_answer or "")
    assert tools_called(traces["orders-of-alice"]) == ["order_count"]
    assert read_model(run_dir.bug_report, BugReport).bugs, "paging for the cheapest book is waste to report"
    assert read_model(run_dir.review, Review).decision == "exit"
    assert run_dir.session_summary.exists()

    leaked = [
        path
        for path in project.rglob("*")
        if path.is_file() and path.name != ".env" and KEY.encode() in path.read_bytes()
    ]
    assert leaked == []
