"""The opencode runner: the real opencode CLI against a scripted OpenAI-compatible server and the real
example server behind the capture proxy; its converter on recorded exports; the shared CLI plumbing.

Only the model's side is scripted (tests/fakes/agent_scenarios.py); every tool result comes from the
live emailindex server, and the converted trace is checked against the proxy's journal call for call.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from fakes.agent_cli import isolated_home, require_cli, stalling_binary, wait_gone
from fakes.agent_scenarios import (
    DONE,
    ECHO_TASK,
    FINAL,
    FIRST_ARGS,
    PROMPT,
    SECOND_ARGS,
    SECRET,
    TASK_ID,
    THINKING,
    USAGE,
    ScriptLog,
    capture_server_config,
    files_containing,
    make_request,
    openai_call_then_answer,
    openai_responder,
    write_config,
)
from fakes.net import free_port, wait_port
from fakes.openai_server import FakeOpenAI, Reply, last_user_text

from mcpipechekr.artifacts.journal import read_journal
from mcpipechekr.artifacts.trace import ModelTurn, ToolCall, read_trace, write_trace
from mcpipechekr.capture import journal_tool_calls
from mcpipechekr.config import Config, ServerConfig, TimeoutsConfig
from mcpipechekr.errors import ServerHalt, UserError
from mcpipechekr.providers import EndpointConfig, ProviderSpec
from mcpipechekr.runners.assemble import assemble_trace
from mcpipechekr.runners.base import AgentServer, RunnerOutput, RunRequest
from mcpipechekr.runners.claude_code import ClaudeCodeRunner
from mcpipechekr.runners.cliagent import AgentCliMissing, SecretEnv, SessionFormatError, find_cli, run_cli
from mcpipechekr.runners.demo import DemoRunner
from mcpipechekr.runners.execute import run_phase1
from mcpipechekr.runners.opencode import OpencodeRunner
from mcpipechekr.runners.opencode_config import build_opencode_config
from mcpipechekr.runners.opencode_export import (
    convert_opencode_export,
    export_from_events,
    opencode_session_prompt,
    parse_event_lines,
    session_id_from_events,
)
from mcpipechekr.runners.registry import runner_factory
from mcpipechekr.tasks import Task

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "opencode"


def export_fixture() -> dict:
    return json.loads((FIXTURES / "find-first.export.json").read_text())


def check_scripted_steps(steps: list, *, with_results: bool) -> None:
    """The scripted task's five steps: turn, count_emails, turn, failing query, final turn."""
    assert [step.kind for step in steps] == ["model", "tool_call", "model", "tool_call", "model"]
    turns = [step for step in steps if isinstance(step, ModelTurn)]
    calls = [step for step in steps if isinstance(step, ToolCall)]
    assert [(turn.usage.input_tokens, turn.usage.output_tokens) for turn in turns] == USAGE
    assert {turn.usage.source for turn in turns} == {"reported"}
    assert turns[0].thinking == [THINKING]
    assert turns[2].text == FINAL
    assert [(call.tool, call.arguments) for call in calls] == [
        ("count_emails", FIRST_ARGS),
        ("query_email_database", SECOND_ARGS),
    ]
    assert [call.is_error for call in calls] == [False, True]
    if with_results:
        assert json.loads(calls[0].result_content[0]["text"]) == {"count": 0}
        assert "no such column: fts.rank" in calls[1].error_text


@pytest.mark.slow
def test_opencode_runs_the_task_through_the_proxy(tmp_path: Path, emailindex_dir: Path, emailindex_db: Path):
    binary = require_cli("opencode", "MCPIPECHEKR_OPENCODE")
    log = ScriptLog()
    with FakeOpenAI(openai_responder("emailindex_", log)) as fake:
        config = write_config(tmp_path, emailindex_dir, emailindex_db, {"fake": {"base_url": fake.base_url}})
        request = make_request(config, tmp_path, ProviderSpec(provider="fake", model="fake-model"))
        runner = OpencodeRunner(binary=binary, env=isolated_home(tmp_path / "home"))
        output = anyio.run(runner.run, request)

    assert output.status == "completed", output.status_reason
    assert output.final_answer == FINAL
    assert output.model == "fake-model"
    check_scripted_steps(output.steps, with_results=True)

    # The model saw exactly the prompt and only the server's tools; no title request was made.
    assert last_user_text(log.task_requests[0]) == PROMPT
    offered = {tool["function"]["name"] for tool in log.task_requests[0]["tools"]}
    assert offered == {"emailindex_count_emails", "emailindex_get_email", "emailindex_query_email_database"}
    assert log.other_requests == []

    # The runner's calls are the journal's, call for call, with the live server's results.
    journal = journal_tool_calls(request.journal)
    runner_calls = [step for step in output.steps if isinstance(step, ToolCall)]
    assert [(c.tool, c.arguments, c.is_error) for c in journal] == [
        (c.tool, c.arguments, c.is_error) for c in runner_calls
    ]
    assert json.loads(journal[0].result_content[0]["text"]) == json.loads(
        runner_calls[0].result_content[0]["text"]
    )

    trace = assemble_trace(request, output, journal, runner="opencode")
    assert trace.status_reason is None  # the export and the wire agree
    assert (trace.totals.tool_calls, trace.totals.errors, trace.totals.input_tokens) == (2, 1, 606)
    written = read_trace(write_trace(tmp_path / "run", trace))
    assert (written.runner, written.task_id, written.prompt) == ("opencode", TASK_ID, PROMPT)

    # The planted secret reached the server (through the environment) but no file written here.
    leaks = [path for path in files_containing(tmp_path, SECRET) if path.name != "config.yaml"]
    assert leaks == []
    # opencode worked in the attempt's empty folder, not in the folder the tests run from.
    export = json.loads((request.workdir / "opencode-export.json").read_text())
    assert export["info"]["directory"] == str(request.workdir / "opencode-project")
    assert {"mcpipechekr-opencode.json", "opencode-export.json", "opencode-events.jsonl"} <= {
        path.name for path in request.workdir.iterdir()
    }


def test_the_recorded_export_converts_to_the_scripted_steps():
    output = convert_opencode_export(export_fixture(), server_name="emailindex", max_requests=10)
    assert (output.status, output.final_answer, output.model) == ("completed", FINAL, "fake-model")
    check_scripted_steps(output.steps, with_results=True)
    assert output.started_at is not None and output.ended_at is not None
    assert opencode_session_prompt(export_fixture()) == PROMPT


def test_the_event_stream_converts_like_the_export():
    events = parse_event_lines((FIXTURES / "find-first.events.jsonl").read_text().splitlines())
    session = session_id_from_events(events)
    assert session == export_fixture()["info"]["id"]
    output = convert_opencode_export(export_from_events(events, session), server_name="emailindex")
    assert output.status == "completed"
    check_scripted_steps(output.steps, with_results=True)


def test_tool_names_are_mapped_back_only_for_the_server():
    export = export_fixture()
    other = convert_opencode_export(export, server_name="elsewhere")
    assert [step.tool for step in other.steps if isinstance(step, ToolCall)] == [
        "emailindex_count_emails",
        "emailindex_query_email_database",
    ]
    as_named = convert_opencode_export(export, server_name=None)
    assert [step.tool for step in as_named.steps if isinstance(step, ToolCall)][
        0
    ] == "emailindex_count_emails"


def test_limits_errors_and_cut_sessions_set_the_status():
    limited = convert_opencode_export(export_fixture(), server_name="emailindex", max_requests=3)
    assert (limited.status, limited.status_reason) == ("incomplete", "reached the limit of 3 model requests")

    failed = export_fixture()
    failed["messages"][-1]["info"]["error"] = {"name": "APIError", "data": {"message": "rate limited"}}
    result = convert_opencode_export(failed, server_name="emailindex")
    assert result.status == "error" and "rate limited" in result.status_reason

    cut = export_fixture()
    cut["messages"] = cut["messages"][:2]  # the prompt and the first step only
    running = cut["messages"][1]["parts"]
    tool = next(part for part in running if part["type"] == "tool")
    tool["state"] = {"status": "running", "input": tool["state"]["input"]}
    result = convert_opencode_export(cut, server_name="emailindex")
    assert (result.status, result.final_answer) == ("incomplete", None)
    call = next(step for step in result.steps if isinstance(step, ToolCall))
    assert call.is_error and "still running" in call.error_text


@pytest.mark.parametrize(
    ("mutate", "where"),
    [
        (lambda export: export.pop("messages"), "messages: missing"),
        (lambda export: export["info"].pop("id"), "info.id: missing session id"),
        (lambda export: export["messages"][1].pop("parts"), "messages[1].parts: missing"),
        (
            lambda export: export["messages"][1]["parts"][2].pop("state"),
            "messages[1].parts[2]: tool part without",
        ),
    ],
)
def test_a_malformed_export_is_refused_naming_the_place(mutate, where):
    export = export_fixture()
    mutate(export)
    with pytest.raises(SessionFormatError, match=re.escape(where)):
        convert_opencode_export(export, server_name="emailindex")
    with pytest.raises(SessionFormatError, match="top level: expected a JSON object"):
        convert_opencode_export([export], server_name="emailindex")


def test_the_per_run_config_allows_only_the_server_and_holds_no_secret(
    tmp_path: Path, emailindex_dir, emailindex_db
):
    config = write_config(
        tmp_path,
        emailindex_dir,
        emailindex_db,
        {"local": {"base_url": "http://127.0.0.1:9/v1", "api_key_env": "K"}},
    )
    request = make_request(config, tmp_path, ProviderSpec(provider="local", model="m1"), max_requests=4)
    secrets = SecretEnv("S_")
    built = build_opencode_config(request, secrets)
    assert built["permission"] == {"*": "deny", "emailindex_*": "allow"}
    assert built["agent"]["build"]["steps"] == 4
    assert built["provider"]["local"]["options"] == {"baseURL": "http://127.0.0.1:9/v1", "apiKey": "{env:K}"}
    assert built["mcp"]["emailindex"]["type"] == "local" and SECRET not in json.dumps(built)
    assert build_opencode_config(request, secrets, keep_builtin_tools=True)["permission"] == {"*": "allow"}

    http = AgentServer(
        name="mail.box", url="http://127.0.0.1:9/mcp", headers={"Authorization": f"Bearer {SECRET}"}
    )
    remote = build_opencode_config(
        make_request(config, tmp_path, ProviderSpec(provider="openai", model="gpt-4o")).__class__(
            **{**request.__dict__, "server": http}
        ),
        secrets,
    )
    assert remote["mcp"]["mail_box"]["headers"] == {"Authorization": "{env:S_0}"}
    assert remote["permission"] == {"*": "deny", "mail_box_*": "allow"}
    assert secrets.values == {"S_0": f"Bearer {SECRET}"} and SECRET not in json.dumps(remote)


def test_a_missing_cli_names_the_install_and_the_variable(monkeypatch, tmp_path: Path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("MCPIPECHEKR_OPENCODE", raising=False)
    with pytest.raises(AgentCliMissing, match=r"npm install -g opencode-ai.*MCPIPECHEKR_OPENCODE"):
        find_cli("opencode", "MCPIPECHEKR_OPENCODE", "npm install -g opencode-ai")
    monkeypatch.setenv("MCPIPECHEKR_OPENCODE", str(tmp_path / "nope"))
    with pytest.raises(AgentCliMissing, match="not an executable file"):
        find_cli("opencode", "MCPIPECHEKR_OPENCODE", "npm install -g opencode-ai")
    monkeypatch.setenv("MCPIPECHEKR_OPENCODE", sys.executable)
    assert find_cli("opencode", "MCPIPECHEKR_OPENCODE", "x") == sys.executable


CHILD_SCRIPT = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
print(child.pid, flush=True)
print("working", flush=True)
time.sleep(60)
"""


def test_a_timeout_stops_the_whole_process_group_and_keeps_the_output(tmp_path: Path):
    started = time.monotonic()
    result = anyio.run(
        lambda: run_cli(
            [sys.executable, "-c", CHILD_SCRIPT],
            env=dict(os.environ),
            cwd=tmp_path,
            stdin_text=None,
            timeout_s=2.0,
        )
    )
    assert result.timed_out and time.monotonic() - started < 10
    assert result.stdout_lines[1:] == ["working"]
    child = int(result.stdout_lines[0])
    assert wait_gone(child), "the CLI's child survived the timeout"


def test_a_cli_gets_its_prompt_on_stdin_and_its_exit_code(tmp_path: Path):
    script = "import sys; data = sys.stdin.read(); print(repr(data)); sys.exit(3)"
    result = anyio.run(
        lambda: run_cli(
            [sys.executable, "-c", script],
            env=dict(os.environ),
            cwd=tmp_path,
            stdin_text=PROMPT,
            timeout_s=30,
        )
    )
    assert (result.returncode, result.timed_out, result.stdout_lines) == (3, False, [repr(PROMPT)])


def test_export_fixture_is_not_modified_by_conversion():
    export = export_fixture()
    before = copy.deepcopy(export)
    convert_opencode_export(export, server_name="emailindex")
    assert export == before


def test_a_timed_out_run_keeps_what_the_agent_did(tmp_path: Path, emailindex_dir: Path, emailindex_db: Path):
    binary, child_file = stalling_binary(tmp_path, FIXTURES / "find-first.events.jsonl", 4)
    config = write_config(tmp_path, emailindex_dir, emailindex_db)
    request = make_request(config, tmp_path, ProviderSpec(provider="openai", model="gpt-4o"))
    request = dataclasses.replace(request, timeout_s=3.0)
    started = time.monotonic()
    output = anyio.run(OpencodeRunner(binary=binary).run, request)
    assert time.monotonic() - started < 3.0 + 8  # stopped, and no export attempted after the deadline
    assert (output.status, output.status_reason) == ("timeout", "no final answer within the task's 3 s")
    assert [step.kind for step in output.steps] == ["model", "tool_call"]
    assert output.steps[1].tool == "count_emails" and output.steps[0].thinking == [THINKING]
    assert wait_gone(int(child_file.read_text()))  # killed as the run ended


def test_keep_builtin_tools_reaches_the_agent_cli_runners_only(tmp_path: Path) -> None:
    config = Config(server=ServerConfig(name="emailindex", command="python", args=["server.py"]))
    spec = ProviderSpec(provider="fake", model="fake-model")
    kept = runner_factory(config, "opencode", keep_builtin_tools=True)(spec)
    assert isinstance(kept, OpencodeRunner) and kept.keep_builtin_tools
    kept = runner_factory(config, "claude-code", keep_builtin_tools=True)(spec)
    assert isinstance(kept, ClaudeCodeRunner) and kept.keep_builtin_tools
    assert not runner_factory(config, "opencode")(spec).keep_builtin_tools  # type: ignore[attr-defined]
    demo = runner_factory(config, "opencode", keep_builtin_tools=True)(ProviderSpec(provider="demo"))
    assert isinstance(demo, DemoRunner), "the demo model runs natively whatever the runner"
    with pytest.raises(UserError, match="the native runner's agent has no tools but the server's"):
        runner_factory(config, "native", keep_builtin_tools=True)


@pytest.mark.slow
def test_opencode_reaches_an_http_server_through_the_run_proxy(
    tmp_path: Path, emailindex_dir: Path, emailindex_env: dict[str, str]
) -> None:
    """A Node HTTP client, not only httpx, through the HTTP capture proxy on the run's event loop."""
    binary = require_cli("opencode", "MCPIPECHEKR_OPENCODE")
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "server.py", "--http", str(port)],
        cwd=emailindex_dir,
        env=emailindex_env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_port(port, server, timeout_s=30)
        with FakeOpenAI(openai_responder("emailindex_", ScriptLog())) as fake:
            config = Config(
                server=ServerConfig(name="emailindex", url=f"http://127.0.0.1:{port}/mcp"),
                providers={"endpoints": {"fake": EndpointConfig(base_url=fake.base_url)}},
                timeouts=TimeoutsConfig(task_s=120),
            )
            runner = OpencodeRunner(binary=binary, env=isolated_home(tmp_path / "home"))
            (path,) = run_phase1(
                config,
                tmp_path / "run",
                [Task(task_id=TASK_ID, prompt=PROMPT, task_type="deterministic")],
                [ProviderSpec(provider="fake", model="fake-model")],
                runner_for=lambda spec: runner,
                progress=False,
            )
    finally:
        server.terminate()
        server.wait(timeout=10)
    trace = read_trace(path)
    assert (trace.status, trace.final_answer, trace.status_reason) == ("completed", FINAL, None)
    calls = [(step.tool, step.arguments, step.is_error) for step in trace.steps if isinstance(step, ToolCall)]
    assert calls == [("count_emails", FIRST_ARGS, False), ("query_email_database", SECOND_ARGS, True)]


# --- the agent's shutdown of the server is not a crash; a crash in the middle of a call is -------------


class OwnHomeOpencode(OpencodeRunner):
    """opencode with a home of its own in each attempt's scratch folder: opencode processes starting
    at once on one new home race to create its database."""

    async def run(self, request: RunRequest) -> RunnerOutput:
        runner = OpencodeRunner(binary=self.binary, env=isolated_home(request.workdir / "home"))
        return await runner.run(request)


def capture_server_phase1(
    tmp_path: Path, respond: Callable[[dict], Reply], *, repeat: int = 1, concurrency: int = 1
) -> list[Path]:
    """Phase 1 of one task with opencode against capture_server over stdio, behind the capture proxy."""
    runner = OwnHomeOpencode(binary=require_cli("opencode", "MCPIPECHEKR_OPENCODE"))
    with FakeOpenAI(respond) as fake:
        return run_phase1(
            capture_server_config({"fake": {"base_url": fake.base_url}}),
            tmp_path / "run",
            [ECHO_TASK],
            [ProviderSpec(provider="fake", model="fake-model")],
            repeat=repeat,
            concurrency=concurrency,
            runner_for=lambda spec: runner,
            progress=False,
        )


SHUTDOWN_ATTEMPTS = 6
"""Each attempt costs opencode about 10 s of CPU; `python bench/opencode_shutdown.py` runs 20 and more."""


@pytest.mark.slow
def test_opencode_stopping_its_server_at_shutdown_never_halts_the_run(tmp_path: Path) -> None:
    """opencode SIGTERMs the server behind the proxy as it exits, which used to halt 1 attempt in 3-8."""
    paths = capture_server_phase1(
        tmp_path,
        openai_call_then_answer("cap_", "echo", {"text": "hi"}),
        repeat=SHUTDOWN_ATTEMPTS,
        concurrency=2,
    )
    traces = [read_trace(path) for path in paths]
    assert [(trace.status, trace.final_answer) for trace in traces] == [("completed", DONE)] * len(paths)
    assert len(paths) == SHUTDOWN_ATTEMPTS
    exits = [
        next(r for r in read_journal(journal) if r.event == "server_exited")
        for journal in sorted((tmp_path / "run" / "journals").glob("*.jsonl"))
    ]
    assert len(exits) == SHUTDOWN_ATTEMPTS and all(record.expected for record in exits)
    # Each attempt ended either with the agent letting go first, or with the server's stop seen first.
    assert all(r.detail is None or r.detail.startswith("the agent stopped the server: ") for r in exits)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("arguments", "death"),
    [
        ({"code": 3}, "the server exited with code 3"),
        ({"signal": "SIGTERM"}, "the server was killed by signal SIGTERM"),  # as at shutdown, but mid-call
    ],
)
@pytest.mark.slow
def test_a_server_that_dies_in_the_middle_of_a_call_still_halts_the_run(
    tmp_path: Path, arguments: dict, death: str
) -> None:
    with pytest.raises(ServerHalt) as caught:
        capture_server_phase1(tmp_path, openai_call_then_answer("cap_", "crash", arguments))
    assert caught.value.message.startswith(
        "the server under test failed during task 'echo' (fake/fake-model, repetition 1): "
        f"{death} while the agent was connected\n"
    )
    (path,) = (tmp_path / "run" / "traces").glob("*.json")
    trace = read_trace(path)
    assert (trace.status, trace.status_reason) == (
        "incomplete",
        f"the server failed: {death} while the agent was connected",
    )
    (call,) = [step for step in trace.steps if isinstance(step, ToolCall)]
    assert (call.tool, call.arguments, call.is_error) == ("crash", arguments, True)
    assert call.error_text == f"no result: {death} while the agent was connected"
