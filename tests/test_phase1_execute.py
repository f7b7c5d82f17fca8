"""Phase 1 execution against real proxied servers: concurrency, evidence, timeouts, crashes, Ctrl-C, secrets.

The agent is `tests/fakes/mcp_runner.ClientRunner`: no model, a script of tool
calls made with mcp.Client through the capture proxy the engine provides, so
every part but the model is the real one.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from fakes.agent_cli import process_alive
from fakes.mcp_runner import ClientRunner
from fakes.net import free_port, wait_port

from mcpipechekr.artifacts.journal import read_journal
from mcpipechekr.artifacts.trace import ToolCall, read_trace
from mcpipechekr.capture import journal_tool_calls
from mcpipechekr.config import Config, ServerConfig, TimeoutsConfig
from mcpipechekr.errors import ServerHalt
from mcpipechekr.providers import ProviderSpec
from mcpipechekr.runners.base import RunnerOutput, RunRequest
from mcpipechekr.runners.engine import Attempt, _settle
from mcpipechekr.runners.execute import execute_attempts, run_phase1
from mcpipechekr.tasks import Task

# Its module fixtures are costly: under pytest-xdist one worker runs the whole module, building them once.
pytestmark = pytest.mark.xdist_group("test_phase1_execute")

REPO = Path(__file__).resolve().parents[1]
SERVER = REPO / "tests" / "servers" / "capture_server.py"
SERVER_SECRET = "server-secret-5d1e77"
API_KEY = "sk-planted-test-key-93ab41c0"
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
A, B = ProviderSpec(provider="openai", model="model-a"), ProviderSpec(provider="openai", model="model-b")


def _config(task_s: float = 60.0, **server: Any) -> Config:
    spec = server or {"command": "python", "args": [str(SERVER)], "env": {"CAPTURE_SECRET": SERVER_SECRET}}
    return Config(server=ServerConfig(name="cap", **spec), timeouts=TimeoutsConfig(task_s=task_s))


def _task(task_id: str) -> Task:
    return Task(task_id=task_id, prompt=f"Please do {task_id}.", task_type="deterministic")


def _calls(steps: list[Any]) -> list[tuple[str, dict[str, Any], bool, list[dict[str, Any]]]]:
    return [(s.tool, s.arguments, s.is_error, s.result_content) for s in steps if isinstance(s, ToolCall)]


def _max_overlap(journals: list[Path]) -> int:
    spans = []
    for journal in journals:
        records = read_journal(journal)
        spans.append((records[0].t, records[-1].t))
    return max(sum(1 for s, e in spans if s <= start < e) for start, _ in spans)


def test_traces_carry_the_journal_evidence_with_concurrency_and_redaction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)

    def script(request: RunRequest) -> list[tuple[str, dict[str, Any]]]:
        return [
            ("echo", {"text": f"{request.task.task_id} {API_KEY}"}),
            ("secret", {}),
            ("fail", {"message": "x"}),
        ]

    reporting = ClientRunner(script, delay_s=0.2)
    silent = ClientRunner(script, delay_s=0.2, report_calls=False)
    tasks = [_task(f"task-{n}") for n in range(2)]
    paths = run_phase1(
        _config(),
        tmp_path,
        tasks,
        [A, B],
        concurrency=2,
        runner_for=lambda spec: reporting if spec == A else silent,
        progress=False,
    )
    assert len(reporting.seen) == len(silent.seen) == 2

    assert [p.name for p in paths] == [
        f"task-{n}__openai_model-{m}__r001.json" for n in range(2) for m in ("a", "b")
    ]
    journals = sorted((tmp_path / "journals").glob("*.jsonl"))
    assert [j.stem for j in journals] == sorted(p.stem for p in paths)
    assert _max_overlap(journals) == 2, "attempts run concurrently, at most --concurrency at once"

    for path in paths:
        trace = read_trace(path)
        journal = tmp_path / "journals" / f"{path.stem}.jsonl"
        assert trace.status == "completed" and trace.prompt == f"Please do {trace.task_id}."
        assert _calls(trace.steps) == _calls(journal_tool_calls(journal)), "call for call, from the journal"
        tools = [s for s in trace.steps if isinstance(s, ToolCall)]
        assert [t.tool for t in tools] == ["echo", "secret", "fail"]
        assert tools[0].arguments == {"text": f"{trace.task_id} ${{OPENAI_API_KEY}}"}
        assert tools[1].result_content[0]["text"] == "***"
        assert tools[2].is_error and tools[2].error_text == "Error executing tool fail: x"
        assert trace.totals.tool_calls == 3 and trace.totals.errors == 1
        assert trace.totals.input_tokens == 100 * 4 and trace.totals.usage_source == "reported"
        if trace.provider == str(A):
            assert [t.call_id for t in tools] == ["call-0", "call-1", "call-2"]
            assert trace.status_reason is None
            assert [s.kind for s in trace.steps] == ["model", "tool_call"] * 3 + ["model"]
        else:  # the runner reported no calls: the journal's go before the final answer
            assert trace.status_reason == (
                "3 tool call(s) seen by the capture proxy, not reported by the runner: echo, secret, fail"
            )
            assert [s.kind for s in trace.steps] == ["model"] * 3 + ["tool_call"] * 3 + ["model"]

    for file in tmp_path.rglob("*"):
        if file.is_file():
            data = file.read_bytes()
            assert API_KEY.encode() not in data and SERVER_SECRET.encode() not in data, file
    assert not any(Path(request.workdir).exists() for request in reporting.seen + silent.seen)


def test_timeouts_and_runner_failures_end_only_their_attempt(tmp_path: Path) -> None:
    class Broken(ClientRunner):
        async def run(self, request: RunRequest) -> Any:
            raise RuntimeError("runner bug")

    class BrokenInATaskGroup(ClientRunner):
        async def run(self, request: RunRequest) -> Any:
            async def fail() -> None:
                raise ValueError("deeper bug")

            async with anyio.create_task_group() as group:
                group.start_soon(fail)

    runners = {
        "hang": ClientRunner(lambda request: [("echo", {"text": "before the hang"})], hang=True),
        "bug": Broken(lambda request: []),
        "grouped-bug": BrokenInATaskGroup(lambda request: []),
        "ok": ClientRunner(lambda request: [("echo", {"text": "fine"})]),
    }

    class ByTask:
        name = "native"

        async def run(self, request: RunRequest) -> Any:
            return await runners[request.task.task_id].run(request)

    paths = run_phase1(
        _config(task_s=5.0),
        tmp_path,
        [_task(name) for name in runners],
        [A],
        concurrency=4,
        runner_for=lambda spec: ByTask(),
        progress=False,
    )
    traces = {read_trace(p).task_id: read_trace(p) for p in paths}
    assert traces["hang"].status == "timeout"
    assert traces["hang"].status_reason == "the attempt ran past timeouts.task_s (5 s)"
    echoed = [{"type": "text", "text": "before the hang"}]
    assert _calls(traces["hang"].steps) == [("echo", {"text": "before the hang"}, False, echoed)]
    assert traces["bug"].status == "error" and traces["bug"].steps == []
    assert traces["bug"].status_reason == "the runner failed: RuntimeError: runner bug"
    assert traces["grouped-bug"].status_reason == "the runner failed: ValueError: deeper bug"
    assert traces["ok"].status == "completed" and traces["ok"].final_answer == "fine"


def test_a_server_crash_halts_the_run_naming_the_task(tmp_path: Path) -> None:
    scripts = {
        "quick": [("echo", {"text": "done"})],
        "crasher": [("slow", {"seconds": 3}), ("crash", {"code": 3})],
        "long": [("slow", {"seconds": 60})],
        "later": [("slow", {"seconds": 60})],  # starts when "quick" is done
        "never": [("echo", {"text": "never started"})],
    }
    runner = ClientRunner(lambda request: scripts[request.task.task_id])
    with pytest.raises(ServerHalt) as caught:
        run_phase1(
            _config(),
            tmp_path,
            [_task(name) for name in scripts],
            [A],
            concurrency=3,
            runner_for=lambda spec: runner,
            progress=False,
        )
    message = caught.value.message
    assert message.startswith(
        "the server under test failed during task 'crasher' (openai/model-a, repetition 1): "
        "the server exited with code 3 while the agent was connected"
    )
    assert "crasher__openai_model-a__r001.jsonl" in message
    traces = {read_trace(p).task_id: read_trace(p) for p in (tmp_path / "traces").glob("*.json")}
    assert set(traces) == {"quick", "crasher", "long", "later"}, "the attempt never started has no trace"
    assert traces["quick"].status == "completed"
    assert traces["crasher"].status == "incomplete"
    assert traces["crasher"].status_reason.startswith("the server failed: the server exited with code 3")  # type: ignore[union-attr]
    crash_call = [s for s in traces["crasher"].steps if isinstance(s, ToolCall)][-1]
    assert crash_call.tool == "crash" and crash_call.is_error
    assert crash_call.error_text == "no result: the server exited with code 3 while the agent was connected"
    assert traces["later"].status == traces["long"].status == "incomplete"
    assert traces["later"].status_reason == traces["long"].status_reason
    assert traces["long"].status_reason.startswith(
        "the run halted: the server under test failed during task 'crasher'"
    )  # type: ignore[union-attr]


PHASE1_SCRIPT = """
import sys
sys.path.insert(0, {tests!r})
from pathlib import Path
from mcpipechekr.config import Config, ServerConfig
from mcpipechekr.providers import ProviderSpec
from mcpipechekr.runners.execute import run_phase1
from mcpipechekr.tasks import Task
from fakes.mcp_runner import ClientRunner

runner = ClientRunner(lambda request: [("echo", {{"text": "working"}})], hang=True)
config = Config(server={server})
tasks = [Task(task_id=name, prompt="p", task_type="deterministic") for name in ("one", "two")]
run_phase1(config, Path({out!r}), tasks, [ProviderSpec(provider="demo")], runner_for=lambda s: runner,
           progress=False)
"""
"""Phase 1 as its own process: two attempts, "one" and "two", that call `echo` and hang; `server` is the
ServerConfig(...) expression."""


def _start_until_both_call_tools(tmp_path: Path, server: str, **popen: Any) -> subprocess.Popen[bytes]:
    """PHASE1_SCRIPT started with `popen`'s options, once both attempts' journals show a tools/call."""
    script = tmp_path / "phase1.py"
    script.write_text(
        textwrap.dedent(PHASE1_SCRIPT.format(tests=str(REPO / "tests"), server=server, out=str(tmp_path)))
    )
    process = subprocess.Popen([sys.executable, str(script)], **popen)
    journals = [tmp_path / "journals" / f"{name}__demo__r001.jsonl" for name in ("one", "two")]
    deadline = time.monotonic() + 120  # only a failure waits it out
    while not all(j.exists() and b'"tools/call"' in j.read_bytes() for j in journals):
        assert process.poll() is None and time.monotonic() < deadline, "both attempts should be calling tools"
        time.sleep(0.05)
    return process


def _children(pid: int) -> list[int]:
    return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


@pytest.mark.parametrize("target", ["process", "group"], ids=["process", "terminal"])
@pytest.mark.slow
def test_ctrl_c_marks_the_attempts_in_flight_incomplete(tmp_path: Path, target: str) -> None:
    """SIGINT to the run's process, or to its whole process group (as a terminal sends it: the stdio
    capture proxies the run started get it too)."""
    server = f"ServerConfig(name='cap', command='python', args=[{str(SERVER)!r}])"
    process = _start_until_both_call_tools(tmp_path, server, stderr=subprocess.PIPE, start_new_session=True)
    time.sleep(0.2)  # let the answers arrive
    if target == "group":
        os.killpg(process.pid, signal.SIGINT)
    else:
        process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=120)  # only a failure waits it out
    assert process.returncode != 0 and b"KeyboardInterrupt" in stderr
    for name in ("one", "two"):
        trace = read_trace(tmp_path / "traces" / f"{name}__demo__r001.json")
        assert trace.status == "incomplete" and trace.status_reason == "interrupted by the user (Ctrl-C)"
        assert _calls(trace.steps) == [
            ("echo", {"text": "working"}, False, [{"type": "text", "text": "working"}])
        ]


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(SERVER), "--http", str(port)],
        env={**os.environ, "CAPTURE_SECRET": SERVER_SECRET},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_port(port, process)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_given_attempts_run_alone_each_reported_as_soon_as_its_trace_is_written(tmp_path: Path) -> None:
    runner = ClientRunner(lambda request: [("echo", {"text": request.task.task_id})])
    reported: list[tuple[str, int, str]] = []

    def finished(attempt: Attempt) -> None:
        assert attempt.trace is not None and read_trace(attempt.trace).task_id == attempt.task.task_id
        assert (tmp_path / "journals" / f"{attempt.trace.stem}.jsonl").exists()
        reported.append((attempt.task.task_id, attempt.repetition, attempt.state))

    paths = execute_attempts(
        _config(),
        tmp_path,
        [Attempt(_task("second"), B, 3), Attempt(_task("first"), A, 1)],
        concurrency=1,
        runner_for=lambda spec: runner,
        progress=False,
        on_attempt=finished,
    )
    assert [path.name for path in paths] == [
        "second__openai_model-b__r003.json",
        "first__openai_model-a__r001.json",
    ]
    assert reported == [("second", 3, "completed"), ("first", 1, "completed")]
    assert sorted(path.name for path in (tmp_path / "traces").iterdir()) == sorted(
        path.name for path in paths
    )


def test_an_http_server_is_reached_through_the_run_proxy(http_url: str, tmp_path: Path) -> None:
    runner = ClientRunner(lambda request: [("echo", {"text": request.task.task_id}), ("secret", {})])
    config = _config(url=http_url, headers={"X-Token": SERVER_SECRET})
    paths = run_phase1(
        config,
        tmp_path,
        [_task("h-1"), _task("h-2")],
        [A],
        concurrency=2,
        runner_for=lambda s: runner,
        progress=False,
    )
    assert len(runner.seen) == 2
    assert all(request.server.transport == "http" for request in runner.seen)
    assert all(request.server.url.startswith("http://127.0.0.1:") for request in runner.seen)  # type: ignore[union-attr]
    assert all(not request.server.headers for request in runner.seen), "server headers stay with the proxy"
    for path in paths:
        trace = read_trace(path)
        assert [(c[0], c[1], c[2]) for c in _calls(trace.steps)] == [
            ("echo", {"text": trace.task_id}, False),
            ("secret", {}, False),
        ]
        journal = read_journal(tmp_path / "journals" / f"{path.stem}.jsonl")
        assert journal[0].event == "proxy_started" and journal[-1].event == "proxy_stopped"
        assert SERVER_SECRET not in path.read_text()


# --- how a run shares its slots and how it ends -----------------------------------------------------


def test_a_slow_attempt_holds_up_only_its_slot(http_url: str, tmp_path: Path) -> None:
    def script(request: RunRequest) -> list[tuple[str, dict[str, Any]]]:
        calls = [("echo", {"text": str(os.getpid())})]  # the process that ran the attempt
        return calls + [("slow", {"seconds": 5})] if request.task.task_id == "slow" else calls

    runner = ClientRunner(script)
    names = ["slow", "q-1", "q-2", "q-3", "q-4"]
    paths = run_phase1(
        _config(url=http_url),
        tmp_path,
        [_task(name) for name in names],
        [A],
        concurrency=2,
        runner_for=lambda s: runner,
        progress=False,
    )
    assert [p.name for p in paths] == [f"{name}__openai_model-a__r001.json" for name in names]
    traces = {read_trace(p).task_id: read_trace(p) for p in paths}
    pids = {trace.final_answer.split(" | ")[0] for trace in traces.values()}  # type: ignore[union-attr]
    assert pids == {str(os.getpid())}, "every attempt runs in the run's own process"
    assert max(traces[name].ended_at for name in names[1:]) < traces["slow"].ended_at, (
        "the other slot ran every quick attempt while the slow one was busy"
    )
    for path in paths:
        trace = traces[read_trace(path).task_id]
        assert trace.status == "completed"
        journal = tmp_path / "journals" / f"{path.stem}.jsonl"
        assert _calls(trace.steps) == _calls(journal_tool_calls(journal)), "call for call, from the journal"


def test_a_configuration_error_stops_the_run_as_itself(tmp_path: Path) -> None:
    from mcpipechekr.errors import UserError

    class NoKey:
        name = "native"

        async def run(self, request: RunRequest) -> Any:
            raise UserError("no API key for openai: set OPENAI_API_KEY")

    with pytest.raises(UserError) as caught:
        run_phase1(
            _config(),
            tmp_path,
            [_task(f"t-{n}") for n in range(3)],
            [A],
            concurrency=2,
            runner_for=lambda s: NoKey(),
            progress=False,
        )
    assert type(caught.value) is UserError and caught.value.message.startswith("no API key for openai")
    assert not list((tmp_path / "traces").glob("*.json")), "no attempt ran far enough to have a trace"


def _descendants(pid: int) -> list[int]:
    found = []
    for child in _children(pid):
        found += [child, *_descendants(child)]
    return found


@linux_only
def test_a_run_killed_outright_leaves_no_process_behind(tmp_path: Path) -> None:
    """SIGKILL gives the run no chance to stop what it started: the stdio capture proxies see their
    stdin close, stop the servers under test and exit."""
    server = f"ServerConfig(name='cap', command='python', args=[{str(SERVER)!r}])"
    process = _start_until_both_call_tools(tmp_path, server, stderr=subprocess.DEVNULL)
    started = _descendants(process.pid)
    assert len(started) >= 4, "two capture proxies, each with its server"
    process.kill()
    process.wait(timeout=10)
    deadline = time.monotonic() + 30
    while left := [pid for pid in started if process_alive(pid)]:
        assert time.monotonic() < deadline, f"processes left running after the run was killed: {left}"
        time.sleep(0.05)


def _journal_of(path: Path, pid: int, *, finished: bool) -> Path:
    records = [{"seq": 0, "t": 1.0, "kind": "event", "event": "proxy_started", "version": 1, "pid": pid}]
    if finished:
        records.append({"seq": 1, "t": 2.0, "kind": "event", "event": "proxy_stopped"})
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


def _settle_seconds(path: Path, timeout_s: float) -> float:
    started = time.monotonic()
    anyio.run(_settle, path, timeout_s)
    return time.monotonic() - started


@linux_only
def test_the_wait_for_a_journal_ends_once_its_proxy_is_gone(tmp_path: Path) -> None:
    """A proxy killed before its `proxy_stopped` writes nothing more: the run does not wait out the time."""
    exited = subprocess.Popen([sys.executable, "-c", "pass"])
    exited.wait()
    assert _settle_seconds(_journal_of(tmp_path / "gone.jsonl", exited.pid, finished=False), 10) < 2
    zombie = subprocess.Popen([sys.executable, "-c", "pass"])  # exited, never reaped until the end
    try:
        while process_alive(zombie.pid) or not Path(f"/proc/{zombie.pid}").exists():
            time.sleep(0.02)
        assert _settle_seconds(_journal_of(tmp_path / "zombie.jsonl", zombie.pid, finished=False), 10) < 2
    finally:
        zombie.wait()
    with subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"]) as running:
        try:
            live = _journal_of(tmp_path / "live.jsonl", running.pid, finished=False)
            assert _settle_seconds(live, 0.6) >= 0.6  # a live proxy may still write: wait
            assert _settle_seconds(_journal_of(tmp_path / "done.jsonl", running.pid, finished=True), 10) < 1
        finally:
            running.kill()


class KillsItsProxy:
    """An agent that starts the capture proxy, waits for the server behind it, then SIGKILLs the proxy
    (as Claude Code does at its exit when the proxy is slow to stop): the server is left to itself."""

    name = "native"

    def __init__(self) -> None:
        self.server_pids: list[int] = []

    async def run(self, request: RunRequest) -> RunnerOutput:
        server = request.server
        assert server.command is not None
        proxy = subprocess.Popen(
            [server.command, *server.args],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            env={**os.environ, **server.env},
            cwd=server.cwd,
        )
        deadline = time.monotonic() + 30
        while not (started := [r for r in read_journal(request.journal) if r.event == "server_started"]):
            assert time.monotonic() < deadline and proxy.poll() is None, "the proxy never started its server"
            await anyio.sleep(0.05)
        assert started[0].pid is not None
        self.server_pids.append(started[0].pid)
        proxy.kill()
        proxy.wait()
        return RunnerOutput(status="completed", final_answer="done")


@linux_only
def test_a_server_left_behind_by_a_killed_proxy_is_stopped(tmp_path: Path) -> None:
    """The server never reads its input, so the proxy's death does not end it: the run does."""
    runner = KillsItsProxy()
    ignores_its_input = "import time; time.sleep(120)"
    paths = run_phase1(
        _config(command=sys.executable, args=["-c", ignores_its_input]),
        tmp_path,
        [_task("left-behind")],
        [A],
        runner_for=lambda spec: runner,
        progress=False,
    )
    assert [read_trace(path).status for path in paths] == ["completed"]
    (pid,) = runner.server_pids
    assert not process_alive(pid), "the server behind the killed proxy was left running"
