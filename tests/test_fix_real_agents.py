"""Phase 3 with the real opencode and Claude Code CLIs as fixers, each driven by a scripted provider.

The server is the order book (tests/servers/orders_server.py), a git repository
of its own: `list_orders` lists a customer's orders in import order, two a page,
so "the first order of Mira Castell" takes three pages, and Phase 2 finds a
paging walk (`GAP-paging-to-find-list-orders`). Everything else is real: the
pipeline runs as `mcpipechekr`/doit subprocesses in the project folder (demo
provider for Phase 1, the server's own scripted demo_agent.py), `review
--approve` approves the report, and `mcpipechekr fix` runs the installed CLI in
the server's repository. Only the fixer's model is scripted: it reads
server.py, edits it with the CLI's own file tool (opencode's `read`/`edit`,
Claude Code's `Read`/`Edit`, whose schemas the CLI sent are checked first) so
that `list_orders` gains its `sort` parameter and description, and answers
with the completion promise. The loop must commit `fix: <bug id>` with only
server.py, restart the server and health-check it; the next run's trace takes
one call, its bug report no longer holds the bug, and the finding in the
findings home goes from fix-claimed to verifying.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import git
import pytest
import yaml
from fakes import anthropic_server as anthropic
from fakes import openai_server as openai
from fakes.agent_cli import isolated_home, require_cli
from project import ROOT, at_the_review_prompt, doit, mcpipechekr

from mcpipechekr.artifacts import BugReport, Trace, list_runs, read_model
from mcpipechekr.artifacts.fix_record import read_fix_record
from mcpipechekr.artifacts.trace import ToolCall
from mcpipechekr.findings.home import HOME_ENV, Home
from mcpipechekr.findings.lifecycle.store import load_findings
from mcpipechekr.fix import PROMISE

pytestmark = pytest.mark.slow

SERVERS = Path(__file__).parent / "servers"
TASK = "first-order-mira"
BUG_ID = "GAP-paging-to-find-list-orders"
OLD = "SORTABLE = False"
NEW = "SORTABLE = True"
DONE = f"list_orders now takes `sort` (oldest or newest first), described in its tool description. {PROMISE}"
TASKS = {
    "tasks": [
        {
            "task_id": TASK,
            "prompt": "Which was the first order placed by Mira Castell? Give its id and date.",
            "task_type": "deterministic",
            "expected_tool": "list_orders",
            "min_calls": 1,
            "reference_calls": [
                {"tool": "list_orders", "arguments": {"customer": "Mira Castell", "page": page}}
                for page in (1, 2, 3)
            ],
        }
    ]
}


def make_project(root: Path, agent: str, base_url: str) -> Path:
    """The order book as its own git repository, with config.yaml naming `agent` and the fake endpoint."""
    server = root / "server"
    server.mkdir(parents=True)
    shutil.copy(SERVERS / "orders_server.py", server / "server.py")
    shutil.copy(SERVERS / "orders_demo_agent.py", server / "demo_agent.py")
    repo = git.Repo.init(server)
    repo.index.add(["server.py", "demo_agent.py"])
    repo.index.commit("order book")
    repo.close()
    providers: dict[str, Any] = {phase: "demo" for phase in ("phase0", "phase05", "phase1", "phase2")}
    providers["phase3"] = "fake/fake-model"
    providers["endpoints"] = {"fake": {"base_url": base_url, "api_key_env": "FAKE_FIXER_KEY"}}
    config = {
        "server": {
            "name": "orders",
            "command": "python",
            "args": ["server.py"],
            "cwd": "server",
            "repo": "server",
        },
        "providers": providers,
        "fix": {"agent": agent, "max_iterations": 1, "timeout_s": 60},
    }
    (root / "config.yaml").write_text(yaml.safe_dump(config))
    (root / "tasks.yaml").write_text(yaml.safe_dump(TASKS, sort_keys=False))
    shutil.copy(ROOT / "dodo.py", root / "dodo.py")
    return root


def project_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(isolated_home(tmp_path / "agent-home"))
    env.update(
        {
            HOME_ENV: str(tmp_path / "findings"),
            "FAKE_FIXER_KEY": "sk-fixer-planted-secret",
            "COLUMNS": "200",
            "NO_COLOR": "1",
            "TERM": "dumb",
            # offline: no update checks, no model catalogue, no telemetry
            "OPENCODE_DISABLE_AUTOUPDATE": "1",
            "OPENCODE_DISABLE_MODELS_FETCH": "1",
            "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
            "OPENCODE_DISABLE_SHARE": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
        }
    )
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def succeeded(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout


def trace_calls(run_root: Path) -> list[ToolCall]:
    (path,) = sorted((run_root / "traces").glob(f"{TASK}__*.json"))
    return [step for step in read_model(path, Trace).steps if isinstance(step, ToolCall)]


def bug_ids(run_root: Path) -> list[str]:
    return [bug.id for bug in read_model(run_root / "bug_report.json", BugReport).bugs]


def finding_state(env: dict[str, str]) -> str:
    (finding,) = [f for f in load_findings(Home(Path(env[HOME_ENV]))) if f.bug_id == BUG_ID]
    return finding.state


def fix_through_the_pipeline(
    project: Path, env: dict[str, str], fake_requests: Callable[[], list[dict]]
) -> None:
    """Trace and evaluate, approve, fix with the real CLI, trace and evaluate again; check every step."""
    succeeded(mcpipechekr(project, env, "baseline"))
    succeeded(doit(project, env, "trace", "evaluate"))
    (before,) = list_runs(project / "runs")
    assert len(trace_calls(before.root)) == 3
    assert bug_ids(before.root) == [BUG_ID]
    assert finding_state(env) == "open"

    succeeded(mcpipechekr(project, env, "review", before.run_id, "--approve"))
    fixed = mcpipechekr(project, env, "fix", before.run_id, timeout=120)
    out = succeeded(fixed)
    assert fake_requests(), "the CLI never reached the scripted provider"

    server = project / "server"
    repo = git.Repo(server)
    head = repo.head.commit
    assert head.message.strip() == f"fix: {BUG_ID}"
    assert sorted(head.stats.files) == ["server.py"]
    assert len(list(repo.iter_commits())) == 2 and not repo.is_dirty(untracked_files=True)
    assert NEW in (server / "server.py").read_text()

    record = read_fix_record(before.fix_record)
    (entry,) = record.bugs
    assert (entry.bug_id, entry.status, entry.files_changed, entry.iterations) == (
        BUG_ID,
        "committed",
        ["server.py"],
        1,
    )
    assert record.commits == [head.hexsha]
    assert record.health is not None and record.health.healthy
    assert record.health.after_commit == head.hexsha and record.health.tools == 2
    assert finding_state(env) == "fix-claimed"
    # the endpoint's key reached the CLI through the environment only, never a file of the run
    logs = [
        p
        for p in before.root.rglob("*")
        if p.is_file() and "sk-fixer-planted-secret" in p.read_text(errors="replace")
    ]
    assert logs == [] and "sk-fixer-planted-secret" not in out

    succeeded(mcpipechekr(project, env, "run"))
    _, after = list_runs(project / "runs")
    succeeded(mcpipechekr(project, env, "evaluate", str(after.root)))
    calls = trace_calls(after.root)
    assert [(c.tool, c.arguments.get("sort")) for c in calls] == [("list_orders", "oldest")]
    assert BUG_ID not in bug_ids(after.root)
    assert finding_state(env) == "verifying"


# --- opencode -----------------------------------------------------------------------------------------


def opencode_script(server_py: Path, seen: list[dict]) -> openai.Responder:
    """read server.py, edit it with opencode's own `edit` tool, then promise."""

    def respond(body: dict[str, Any]) -> openai.Reply:
        tools = {tool["function"]["name"]: tool["function"]["parameters"] for tool in body.get("tools") or []}
        if "edit" not in tools:
            return openai.text_reply("Fix the order book")  # a title or summary request
        seen.append(body)
        done = sum(1 for message in body.get("messages") or [] if message.get("role") == "tool")
        if done == 0:
            assert "filePath" in tools["read"]["properties"]
            return openai.tool_call_reply("read", {"filePath": str(server_py)})
        if done == 1:
            assert {"filePath", "oldString", "newString"} <= set(tools["edit"]["properties"])
            return openai.tool_call_reply(
                "edit", {"filePath": str(server_py), "oldString": OLD, "newString": NEW}
            )
        return openai.text_reply(DONE)

    return respond


def test_opencode_fixes_the_paging_gap_and_the_loop_commits_restarts_and_verifies(tmp_path: Path) -> None:
    binary = require_cli("opencode", "MCPIPECHEKR_OPENCODE")
    seen: list[dict] = []
    project = tmp_path / "shop"
    with openai.FakeOpenAI(opencode_script(project / "server" / "server.py", seen)) as fake:
        make_project(project, "opencode", fake.base_url)
        env = project_env(tmp_path)
        env["MCPIPECHEKR_OPENCODE"] = binary
        fix_through_the_pipeline(project, env, lambda: seen)
        # the key was sent as the endpoint's bearer token, read from the environment
        assert any(h.get("authorization") == "Bearer sk-fixer-planted-secret" for h in fake.headers)
    edits = [m for m in seen[-1]["messages"] if m.get("role") == "tool"]
    assert len(edits) == 2


# --- Claude Code --------------------------------------------------------------------------------------


def claude_script(server_py: Path, seen: list[dict]) -> anthropic.Responder:
    """Read server.py, edit it with Claude Code's own `Edit` tool, then promise."""

    def respond(body: dict[str, Any]) -> anthropic.Reply:
        tools = {tool["name"]: tool.get("input_schema") or {} for tool in body.get("tools") or []}
        if "Edit" not in tools:
            return anthropic.text_reply("Fix the order book")
        seen.append(body)
        done = len(anthropic.tool_results(body))
        if done == 0:
            assert "file_path" in tools["Read"]["properties"]
            return anthropic.tool_use_reply("Read", {"file_path": str(server_py)})
        if done == 1:
            assert {"file_path", "old_string", "new_string"} <= set(tools["Edit"]["properties"])
            return anthropic.tool_use_reply(
                "Edit", {"file_path": str(server_py), "old_string": OLD, "new_string": NEW}
            )
        return anthropic.text_reply(DONE)

    return respond


def test_claude_code_fixes_the_paging_gap_and_the_loop_commits_restarts_and_verifies(tmp_path: Path) -> None:
    binary = require_cli("claude", "MCPIPECHEKR_CLAUDE")
    seen: list[dict] = []
    project = tmp_path / "shop"
    with anthropic.FakeAnthropic(claude_script(project / "server" / "server.py", seen)) as fake:
        make_project(project, "claude-code", fake.base_url)
        env = project_env(tmp_path)
        env["MCPIPECHEKR_CLAUDE"] = binary
        fix_through_the_pipeline(project, env, lambda: seen)
        assert any(h.get("x-api-key") == "sk-fixer-planted-secret" for h in fake.headers)
    results = anthropic.tool_results(seen[-1])
    assert len(results) == 2


# --- `doit loop` with opencode as the fixer -----------------------------------------------------------


def test_doit_loop_with_opencode_fixes_and_the_next_iteration_takes_fewer_calls(tmp_path: Path) -> None:
    """review → approve → the real opencode edits → `fix:` commit → restart → a cheaper second trace."""
    binary = require_cli("opencode", "MCPIPECHEKR_OPENCODE")
    seen: list[dict] = []
    project = tmp_path / "shop"
    with openai.FakeOpenAI(opencode_script(project / "server" / "server.py", seen)) as fake:
        make_project(project, "opencode", fake.base_url)
        env = project_env(tmp_path)
        env["MCPIPECHEKR_OPENCODE"] = binary
        succeeded(doit(project, env, "baseline"))
        status, transcript = at_the_review_prompt(
            [sys.executable, "-m", "doit", "loop"],
            project,
            env,
            ["approve"],  # the second run has no server-side bug left: the loop ends by itself
            tmp_path / "loop.log",
            timeout=120,
            width=200,
        )
    assert status == 0, transcript[-3000:]
    assert "has no server-side bug left to fix" in transcript, transcript[-3000:]
    assert seen, "opencode never reached the scripted provider"

    first, second = list_runs(project / "runs")
    repo = git.Repo(project / "server")
    head = repo.head.commit
    assert head.message.strip() == f"fix: {BUG_ID}" and sorted(head.stats.files) == ["server.py"]
    record = read_fix_record(first.fix_record)
    assert [(entry.bug_id, entry.status) for entry in record.bugs] == [(BUG_ID, "committed")]
    assert record.health is not None and record.health.healthy and record.health.after_commit == head.hexsha
    assert len(trace_calls(second.root)) < len(trace_calls(first.root)) == 3
    assert BUG_ID not in bug_ids(second.root)
    assert finding_state(env) == "verifying"
