"""The Claude Code runner: the real `claude` CLI against a scripted Anthropic Messages server and the
real example server behind the capture proxy; its stream converter on recorded logs.

Only the model's side is scripted (tests/fakes/agent_scenarios.py); every tool result comes from the
live emailindex server, and the converted trace is checked against the proxy's journal call for call.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import queue
import subprocess
import threading
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
    THINKING,
    USAGE,
    ScriptLog,
    anthropic_call_then_answer,
    anthropic_responder,
    capture_server_config,
    files_containing,
    make_request,
    write_config,
)
from fakes.anthropic_server import FakeAnthropic, text_reply, tool_use_reply

from mcpipechekr.artifacts.trace import ModelTurn, ToolCall, read_trace, write_trace
from mcpipechekr.capture import journal_tool_calls, server_failure
from mcpipechekr.errors import ServerHalt, UserError
from mcpipechekr.providers import ProviderSpec
from mcpipechekr.runners.assemble import assemble_trace
from mcpipechekr.runners.base import AgentServer
from mcpipechekr.runners.claude_code import (
    ClaudeCodeRunner,
    build_mcp_config,
    claude_model_env,
    convert_claude_stream,
)
from mcpipechekr.runners.cliagent import SecretEnv, SessionFormatError
from mcpipechekr.runners.execute import run_phase1

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "claude_code"


def fixture_lines(name: str) -> list[str]:
    return (FIXTURES / name).read_text().splitlines()


def check_scripted_steps(steps: list, *, exact_output: bool = True) -> None:
    """The scripted task's five steps: turn, count_emails, turn, failing query, final turn."""
    assert [step.kind for step in steps] == ["model", "tool_call", "model", "tool_call", "model"]
    turns = [step for step in steps if isinstance(step, ModelTurn)]
    calls = [step for step in steps if isinstance(step, ToolCall)]
    assert [turn.usage.input_tokens for turn in turns] == [usage[0] for usage in USAGE]
    assert [turn.usage.cache_read_tokens for turn in turns] == [7, 7, 7]
    if exact_output:
        assert [turn.usage.output_tokens for turn in turns] == [usage[1] for usage in USAGE]
    assert (turns[0].thinking, turns[1].text, turns[2].text, turns[2].thinking) == (
        [THINKING],
        "Now the matches.",
        FINAL,
        ["Report the error."],
    )
    assert [(call.tool, call.arguments, call.is_error) for call in calls] == [
        ("count_emails", FIRST_ARGS, False),
        ("query_email_database", SECOND_ARGS, True),
    ]
    assert calls[0].structured_content == {"count": 0}
    assert "no such column: fts.rank" in calls[1].error_text
    assert calls[0].call_id.startswith("toolu_")


@pytest.mark.slow
def test_claude_code_runs_the_task_through_the_proxy(
    tmp_path: Path, emailindex_dir: Path, emailindex_db: Path
):
    binary = require_cli("claude", "MCPIPECHEKR_CLAUDE")
    log = ScriptLog()
    with FakeAnthropic(anthropic_responder("mcp__emailindex__", log)) as fake:
        config = write_config(tmp_path, emailindex_dir, emailindex_db)
        request = make_request(config, tmp_path, ProviderSpec(provider="anthropic", model="claude-fake-1"))
        env = {
            **isolated_home(tmp_path / "home"),
            "ANTHROPIC_BASE_URL": fake.base_url,
            "ANTHROPIC_API_KEY": "x",
        }
        output = anyio.run(ClaudeCodeRunner(binary=binary, env=env).run, request)

    assert output.status == "completed", output.status_reason
    assert (output.final_answer, output.model) == (FINAL, "claude-fake-1")
    check_scripted_steps(output.steps)

    # The model saw the exact prompt and only the server's tools, sent up front.
    first = log.task_requests[0]
    assert first["messages"][0] == {"role": "user", "content": PROMPT}
    assert sorted(tool["name"] for tool in first["tools"]) == [
        "mcp__emailindex__count_emails",
        "mcp__emailindex__get_email",
        "mcp__emailindex__query_email_database",
    ]
    assert len(log.task_requests) == 3

    journal = journal_tool_calls(request.journal)
    runner_calls = [step for step in output.steps if isinstance(step, ToolCall)]
    assert [(c.tool, c.arguments, c.is_error) for c in journal] == [
        (c.tool, c.arguments, c.is_error) for c in runner_calls
    ]
    assert journal[0].structured_content == runner_calls[0].structured_content == {"count": 0}
    trace = assemble_trace(request, output, journal, runner="claude-code")
    assert trace.status_reason is None
    assert (trace.totals.tool_calls, trace.totals.errors, trace.totals.output_tokens) == (2, 1, 66)
    assert read_trace(write_trace(tmp_path / "run", trace)).runner == "claude-code"

    leaks = [path for path in files_containing(tmp_path, SECRET) if path.name != "config.yaml"]
    assert leaks == []


@pytest.mark.slow
def test_the_request_limit_ends_the_attempt_as_incomplete(
    tmp_path: Path, emailindex_dir: Path, emailindex_db: Path
):
    binary = require_cli("claude", "MCPIPECHEKR_CLAUDE")
    with FakeAnthropic() as fake:
        fake.enqueue(
            *[tool_use_reply("mcp__emailindex__count_emails", {"keywords": "Ron"}) for _ in range(3)]
        )
        fake.enqueue(text_reply("never reached"))
        config = write_config(tmp_path, emailindex_dir, emailindex_db)
        request = make_request(
            config, tmp_path, ProviderSpec(provider="anthropic", model="m"), max_requests=2
        )
        env = {
            **isolated_home(tmp_path / "home"),
            "ANTHROPIC_BASE_URL": fake.base_url,
            "ANTHROPIC_API_KEY": "x",
        }
        output = anyio.run(ClaudeCodeRunner(binary=binary, env=env).run, request)
        assert len(fake.requests) == 2
    assert (output.status, output.status_reason) == ("incomplete", "reached the limit of 2 model requests")
    assert output.final_answer is None
    assert [step.kind for step in output.steps].count("tool_call") == 2


def test_the_recorded_stream_converts_to_the_scripted_steps():
    output = convert_claude_stream(fixture_lines("find-first.jsonl"), server_name="emailindex")
    assert (output.status, output.final_answer, output.model) == ("completed", FINAL, "claude-fake-1")
    check_scripted_steps(output.steps)
    assert output.started_at is not None and output.ended_at >= output.started_at


def test_without_partial_messages_the_billed_output_total_is_kept():
    output = convert_claude_stream(fixture_lines("find-first-no-partial.jsonl"), server_name="emailindex")
    check_scripted_steps(output.steps, exact_output=False)
    outputs = [step.usage.output_tokens for step in output.steps if isinstance(step, ModelTurn)]
    assert sum(outputs) == 66 and min(outputs) >= 1  # the result event's total, shared among the turns


def test_max_turns_and_errors_set_the_status():
    limited = convert_claude_stream(
        fixture_lines("max-turns.jsonl"), server_name="emailindex", max_requests=1
    )
    assert (limited.status, limited.status_reason, limited.final_answer) == (
        "incomplete",
        "reached the limit of 1 model requests",
        None,
    )
    lines = fixture_lines("find-first.jsonl")
    result = json.loads(lines[-1])
    assert result["type"] == "result"
    failed = {**result, "subtype": "error_during_execution", "is_error": True, "errors": ["API Error: 529"]}
    output = convert_claude_stream([*lines[:-1], json.dumps(failed)], server_name="emailindex")
    assert output.status == "error" and "API Error: 529" in output.status_reason
    cut = convert_claude_stream(lines[:-1], server_name="emailindex")
    assert cut.status == "incomplete" and "without a result event" in cut.status_reason


def test_mcp_tool_names_are_mapped_back_only_for_the_server():
    lines = fixture_lines("find-first.jsonl")
    other = convert_claude_stream(lines, server_name="elsewhere")
    assert [s.tool for s in other.steps if isinstance(s, ToolCall)][0] == "mcp__emailindex__count_emails"
    anyone = convert_claude_stream(lines, server_name=None)
    assert [s.tool for s in anyone.steps if isinstance(s, ToolCall)][0] == "count_emails"


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (['{"type": "system", "subtype": "init"}', "not json at all"], "line 2 is not JSON"),
        (['{"type": "assistant", "message": {}}', '["a", "list"]'], "line 2 is not an event object"),
        (['{"type": "system", "subtype": "init"}'], "has no `assistant`, `stream_event` or `result` event"),
        ([], "has no `assistant`"),
    ],
)
def test_a_malformed_stream_is_refused_naming_the_line(lines, message):
    with pytest.raises(SessionFormatError, match=message):
        convert_claude_stream(lines, server_name="emailindex")


def test_the_mcp_config_references_secrets_and_keeps_the_working_folder():
    secrets = SecretEnv("S_")
    stdio = AgentServer(
        name="mail.box", command="/bin/srv", args=("--x",), env={"TOKEN": SECRET}, cwd="/srv/here"
    )
    built = build_mcp_config(stdio, secrets)
    entry = built["mcpServers"]["mail_box"]
    assert entry["env"] == {"TOKEN": "${S_0}"} and secrets.values == {"S_0": SECRET}
    assert entry["args"][-3:] == ["/srv/here", "/bin/srv", "--x"]  # run from its folder
    http = AgentServer(
        name="mail", url="http://127.0.0.1:9/mcp", headers={"Authorization": f"Bearer {SECRET}"}
    )
    remote = build_mcp_config(http, secrets)["mcpServers"]["mail"]
    assert remote == {"type": "http", "url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "${S_1}"}}
    assert SECRET not in json.dumps([built, remote])


def test_the_model_must_speak_anthropic(
    tmp_path: Path, emailindex_dir: Path, emailindex_db: Path, monkeypatch
):
    monkeypatch.setenv("MINI_KEY", "k-123456")
    endpoints = {"mini": {"base_url": "https://api.example.test/anthropic/v1", "api_key_env": "MINI_KEY"}}
    config = write_config(tmp_path, emailindex_dir, emailindex_db, endpoints)
    request = make_request(config, tmp_path, ProviderSpec(provider="anthropic", model="claude-sonnet-4-6"))
    assert claude_model_env(request) == ("claude-sonnet-4-6", {})
    request = make_request(config, tmp_path, ProviderSpec(provider="mini", model="m2"))
    assert claude_model_env(request) == (
        "m2",
        {"ANTHROPIC_BASE_URL": "https://api.example.test/anthropic", "ANTHROPIC_API_KEY": "k-123456"},
    )
    with pytest.raises(UserError, match="runs Anthropic models"):
        claude_model_env(make_request(config, tmp_path, ProviderSpec(provider="openai", model="gpt-4o")))


def test_a_timed_out_run_keeps_what_the_agent_did(tmp_path: Path, emailindex_dir: Path, emailindex_db: Path):
    lines = fixture_lines("find-first.jsonl")
    first_result = next(n for n, line in enumerate(lines) if json.loads(line)["type"] == "user")
    binary, child_file = stalling_binary(tmp_path, FIXTURES / "find-first.jsonl", first_result + 1)
    config = write_config(tmp_path, emailindex_dir, emailindex_db)
    request = make_request(config, tmp_path, ProviderSpec(provider="anthropic", model="claude-fake-1"))
    output = anyio.run(ClaudeCodeRunner(binary=binary).run, dataclasses.replace(request, timeout_s=3.0))
    assert (output.status, output.status_reason) == ("timeout", "no final answer within the task's 3 s")
    assert [step.kind for step in output.steps] == ["model", "tool_call"]
    assert output.steps[1].structured_content == {"count": 0}
    assert wait_gone(int(child_file.read_text()))


# --- Claude Code's shutdown of the server is not a crash; a crash in the middle of a call is ----------


def claude_capture_server_phase1(
    tmp_path: Path, tool: str, arguments: dict, *, repeat: int = 1
) -> list[Path]:
    """Phase 1 of one task with Claude Code against capture_server over stdio, behind the capture proxy."""
    binary = require_cli("claude", "MCPIPECHEKR_CLAUDE")
    with FakeAnthropic(anthropic_call_then_answer("mcp__cap__", tool, arguments)) as fake:
        env = {
            **isolated_home(tmp_path / "home"),
            "ANTHROPIC_BASE_URL": fake.base_url,
            "ANTHROPIC_API_KEY": "x",
        }
        runner = ClaudeCodeRunner(binary=binary, env=env)
        return run_phase1(
            capture_server_config(),
            tmp_path / "run",
            [ECHO_TASK],
            [ProviderSpec(provider="anthropic", model="claude-fake-1")],
            repeat=repeat,
            concurrency=1,
            runner_for=lambda spec: runner,
            progress=False,
        )


@pytest.mark.slow
def test_claude_code_ending_its_server_never_halts_the_run(tmp_path: Path) -> None:
    """Claude Code stops its MCP server by signalling the proxy (SIGINT, then SIGTERM): an expected exit.

    (On a loaded machine it may kill the proxy before the server is gone: the journal then ends
    without `server_exited`, which is no failure either.)"""
    paths = claude_capture_server_phase1(tmp_path, "echo", {"text": "hi"}, repeat=3)
    assert [(read_trace(p).status, read_trace(p).final_answer) for p in paths] == [("completed", DONE)] * 3
    journals = sorted((tmp_path / "run" / "journals").glob("*.jsonl"))
    assert len(journals) == 3 and [server_failure(journal) for journal in journals] == [None] * 3


@pytest.mark.slow
def test_a_server_that_dies_in_the_middle_of_a_call_halts_a_claude_code_run(tmp_path: Path) -> None:
    with pytest.raises(ServerHalt) as caught:
        claude_capture_server_phase1(tmp_path, "crash", {"signal": "SIGTERM"})
    death = "the server was killed by signal SIGTERM while the agent was connected"
    assert caught.value.message.startswith(
        f"the server under test failed during task 'echo' (anthropic/claude-fake-1, repetition 1): {death}\n"
    )
    (path,) = (tmp_path / "run" / "traces").glob("*.json")
    trace = read_trace(path)
    assert (trace.status, trace.status_reason) == ("incomplete", f"the server failed: {death}")
    (call,) = [step for step in trace.steps if isinstance(step, ToolCall)]
    assert (call.tool, call.is_error, call.error_text) == ("crash", True, f"no result: {death}")


# --- why each attempt is a process of its own (claude_code.py, "One process per attempt") ------------


@pytest.mark.slow
def test_a_long_lived_claude_cannot_start_a_clean_conversation(tmp_path: Path) -> None:
    """`/clear`, the only reset a stream-json process has, records itself before the next prompt.

    Should a Claude Code release send the next prompt alone, a process could be kept between
    attempts (as opencode's `serve`): this test then fails, to say so."""
    binary = require_cli("claude", "MCPIPECHEKR_CLAUDE")
    project = tmp_path / "project"
    project.mkdir()
    config = tmp_path / "no-mcp.json"
    config.write_text(json.dumps({"mcpServers": {}}))
    with FakeAnthropic(lambda body: text_reply(DONE)) as fake:
        env = {
            **os.environ,
            **isolated_home(tmp_path / "home"),
            "ANTHROPIC_BASE_URL": fake.base_url,
            "ANTHROPIC_API_KEY": "x",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        }
        argv = [
            binary, "-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose",
            "--no-session-persistence", "--mcp-config", str(config), "--strict-mcp-config",
            "--model", "claude-fake-1", "--max-turns", "2", "--tools", "",
        ]  # fmt: skip
        process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=project,
            env=env,
        )
        events: queue.Queue[dict | None] = queue.Queue()

        def read() -> None:
            for line in process.stdout or []:
                with contextlib.suppress(ValueError):
                    events.put(json.loads(line))
            events.put(None)

        threading.Thread(target=read, daemon=True).start()

        def ask(text: str) -> dict:
            message = {"role": "user", "content": text}
            line = json.dumps(
                {"type": "user", "message": message, "parent_tool_use_id": None, "session_id": ""}
            )
            assert process.stdin is not None
            process.stdin.write(line.encode() + b"\n")
            process.stdin.flush()
            seen = []
            while (event := events.get(timeout=60)) is not None:
                seen.append(event["type"])
                if event["type"] == "result":
                    return {"result": event, "seen": seen}
            raise AssertionError(f"claude exited before answering {text!r}")

        try:
            assert ask("First attempt.")["result"]["subtype"] == "success"
            cleared = ask("/clear")
            assert "conversation_reset" in cleared["seen"] and cleared["result"]["num_turns"] == 0
            assert ask("Second attempt.")["result"]["subtype"] == "success"
        finally:
            if process.stdin is not None:
                process.stdin.close()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        first, second = fake.requests[0]["messages"], fake.requests[-1]["messages"]
    assert len(fake.requests) == 2  # `/clear` asks the model nothing
    assert first[0] == {"role": "user", "content": "First attempt."}  # a fresh process: the prompt alone
    assert "First attempt." not in json.dumps(second)  # the earlier conversation is gone ...
    blocks = second[0]["content"]  # ... but the command is recorded before the next prompt
    assert [block["text"] for block in blocks][-1] == "Second attempt."
    before = "".join(block["text"] for block in blocks[:-1])
    assert "<local-command-caveat>" in before and "<command-name>/clear</command-name>" in before
