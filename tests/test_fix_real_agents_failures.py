"""Phase 3's failure paths with the real opencode and Claude Code CLIs, each driven by a scripted provider.

The order book of tests/test_fix_real_agents.py is traced, evaluated and
approved once (the module's `approved` project); each test fixes a copy of it
with `mcpipechekr fix`, the real CLI editing through its own tools:

- a change that breaks the server is never committed: the health check's error
  is the next run's feedback, and the repaired change is what gets committed;
- writes outside the repository are refused by the CLI, a hook planted in
  `.git` is removed, the agent's own commit is folded into the loop's one, and
  no push reaches the (local, bare) remote;
- no promise within `fix.max_iterations`: unresolved, the work tree restored,
  every run's output kept in the run folder;
- a hung agent is stopped at `fix.timeout_s` with every process it started.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import git
import pytest
import yaml
from fakes import anthropic_server as anthropic
from fakes import openai_server as openai
from fakes.agent_cli import require_cli
from project import doit, mcpipechekr
from test_fix_real_agents import BUG_ID, DONE, NEW, OLD, make_project, project_env, succeeded

from mcpipechekr.artifacts import list_runs
from mcpipechekr.artifacts.fix_record import FixRecord, read_fix_record
from mcpipechekr.findings.home import HOME_ENV, Home
from mcpipechekr.findings.lifecycle.store import load_findings

# Its module fixtures are costly: under pytest-xdist one worker runs the whole module, building them once.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("test_fix_real_agents_failures")]

BROKEN = "SORTABLE = ("  # a SyntaxError: the server cannot start
HANG_TIMEOUT_S = 60  # opencode starts and asks well within it even with the suite running in parallel


@pytest.fixture(scope="module")
def approved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The order book traced and evaluated once, its report (one paging gap) approved for fixing."""
    binary = require_cli("opencode", "MCPIPECHEKR_OPENCODE")
    root = tmp_path_factory.mktemp("approved")
    project = make_project(root / "shop", "opencode", "http://127.0.0.1:9/v1")
    env = project_env(root)
    env["MCPIPECHEKR_OPENCODE"] = binary
    succeeded(mcpipechekr(project, env, "baseline"))
    succeeded(doit(project, env, "trace", "evaluate"))
    (run,) = list_runs(project / "runs")
    succeeded(mcpipechekr(project, env, "review", run.run_id, "--approve"))
    return root


def copy_of(approved: Path, tmp_path: Path, agent: str, base_url: str, **fix: Any) -> tuple[Path, dict]:
    """A copy of the approved project whose config names `agent`, the fake endpoint and `fix` settings."""
    shutil.copytree(approved, tmp_path / "copy", symlinks=True)
    root = tmp_path / "copy"
    project = root / "shop"
    config_path = project / "config.yaml"
    config = yaml.safe_load(config_path.read_text())
    config["providers"]["endpoints"]["fake"]["base_url"] = base_url
    config["fix"] = {"agent": agent, "max_iterations": 1, "timeout_s": 60, **fix}
    config_path.write_text(yaml.safe_dump(config))
    env = project_env(root)
    env["MCPIPECHEKR_OPENCODE"] = require_cli("opencode", "MCPIPECHEKR_OPENCODE")
    env["MCPIPECHEKR_CLAUDE"] = require_cli("claude", "MCPIPECHEKR_CLAUDE")
    assert env[HOME_ENV] == str(root / "findings")
    return project, env


def fix(project: Path, env: dict, *, expect_rc: int = 0) -> FixRecord:
    (run,) = list_runs(project / "runs")
    result = mcpipechekr(project, env, "fix", run.run_id, timeout=180)
    assert result.returncode == expect_rc, result.stdout[-3000:] + result.stderr[-3000:]
    return read_fix_record(run.fix_record)


def prompt_text(body: dict[str, Any]) -> str:
    """The first user message of an Anthropic request: the fix prompt Claude Code was given."""
    for message in body.get("messages") or []:
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
            return "".join(block.get("text", "") for block in content if isinstance(block, dict))
    return ""


def claude_edit(path: str, old: str, new: str) -> anthropic.Reply:
    return anthropic.tool_use_reply("Edit", {"file_path": path, "old_string": old, "new_string": new})


# --- a change that breaks the server (Claude Code) ---------------------------------------------------


def test_claude_code_breaking_the_server_is_never_committed_and_repairs_it_from_the_health_feedback(
    approved: Path, tmp_path: Path
) -> None:
    prompts: list[str] = []

    def respond(body: dict[str, Any]) -> anthropic.Reply:
        if "Edit" not in anthropic.tool_names(body):
            return anthropic.text_reply("Fix the order book")
        server_py = str(project / "server" / "server.py")
        told = "## The server failed its health check" in prompt_text(body)
        done = len(anthropic.tool_results(body))
        if done == 0:
            prompts.append(prompt_text(body))
            return anthropic.tool_use_reply("Read", {"file_path": server_py})
        if done == 1:
            old, new = (BROKEN, NEW) if told else (OLD, BROKEN)
            return claude_edit(server_py, old, new)
        return anthropic.text_reply(DONE)

    with anthropic.FakeAnthropic(respond) as fake:
        project, env = copy_of(approved, tmp_path, "claude-code", fake.base_url, max_iterations=2)
        record = fix(project, env)

    (entry,) = record.bugs
    assert (entry.status, entry.iterations) == ("committed", 2)
    broken, repaired = entry.runs
    assert broken.promise and broken.health is not None and not broken.health.healthy
    assert "SyntaxError" in (broken.health.error or "")
    assert repaired.health is not None and repaired.health.healthy
    assert len(prompts) == 2 and "SyntaxError" in prompts[1] and "health check" not in prompts[0]
    repo = git.Repo(project / "server")
    assert [c.summary for c in repo.iter_commits()] == [f"fix: {BUG_ID}", "order book"]
    committed = repo.head.commit.tree["server.py"].data_stream.read().decode()
    assert NEW in committed and BROKEN not in committed
    assert record.health is not None and record.health.healthy and record.health.after_commit == entry.commit


# --- outside the repository, inside .git, commits and pushes (opencode) ---------------------------------


def test_opencode_writing_outside_and_into_git_committing_and_pushing_leaves_one_fix_and_no_push(
    approved: Path, tmp_path: Path
) -> None:
    steps: list[tuple[str, dict[str, Any]]] = []
    results: list[str] = []

    def respond(body: dict[str, Any]) -> openai.Reply:
        if "edit" not in {tool["function"]["name"] for tool in body.get("tools") or []}:
            return openai.text_reply("Fix the order book")
        done = [m.get("content") or "" for m in body.get("messages") or [] if m.get("role") == "tool"]
        results[:] = [str(content) for content in done]
        if len(done) < len(steps):
            return openai.tool_call_reply(*steps[len(done)])
        return openai.text_reply(DONE)

    with openai.FakeOpenAI(respond) as fake:
        project, env = copy_of(approved, tmp_path, "opencode", fake.base_url)
        server = project / "server"
        remote = tmp_path / "remote.git"
        git.Repo.init(remote, bare=True)
        repo = git.Repo(server)
        repo.create_remote("origin", str(remote))
        repo.git.push("origin", "HEAD:refs/heads/main")
        published = git.Repo(remote).heads.main.commit.hexsha
        outside = project / "outside.txt"
        hook = server / ".git" / "hooks" / "pre-commit"
        marker = tmp_path / "hook-ran"
        identity = "git -c user.name=agent -c user.email=agent@example.com"
        steps += [
            ("read", {"filePath": str(server / "server.py")}),
            ("edit", {"filePath": str(server / "server.py"), "oldString": OLD, "newString": NEW}),
            ("write", {"filePath": str(outside), "content": "escaped"}),
            ("write", {"filePath": str(hook), "content": f"#!/bin/sh\ntouch {marker}\n"}),
            ("bash", {"command": f"{identity} commit --no-verify -qam wip", "description": "commit"}),
            ("bash", {"command": "git push origin HEAD:refs/heads/main", "description": "push"}),
            ("bash", {"command": f"env git push {remote} HEAD:refs/heads/main", "description": "push"}),
        ]
        record = fix(project, env)

    (entry,) = record.bugs
    assert entry.status == "committed" and entry.files_changed == ["server.py"]
    assert not outside.exists(), results[2]  # refused by opencode: outside the repository
    assert not hook.exists() and not marker.exists()
    assert git.Repo(remote).heads.main.commit.hexsha == published  # no push reached the remote
    assert [c.summary for c in repo.iter_commits()] == [f"fix: {BUG_ID}", "order book"]
    assert repo.head.commit.stats.files.keys() == {"server.py"}
    assert ".git/hooks/pre-commit: created by the agent; removed" in entry.undone
    assert "1 commit(s) made by the agent itself: folded back into the one fix commit" in entry.undone
    assert not repo.is_dirty(untracked_files=True)


# --- escapes through its own shell tool, in the sandbox (opencode) -----------------------------------------

PLANTED_KEY = "-----BEGIN OPENSSH PRIVATE KEY----- planted-for-the-sandbox-test"


def test_opencode_escaping_through_its_shell_tool_is_stopped_by_the_sandbox(
    approved: Path, tmp_path: Path
) -> None:
    """Its bash tool writes outside by python and by a computed path, pushes with the protocol lifted and
    with `env -u`, leaves a detached process to edit later, reads a planted ~/.ssh key: none of it lands."""
    steps: list[tuple[str, dict[str, Any]]] = []
    results: list[str] = []

    def respond(body: dict[str, Any]) -> openai.Reply:
        if "edit" not in {tool["function"]["name"] for tool in body.get("tools") or []}:
            return openai.text_reply("Fix the order book")
        done = [m.get("content") or "" for m in body.get("messages") or [] if m.get("role") == "tool"]
        results[:] = [str(content) for content in done]
        if len(done) < len(steps):
            return openai.tool_call_reply(*steps[len(done)])
        return openai.text_reply(DONE)

    def bash(command: str) -> tuple[str, dict[str, Any]]:
        return ("bash", {"command": command, "description": "run"})

    with openai.FakeOpenAI(respond) as fake:
        project, env = copy_of(approved, tmp_path, "opencode", fake.base_url)
        home = Path(env["HOME"])
        (home / ".ssh").mkdir(parents=True, exist_ok=True)
        (home / ".ssh" / "id_rsa").write_text(PLANTED_KEY + "\n")
        server = project / "server"
        remote = tmp_path / "remote.git"
        git.Repo.init(remote, bare=True)
        repo = git.Repo(server)
        repo.create_remote("origin", str(remote))
        repo.git.push("origin", "HEAD:refs/heads/main")
        refs = git.Repo(remote).git.for_each_ref()
        outside = tmp_path / "outside"
        outside.mkdir()
        go = server / ".git" / "late-edit-go"  # seen inside the sandbox too, never in the work tree
        marker = f"MCPIPECHEKR_TEST_RUN={uuid.uuid4().hex}"
        env[marker.split("=")[0]] = marker.split("=")[1]
        steps += [
            bash(f"python3 -c \"open('{outside}/by-python.txt', 'w').write('escaped')\""),
            bash(f"sh -c 'echo escaped > $(printf %s {outside})/by-computed-path.txt'"),
            bash(f"GIT_ALLOW_PROTOCOL=file git push {remote} HEAD:refs/heads/by-allow-protocol"),
            bash(f"env -u GIT_ALLOW_PROTOCOL git push {remote} HEAD:refs/heads/by-env-u"),
            # waits for the test's word, given once the fix step is over: a survivor would edit then
            bash(
                f"setsid nohup sh -c 'for i in $(seq 300); do [ -e {go} ] && break; sleep 0.1; done; "
                "echo \\#late-edit >> server.py' >/dev/null 2>&1 &"
            ),
            bash(f"cat {home}/.ssh/id_rsa"),
            ("edit", {"filePath": str(server / "server.py"), "oldString": OLD, "newString": NEW}),
        ]
        record = fix(project, env)
    go.touch()
    time.sleep(1.0)  # a detached process that survived the run polls for it every 0.1 s
    go.unlink()

    (entry,) = record.bugs
    assert record.sandbox == "bwrap"
    assert entry.status == "committed" and entry.files_changed == ["server.py"], results
    assert list(outside.iterdir()) == [], results[:2]
    assert git.Repo(remote).git.for_each_ref() == refs, results[2:4]
    assert "late-edit" not in (server / "server.py").read_text()
    assert not repo.is_dirty(untracked_files=True)
    assert processes_with(marker) == []
    assert not any(PLANTED_KEY in result for result in results)
    assert len(results) == len(steps)
    assert any("Read-only file system" in line for line in entry.runs[0].refused) or any(
        "Read-only file system" in result for result in results[:2]
    )


# --- no promise (Claude Code) ----------------------------------------------------------------------------


def test_claude_code_without_a_promise_is_unresolved_restored_and_its_output_kept(
    approved: Path, tmp_path: Path
) -> None:
    said = "I could not finish: list_orders needs a migration first."

    def respond(body: dict[str, Any]) -> anthropic.Reply:
        if "Edit" not in anthropic.tool_names(body):
            return anthropic.text_reply("Fix the order book")
        server_py = str(project / "server" / "server.py")
        done = len(anthropic.tool_results(body))
        if done == 0:
            return anthropic.tool_use_reply("Read", {"file_path": server_py})
        if done == 1 and OLD in (project / "server" / "server.py").read_text():
            return claude_edit(server_py, OLD, NEW)
        return anthropic.text_reply(said)

    with anthropic.FakeAnthropic(respond) as fake:
        project, env = copy_of(approved, tmp_path, "claude-code", fake.base_url, max_iterations=2)
        record = fix(project, env, expect_rc=1)  # a bug left unresolved

    (entry,) = record.bugs
    assert (entry.status, entry.iterations, entry.commit) == ("unresolved", 2, None)
    assert [run.promise for run in entry.runs] == [False, False]
    assert "no completion promise after 2 run(s)" in (entry.reason or "") and said in (entry.reason or "")
    assert entry.files_changed == ["server.py"]
    assert OLD in (project / "server" / "server.py").read_text()  # restored
    repo = git.Repo(project / "server")
    assert len(list(repo.iter_commits())) == 1 and not repo.is_dirty(untracked_files=True)
    (run,) = list_runs(project / "runs")
    for agent_run in entry.runs:
        assert said in (run.root / agent_run.log).read_text()


# --- a hung agent (opencode) -------------------------------------------------------------------------------


def processes_with(marker: str) -> list[int]:
    """Pids of live processes whose environment holds `marker` (Linux /proc)."""
    found = []
    needle = marker.encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle in (entry / "environ").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


@pytest.fixture
def release() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="reads processes' environments in /proc")
def test_a_hung_opencode_is_stopped_at_the_timeout_with_everything_it_started(
    approved: Path, tmp_path: Path, release: threading.Event
) -> None:
    asked = threading.Event()

    def respond(body: dict[str, Any]) -> openai.Reply:
        if "edit" not in {tool["function"]["name"] for tool in body.get("tools") or []}:
            return openai.text_reply("Fix the order book")
        asked.set()
        release.wait(timeout=90)  # the model never answers while the agent runs
        return openai.text_reply(DONE)

    with openai.FakeOpenAI(respond) as fake:
        # long enough for opencode to start and ask on a loaded machine; then it waits for ever
        project, env = copy_of(approved, tmp_path, "opencode", fake.base_url, timeout_s=HANG_TIMEOUT_S)
        marker = f"MCPIPECHEKR_TEST_RUN={uuid.uuid4().hex}"
        key, value = marker.split("=", 1)
        env[key] = value
        record = fix(project, env, expect_rc=1)
        assert asked.is_set(), "opencode never reached the scripted provider"
        assert processes_with(marker) == [], "the agent's processes outlived the fix"
    (entry,) = record.bugs
    assert entry.status == "unresolved" and entry.runs[0].timed_out
    assert "timed out" in (entry.reason or "")
    assert HANG_TIMEOUT_S <= entry.runs[0].elapsed_s < HANG_TIMEOUT_S + 30
    assert not git.Repo(project / "server").is_dirty(untracked_files=True)
    assert os.environ.get(key) is None


# --- verifying its own fix through the findings server ----------------------------------------------------

FINDING_CASE = {
    "arguments": {"customer": "Mira Castell", "page": 1, "sort": "oldest"},
    "expect": {"equals_paths": {"/structuredContent/orders/0/id": "SO-0203"}},  # her first order, by date
}


def findings_tool(names: list[str], tool: str) -> str:
    """The CLI's name for a findings-server tool (opencode: `findings_verify_fix`, Claude Code:
    `mcp__findings__verify_fix`)."""
    (name,) = [name for name in names if name.endswith(tool) and "findings" in name]
    return name


def bug_finding(project: Path) -> str:
    """The id of BUG_ID's finding, as the project's findings home registered it."""
    (finding,) = [f.id for f in load_findings(Home(project.parent / "findings")) if f.bug_id == BUG_ID]
    return finding


def verify_around(
    finding: str, names: list[str], edits: list[tuple[str, dict[str, Any]]]
) -> list[tuple[str, dict]]:
    """The agent's script: write the finding's case, verify (red), make `edits`, verify (green)."""
    case = {"finding_id": finding, "confirm_read_only": True, **FINDING_CASE}
    verify = (findings_tool(names, "verify_fix"), {"finding_id": finding})
    return [(findings_tool(names, "generate_case"), case), verify, *edits, verify]


def test_opencode_verifies_red_edits_verifies_green_then_promises_through_the_findings_server(
    approved: Path, tmp_path: Path
) -> None:
    """The finding's case is red on the old code and green on the fix; only then does the agent promise."""
    prompts: list[str] = []
    answers: list[str] = []

    def respond(body: dict[str, Any]) -> openai.Reply:
        names = [tool["function"]["name"] for tool in body.get("tools") or []]
        if "edit" not in names:
            return openai.text_reply("Fix the order book")
        done = [str(m.get("content")) for m in body.get("messages") or [] if m.get("role") == "tool"]
        if not done:
            prompts.append(openai.last_user_text(body))
        answers[:] = done
        server_py = str(project / "server" / "server.py")
        script = verify_around(
            bug_finding(project),
            names,
            [("edit", {"filePath": server_py, "oldString": OLD, "newString": NEW})],
        )
        if len(done) < len(script):
            return openai.tool_call_reply(*script[len(done)])
        return openai.text_reply(DONE)

    with openai.FakeOpenAI(respond) as fake:
        project, env = copy_of(approved, tmp_path, "opencode", fake.base_url)
        record = fix(project, env)

    finding = bug_finding(project)
    (entry,) = record.bugs
    assert entry.status == "committed" and entry.files_changed == ["server.py"]
    assert f"knows this defect as finding `{finding}`" in prompts[0]
    generated, red, _, green = answers
    assert "SO-0203" in generated and "oldest" in generated
    assert f"{finding}: red (" in red and "advisory, not credited" in red
    assert f"{finding}: green (" in green and "advisory, not credited" in green
    assert (Path(env[HOME_ENV]) / "cases" / f"{finding}.yaml").is_file()


def test_claude_code_verifies_red_edits_verifies_green_then_promises_through_the_findings_server(
    approved: Path, tmp_path: Path
) -> None:
    """The same loop through Claude Code: the server from `--mcp-config`, its tools allowed up front."""
    answers: list[str] = []

    def respond(body: dict[str, Any]) -> anthropic.Reply:
        names = anthropic.tool_names(body)
        if "Edit" not in names:
            return anthropic.text_reply("Fix the order book")
        done = anthropic.tool_results(body)
        answers[:] = [str(result.get("content")) for result in done]
        server_py = str(project / "server" / "server.py")
        edit = {"file_path": server_py, "old_string": OLD, "new_string": NEW}
        script = verify_around(
            bug_finding(project), names, [("Read", {"file_path": server_py}), ("Edit", edit)]
        )
        if len(done) < len(script):
            return anthropic.tool_use_reply(*script[len(done)])
        return anthropic.text_reply(DONE)

    with anthropic.FakeAnthropic(respond) as fake:
        project, env = copy_of(approved, tmp_path, "claude-code", fake.base_url)
        record = fix(project, env)

    finding = bug_finding(project)
    (entry,) = record.bugs
    assert entry.status == "committed" and entry.files_changed == ["server.py"]
    red, green = answers[1], answers[4]
    assert f"{finding}: red (" in red and f"{finding}: green (" in green
    assert "--mcp-config" in (entry.agent_command or "")
