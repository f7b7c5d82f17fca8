"""The native runner: a pydantic-ai agent driven by a scripted OpenAI-compatible server over real HTTP,
reaching the real example server through the capture proxy.

What is scripted is only the model's side (FakeOpenAI); the tool results come from the live
emailindex server, and the proxy's journal is checked against the runner's view call for call.
"""

from __future__ import annotations

import asyncio
import json
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from fakes.openai_server import FakeOpenAI, Reply, error_reply, text_reply, tool_call_reply

from mcpipechekr.artifacts.trace import ModelTurn, ToolCall, Trace
from mcpipechekr.capture import CaptureHub, journal_tool_calls, proxy_server
from mcpipechekr.config import ServerConfig, load_config
from mcpipechekr.errors import ServerHalt, UserError
from mcpipechekr.providers import parse_provider
from mcpipechekr.runners.base import AgentServer, RunnerOutput, RunRequest
from mcpipechekr.runners.native import NATIVE_INSTRUCTIONS, NativeRunner
from mcpipechekr.tasks import Task

NOTES_SERVER = Path(__file__).resolve().parent / "servers" / "notes_server.py"
PROMPT = "How many emails mention Ron Chinn? Also list the office move subjects."


def make_config(tmp_path: Path, base_url: str, *, api_key_env: str | None = None):
    endpoint = {"base_url": base_url, **({"api_key_env": api_key_env} if api_key_env else {})}
    data = {
        "server": {"name": "emailindex", "command": sys.executable, "args": ["server.py"]},
        "providers": {"endpoints": {"scripted": endpoint}},
        "timeouts": {"tool_call_s": 20},
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(data))
    return load_config(path)


def make_request(config, server: AgentServer, tmp_path: Path, **overrides) -> RunRequest:
    task = Task(task_id="native-probe", prompt=PROMPT, task_type="deterministic")
    fields = {
        "task": task,
        "prompt": task.prompt,
        "provider": parse_provider("scripted/gpt-test", ["scripted"]),
        "repetition": 1,
        "server": server,
        "journal": tmp_path / "journal.jsonl",
        "workdir": tmp_path,
        "config": config,
        "timeout_s": 60.0,
        "max_requests": 10,
    }
    fields.update(overrides)
    return RunRequest(**fields)


def emailindex_proxy(emailindex_dir: Path, emailindex_db: Path, journal: Path) -> AgentServer:
    server = ServerConfig(
        name="emailindex",
        command="python",
        args=["server.py"],
        cwd=str(emailindex_dir),
        env={"EMAILINDEX_DB": str(emailindex_db)},
    )
    return proxy_server(server, journal, "emailindex")


def notes_server(tmp_path: Path) -> AgentServer:
    return AgentServer(
        name="notes",
        command=sys.executable,
        args=(str(NOTES_SERVER),),
        env={"NOTES_DIR": str(tmp_path / "n")},
    )


def run(runner: NativeRunner, request: RunRequest) -> RunnerOutput:
    return asyncio.run(runner.run(request))


def mentions(db: Path, phrase: str) -> int:
    with sqlite3.connect(db) as con:
        terms = " ".join(f'"{word}"' for word in phrase.split())
        sql = (
            "SELECT count(*) FROM emails WHERE id IN (SELECT rowid FROM emails_fts WHERE emails_fts MATCH ?)"
        )
        return con.execute(sql, (terms,)).fetchone()[0]


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_native_run_records_turns_usage_thinking_and_live_results(
    stream: bool, tmp_path: Path, emailindex_dir: Path, emailindex_db: Path
) -> None:
    with FakeOpenAI() as fake:
        fake.enqueue(
            tool_call_reply(
                "count_emails",
                {"keywords": "Ron Chinn"},
                reasoning="Counting first is cheapest.",
                prompt_tokens=311,
                completion_tokens=17,
            ),
            tool_call_reply(
                "query_email_database",
                {"keywords": "office move", "fields": ["subject"]},
                prompt_tokens=402,
                completion_tokens=23,
            ),
            text_reply("Ron Chinn is mentioned in many emails.", prompt_tokens=515, completion_tokens=9),
        )
        config = make_config(tmp_path, fake.base_url)
        journal = tmp_path / "journal.jsonl"
        server = emailindex_proxy(emailindex_dir, emailindex_db, journal)
        output = run(NativeRunner(stream=stream), make_request(config, server, tmp_path))
        requests = fake.requests

    assert output.status == "completed", output.status_reason
    assert output.final_answer == "Ron Chinn is mentioned in many emails."
    assert output.started_at is not None and output.ended_at is not None
    turns = [step for step in output.steps if isinstance(step, ModelTurn)]
    calls = [step for step in output.steps if isinstance(step, ToolCall)]
    assert [step.kind for step in output.steps] == ["model", "tool_call", "model", "tool_call", "model"]
    assert [step.index for step in output.steps] == list(range(5))
    # Usage is the provider's, per request, and labelled so; thinking comes from reasoning_content.
    assert [(t.usage.input_tokens, t.usage.output_tokens) for t in turns] == [(311, 17), (402, 23), (515, 9)]
    assert {t.usage.source for t in turns} == {"reported"}
    assert turns[0].thinking == ["Counting first is cheapest."] and turns[1].thinking == []
    assert turns[2].text == "Ron Chinn is mentioned in many emails."
    # Tool results are the live server's: the count matches the archive, the projection hits the planted bug.
    count, projection = calls
    assert count.tool == "count_emails" and count.arguments == {"keywords": "Ron Chinn"}
    assert json.loads(count.result_content[0]["text"]) == {"count": mentions(emailindex_db, "Ron Chinn")}
    assert not count.is_error and count.latency_ms > 0
    assert projection.is_error and "no such column: fts.rank" in (projection.error_text or "")
    # The proxy saw the same calls, in the same order, with the same arguments and outcomes.
    journaled = journal_tool_calls(journal)
    assert [(c.tool, c.arguments, c.is_error) for c in journaled] == [
        (c.tool, c.arguments, c.is_error) for c in calls
    ]
    assert json.loads(journaled[0].result_content[0]["text"]) == json.loads(count.result_content[0]["text"])
    # The model got the exact prompt, the neutral instructions and the server's tools, unprefixed.
    assert all(body.get("stream", False) is stream for body in requests)
    first = requests[0]["messages"]
    assert {"role": "system", "content": NATIVE_INSTRUCTIONS} in first
    assert [m for m in first if m["role"] == "user"][0]["content"] == PROMPT
    offered = {tool["function"]["name"] for tool in requests[0]["tools"]}
    assert offered == {"query_email_database", "get_email", "count_emails"}
    # The steps are valid trace steps.
    trace = Trace(
        task_id="native-probe",
        provider="scripted/gpt-test",
        runner="native",
        prompt=PROMPT,
        started_at=output.started_at,
        ended_at=output.ended_at,
        status=output.status,
        steps=output.steps,
    )
    assert trace.totals.input_tokens == 311 + 402 + 515 and trace.totals.errors == 1


def test_request_limit_ends_the_attempt_incomplete(tmp_path: Path) -> None:
    def always_list(body: dict) -> Reply:
        return tool_call_reply("list_notes", {})

    with FakeOpenAI(always_list) as fake:
        config = make_config(tmp_path, fake.base_url)
        output = run(NativeRunner(), make_request(config, notes_server(tmp_path), tmp_path, max_requests=2))
        served = len(fake.requests)

    assert output.status == "incomplete"
    assert output.status_reason == "the agent reached the limit of 2 model requests"
    assert served == 2 and output.final_answer is None
    assert [step.kind for step in output.steps] == ["model", "tool_call", "model", "tool_call"]


def test_provider_error_is_an_error_with_the_key_redacted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sk-planted-test-key-0123456789"
    monkeypatch.setenv("MCPC_SCRIPTED_KEY", secret)
    with FakeOpenAI() as fake:
        fake.enqueue(error_reply(401, f"Incorrect API key provided: {secret}"))
        config = make_config(tmp_path, fake.base_url, api_key_env="MCPC_SCRIPTED_KEY")
        output = run(NativeRunner(), make_request(config, notes_server(tmp_path), tmp_path))
        sent_key = fake.requests and True

    assert sent_key
    assert output.status == "error"
    assert "401" in (output.status_reason or "") and "${MCPC_SCRIPTED_KEY}" in (output.status_reason or "")
    dumped = json.dumps([step.model_dump() for step in output.steps]) + str(output.status_reason)
    assert secret not in dumped


def test_missing_api_key_is_a_user_error_before_anything_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MCPC_ABSENT_KEY", raising=False)
    config = make_config(tmp_path, "http://127.0.0.1:9/v1", api_key_env="MCPC_ABSENT_KEY")
    with pytest.raises(UserError, match=r"MCPC_ABSENT_KEY"):
        run(NativeRunner(), make_request(config, notes_server(tmp_path), tmp_path))


def test_timeout_ends_the_attempt_with_status_timeout(tmp_path: Path) -> None:
    with FakeOpenAI() as fake:
        fake.enqueue(tool_call_reply("hang", {"seconds": 60}))
        config = make_config(tmp_path, fake.base_url)
        # the timeout counts the server's start-up too: long enough for the call to start on a busy machine
        output = run(NativeRunner(), make_request(config, notes_server(tmp_path), tmp_path, timeout_s=10.0))

    assert output.status == "timeout"
    assert output.status_reason == "the attempt ran past its 10 s timeout"
    call = [step for step in output.steps if isinstance(step, ToolCall)]
    assert [c.tool for c in call] == ["hang"] and call[0].is_error


def test_server_crash_halts_with_the_task_named_and_partial_output(tmp_path: Path) -> None:
    with FakeOpenAI() as fake:
        fake.enqueue(tool_call_reply("list_notes", {}), tool_call_reply("crash", {}), text_reply("never"))
        config = make_config(tmp_path, fake.base_url)
        with pytest.raises(ServerHalt, match=r"task native-probe \(repetition 1\).*crash") as caught:
            run(NativeRunner(), make_request(config, notes_server(tmp_path), tmp_path))

    partial = caught.value.partial  # type: ignore[attr-defined]
    assert isinstance(partial, RunnerOutput) and partial.status == "incomplete"
    calls = [step for step in partial.steps if isinstance(step, ToolCall)]
    assert [c.tool for c in calls] == ["list_notes", "crash"]
    assert not calls[0].is_error and calls[1].is_error


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_an_http_server_is_reached_through_the_http_capture_proxy(
    tmp_path: Path, emailindex_dir: Path, emailindex_env: dict[str, str], emailindex_db: Path
) -> None:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "server.py", "--http", str(port)],
        cwd=emailindex_dir,
        env=emailindex_env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and process.poll() is None:
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.1)
        url = f"http://127.0.0.1:{port}/mcp"
        journal = tmp_path / "journal.jsonl"
        with FakeOpenAI() as fake, CaptureHub(ServerConfig(name="emailindex", url=url)) as hub:
            fake.enqueue(
                tool_call_reply("count_emails", {"keywords": "Project Alpha"}), text_reply("Seventeen.")
            )
            config = make_config(tmp_path, fake.base_url)
            server = hub.agent_server(journal, "emailindex", secrets_dir=tmp_path / "secrets")
            assert server.transport == "http"
            output = run(NativeRunner(), make_request(config, server, tmp_path))
            hub.release(server)
    finally:
        process.terminate()
        process.wait(timeout=10)

    assert output.status == "completed" and output.final_answer == "Seventeen."
    (call,) = [step for step in output.steps if isinstance(step, ToolCall)]
    assert json.loads(call.result_content[0]["text"]) == {"count": mentions(emailindex_db, "Project Alpha")}
    assert [(c.tool, c.arguments) for c in journal_tool_calls(journal)] == [(call.tool, call.arguments)]


def test_a_server_that_never_starts_halts_the_run(tmp_path: Path) -> None:
    tiny = Path(__file__).resolve().parent / "servers" / "tiny_server.py"
    server = AgentServer(name="tiny", command=sys.executable, args=(str(tiny), "--exit-at-start", "3"))
    with FakeOpenAI() as fake:
        config = make_config(tmp_path, fake.base_url)
        with pytest.raises(
            ServerHalt, match=r"task native-probe .*closed the connection outside any tool call"
        ):
            run(NativeRunner(), make_request(config, server, tmp_path))
        assert fake.requests == []
