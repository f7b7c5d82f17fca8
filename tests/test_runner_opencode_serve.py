"""The opencode runner's serve mode: one real `opencode serve` for a whole Phase 1 run, against a
scripted OpenAI-compatible model and capture_server behind the capture proxy.

What is checked: every attempt gets its own journal with the server's calls in it, the run never
halts when attempts end normally (the MCP clients are disconnected between attempts, which stops
the servers behind the proxies), and a server killed (or hung) in the middle of an attempt is started again:
that attempt ends `incomplete` naming the crash, the others complete.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from fakes.agent_cli import isolated_home, process_alive, require_cli
from fakes.agent_scenarios import (
    DONE,
    ECHO_TASK,
    FINAL,
    PROMPT,
    SECRET,
    ScriptLog,
    capture_server_config,
    files_containing,
    make_request,
    openai_call_then_answer,
    openai_responder,
    write_config,
)
from fakes.openai_server import FakeOpenAI, Reply, last_user_text
from test_runner_opencode import check_scripted_steps

from mcpipechekr.artifacts.journal import read_journal
from mcpipechekr.artifacts.trace import ToolCall, read_trace
from mcpipechekr.capture import journal_tool_calls
from mcpipechekr.providers import ProviderSpec
from mcpipechekr.runners import opencode_serve
from mcpipechekr.runners.base import RunnerOutput, RunRequest
from mcpipechekr.runners.execute import run_phase1
from mcpipechekr.runners.opencode import OpencodeRunner
from mcpipechekr.runners.registry import get_runner

pytestmark = pytest.mark.slow


def serve_phase1(
    tmp_path: Path,
    runner: OpencodeRunner,
    respond: Callable[[dict], Reply],
    *,
    repeat: int,
    concurrency: int = 1,
    task_s: float | None = None,
) -> list[Path]:
    """Phase 1 of the echo task `repeat` times on one runner (so one opencode server); `task_s`
    overrides the task timeout."""
    with FakeOpenAI(respond) as fake:
        config = capture_server_config({"fake": {"base_url": fake.base_url}})
        if task_s is not None:
            config.timeouts.task_s = task_s
        return run_phase1(
            config,
            tmp_path / "run",
            [ECHO_TASK],
            [ProviderSpec(provider="fake", model="fake-model")],
            repeat=repeat,
            concurrency=concurrency,
            runner_for=lambda spec: runner,
            progress=False,
        )


def served_runner(tmp_path: Path) -> OpencodeRunner:
    return OpencodeRunner(
        binary=require_cli("opencode", "MCPIPECHEKR_OPENCODE"),
        env=isolated_home(tmp_path / "home"),
        mode="serve",
    )


def journal_exits(tmp_path: Path) -> list:
    journals = sorted((tmp_path / "run" / "journals").glob("*.jsonl"))
    return [[r for r in read_journal(journal) if r.event == "server_exited"] for journal in journals]


@pytest.mark.slow
def test_twenty_attempts_on_one_server_complete_without_a_false_halt(tmp_path: Path) -> None:
    runner = served_runner(tmp_path)
    attempts = 20
    paths = serve_phase1(
        tmp_path,
        runner,
        openai_call_then_answer("cap_", "echo", {"text": "hi"}),
        repeat=attempts,
        concurrency=2,
    )
    traces = [read_trace(path) for path in paths]
    assert [(t.status, t.final_answer) for t in traces] == [("completed", DONE)] * attempts
    # Each attempt's own journal holds its one call, with the live server's result.
    for trace in traces:
        (call,) = [step for step in trace.steps if isinstance(step, ToolCall)]
        assert (call.tool, call.arguments, call.is_error) == ("echo", {"text": "hi"}, False)
        assert call.result_content == [{"type": "text", "text": "hi"}]
    exits = journal_exits(tmp_path)
    assert len(exits) == attempts
    assert all(len(found) == 1 and found[0].expected for found in exits)
    assert {trace.runner for trace in traces} == {"opencode"}


@pytest.mark.slow
def test_a_server_killed_mid_attempt_is_restarted_and_only_that_attempt_is_incomplete(tmp_path: Path) -> None:
    runner = served_runner(tmp_path)
    answer = openai_call_then_answer("cap_", "echo", {"text": "hi"})
    requests = 0
    killed: list[int] = []
    lock = threading.Lock()

    def respond(body: dict) -> Reply:
        """Kill the opencode server when the second attempt asks its first question."""
        nonlocal requests
        with lock:
            requests += 1
            number = requests
        if number == 3:  # attempts make two requests each: this is attempt 2's first
            assert runner._serve is not None and runner._serve.current is not None
            killed.append(runner._serve.current.pid)
            os.kill(killed[0], signal.SIGKILL)
        return answer(body)

    paths = serve_phase1(tmp_path, runner, respond, repeat=4)
    traces = [read_trace(path) for path in paths]
    assert [t.status for t in traces] == ["completed", "incomplete", "completed", "completed"]
    assert traces[1].status_reason == (
        "the opencode server was killed by signal SIGKILL during the attempt; "
        "it is started again for the next attempts"
    )
    assert [t.final_answer for t in traces] == [DONE, None, DONE, DONE]
    # The killed server's capture proxy saw its agent go and stopped the server: no halt.
    exits = journal_exits(tmp_path)
    assert all(len(found) == 1 and found[0].expected for found in exits)
    assert killed and not process_alive(killed[0])


def test_the_registry_passes_the_opencode_mode(tmp_path: Path) -> None:
    config = capture_server_config()
    spec = ProviderSpec(provider="fake", model="fake-model")
    assert get_runner(spec, config, "opencode").mode == "serve"
    assert get_runner(spec, config, "opencode", opencode_mode="run").mode == "run"


@pytest.mark.slow
def test_a_hung_server_is_taken_for_dead_and_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stopped process answers nothing: after HUNG_AFTER_S its attempt ends and a new server starts."""
    monkeypatch.setattr(opencode_serve, "HUNG_AFTER_S", 3.0)
    runner = served_runner(tmp_path)
    answer = openai_call_then_answer("cap_", "echo", {"text": "hi"})
    requests = 0
    frozen: list[int] = []

    def respond(body: dict) -> Reply:
        nonlocal requests
        requests += 1
        if requests == 1:  # the first attempt's first question
            assert runner._serve is not None and runner._serve.current is not None
            frozen.append(runner._serve.current.pid)
            os.kill(frozen[0], signal.SIGSTOP)
        return answer(body)

    paths = serve_phase1(tmp_path, runner, respond, repeat=2)
    traces = [read_trace(path) for path in paths]
    assert [(t.status, t.status_reason) for t in traces] == [
        (
            "incomplete",
            "the opencode server stopped answering for 3 s (hung); it is started again for the next attempts",
        ),
        ("completed", None),
    ]
    assert not process_alive(frozen[0])
    assert all(len(found) == 1 and found[0].expected for found in journal_exits(tmp_path))


@pytest.mark.slow
def test_a_timed_out_attempt_keeps_what_it_did_and_the_server_serves_the_next(tmp_path: Path) -> None:
    """The model never answers attempt 1's second question: the attempt ends `timeout` at the task's
    limit with its tool call kept, its session is aborted and its MCP server disconnected (the proxy
    finishes the journal), and attempt 2 completes on the same opencode server."""
    runner = served_runner(tmp_path)
    answer = openai_call_then_answer("cap_", "echo", {"text": "hi"})
    second_questions = 0
    release = threading.Event()
    lock = threading.Lock()
    servers: list[int] = []

    def respond(body: dict) -> Reply:
        """Hang the first question asked after a tool call: attempt 1's (attempts run one at a time)."""
        nonlocal second_questions
        after_call = any(message.get("role") == "tool" for message in body.get("messages") or [])
        with lock:
            hang = after_call and not release.is_set() and second_questions == 0
            second_questions += 1 if after_call else 0
        assert runner._serve is not None and runner._serve.current is not None
        servers.append(runner._serve.current.pid)
        if hang:
            release.wait(60)
        return answer(body)

    try:
        paths = serve_phase1(tmp_path, runner, respond, repeat=2, task_s=20)
    finally:
        release.set()
    traces = [read_trace(path) for path in paths]
    assert [(t.status, t.status_reason) for t in traces] == [
        ("timeout", "no final answer within the task's 20 s"),
        ("completed", None),
    ]
    (call,) = [step for step in traces[0].steps if isinstance(step, ToolCall)]
    assert (call.tool, call.arguments) == ("echo", {"text": "hi"})
    assert call.result_content == [{"type": "text", "text": "hi"}]
    assert traces[1].final_answer == DONE
    assert len(servers) == 4 and len(set(servers)) == 1  # one opencode server throughout
    exits = journal_exits(tmp_path)
    assert all(len(found) == 1 and found[0].expected for found in exits)


def test_a_server_cancelled_while_it_starts_is_stopped(tmp_path: Path) -> None:
    """An attempt's timeout (or Ctrl-C) while `opencode serve` starts must not leave it running: the
    process is not the run's server yet, so nothing else would stop it."""
    started = tmp_path / "pid"
    never_listens = tmp_path / "opencode"
    never_listens.write_text(f'#!/bin/sh\necho $$ > "{started}"\nexec sleep 60\n')
    never_listens.chmod(0o755)
    serve = opencode_serve.OpencodeServe(str(never_listens), dict(os.environ), {})

    async def start_then_give_up() -> None:
        with anyio.move_on_after(1.0):
            await serve.ensure()
        await serve.aclose()

    anyio.run(start_then_give_up)
    pid = int(started.read_text())
    assert serve.current is None and not process_alive(pid)


@pytest.mark.slow
def test_a_served_attempt_converts_like_an_opencode_run(
    tmp_path: Path, emailindex_dir: Path, emailindex_db: Path
) -> None:
    """The example task through the API: the same steps, usage, thinking and errors as `opencode run`
    gives (test_runner_opencode.py), the same tool names offered, no title request, no secret written."""
    log = ScriptLog()
    runner = served_runner(tmp_path)

    async def attempt(request: RunRequest) -> RunnerOutput:
        try:
            return await runner.run(request)
        finally:
            await runner.aclose()

    with FakeOpenAI(openai_responder("emailindex_", log)) as fake:
        config = write_config(tmp_path, emailindex_dir, emailindex_db, {"fake": {"base_url": fake.base_url}})
        request = make_request(config, tmp_path, ProviderSpec(provider="fake", model="fake-model"))
        output = anyio.run(attempt, request)

    assert output.status == "completed", output.status_reason
    assert (output.final_answer, output.model) == (FINAL, "fake-model")
    check_scripted_steps(output.steps, with_results=True)
    assert last_user_text(log.task_requests[0]) == PROMPT
    offered = {tool["function"]["name"] for tool in log.task_requests[0]["tools"]}
    assert offered == {"emailindex_count_emails", "emailindex_get_email", "emailindex_query_email_database"}
    assert log.other_requests == []
    journal = journal_tool_calls(request.journal)
    assert [(c.tool, c.arguments, c.is_error) for c in journal] == [
        (c.tool, c.arguments, c.is_error) for c in output.steps if isinstance(c, ToolCall)
    ]
    assert [path for path in files_containing(tmp_path, SECRET) if path.name != "config.yaml"] == []
    assert (request.workdir / "opencode-export.json").is_file()
