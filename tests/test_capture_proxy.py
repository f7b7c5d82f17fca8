"""The capture proxy forwards every message unchanged and journals it: stdio and streamable HTTP."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from fakes.net import free_port, wait_port
from mcp import Client, StdioServerParameters

from mcpipechekr.artifacts.journal import read_journal
from mcpipechekr.capture import HttpCaptureProxy, journal_tool_calls, proxy_server, server_failure
from mcpipechekr.capture.journal import JournalWriter
from mcpipechekr.capture.stdio_proxy import StdioProxy, stopped_like_a_stop
from mcpipechekr.config import Redactor, ServerConfig

# Its module fixtures are costly: under pytest-xdist one worker runs the whole module, building them once.
pytestmark = pytest.mark.xdist_group("test_capture_proxy")

SERVERS = Path(__file__).parent / "servers"
SECRET = "capture-secret-7f3a9c"
ECHO_SERVER = (
    "import sys\n"
    "for line in sys.stdin.buffer:\n"
    "    sys.stdout.buffer.write(line)\n"
    "    sys.stdout.buffer.flush()\n"
)
CRASH_SERVER = "import sys\nsys.stdin.buffer.readline()\nsys.exit(3)\n"


def _proxy(journal: Path, *server: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "mcpipechekr.capture", "--journal", str(journal), "--", *server],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )


def test_stdio_lines_pass_unchanged_and_each_is_journaled(tmp_path: Path) -> None:
    journal = tmp_path / "j.jsonl"
    lines = [
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"q":"\xc3\xa9t\xc3\xa9"}}}\n',
        b"not json at all\n",
        b'{"jsonrpc":"2.0","id":2,"method":"ping","params":{"pad":"' + b"a" * 300_000 + b'"}}\n',
    ]
    proxy = _proxy(journal, sys.executable, "-c", ECHO_SERVER)
    assert proxy.stdin is not None and proxy.stdout is not None
    for line in lines:
        proxy.stdin.write(line)
        proxy.stdin.flush()
        assert proxy.stdout.readline() == line
    proxy.stdin.close()
    assert proxy.wait(timeout=10) == 0

    records = read_journal(journal)
    messages = [record for record in records if record.kind == "message"]
    assert [(m.direction, m.size) for m in messages] == [
        (direction, len(line)) for line in lines for direction in ("to_server", "to_agent")
    ]
    assert messages[0].message == json.loads(lines[0])
    assert messages[2].raw == "not json at all" and messages[2].message is None
    events = [record.event for record in records if record.kind == "event"]
    assert events == ["proxy_started", "server_started", "server_exited", "proxy_stopped"]
    exited = next(record for record in records if record.event == "server_exited")
    assert exited.expected is True and exited.exit_code == 0
    assert [record.seq for record in records] == list(range(len(records)))
    assert all(a.t <= b.t for a, b in zip(records, records[1:], strict=False))
    assert server_failure(journal) is None
    # the unanswered tools/call is kept, as an error that says why
    (call,) = journal_tool_calls(journal)
    assert call.tool == "x" and call.arguments == {"q": "été"} and call.is_error
    assert call.error_text == "no result: the attempt ended before the server answered"


def test_stdio_server_crash_is_journaled_and_ends_the_proxy(tmp_path: Path) -> None:
    journal = tmp_path / "j.jsonl"
    proxy = _proxy(journal, sys.executable, "-c", CRASH_SERVER)
    assert proxy.stdin is not None and proxy.stdout is not None
    proxy.stdin.write(b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"boom"}}\n')
    proxy.stdin.flush()
    assert proxy.stdout.read() == b""  # the agent sees the connection close
    assert proxy.wait(timeout=10) == 3
    failure = server_failure(journal)
    assert failure == "the server exited with code 3 while the agent was connected"
    (call,) = journal_tool_calls(journal)
    assert call.is_error and call.error_text == f"no result: {failure}"


def test_stdio_server_that_cannot_start(tmp_path: Path) -> None:
    journal = tmp_path / "j.jsonl"
    proxy = _proxy(journal, str(tmp_path / "no-such-server"))
    proxy.stdin.close()  # type: ignore[union-attr]
    assert proxy.wait(timeout=10) == 127
    assert "could not start the server" in (server_failure(journal) or "")


# --- the agent's shutdown or a crash: capture_server, a real MCP server, stopped from outside ------------

HANDSHAKE = [
    {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    },
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
]


def _call(request_id: int, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }


class RawAgent:
    """An MCP client speaking raw JSON-RPC lines to a proxy, so a test decides when it lets go."""

    def __init__(self, to_proxy: Any, from_proxy: Any, journal: Path):
        self.to_proxy, self.from_proxy, self.journal = to_proxy, from_proxy, journal

    def send(self, message: dict[str, Any]) -> None:
        self.to_proxy.write(json.dumps(message).encode() + b"\n")
        self.to_proxy.flush()

    def answer(self, request_id: int) -> dict[str, Any]:
        """Read the proxy's lines until the response to `request_id`."""
        for line in iter(self.from_proxy.readline, b""):
            message = json.loads(line)
            if message.get("id") == request_id and "method" not in message:
                return message
        raise AssertionError(f"the connection closed before the answer to {request_id}")

    def start_session(self) -> int:
        """Initialize, call `echo` once; returns the server's pid."""
        self.send(HANDSHAKE[0])
        self.answer(0)
        self.send(HANDSHAKE[1])
        self.send(_call(1, "echo", {"text": "hi"}))
        assert self.answer(1)["result"]["content"][0]["text"] == "hi"
        (started,) = [r for r in read_journal(self.journal) if r.event == "server_started"]
        assert started.pid is not None
        return started.pid

    def wait_journaled(self, request_id: int, timeout_s: float = 10) -> None:
        """Wait until the proxy has journaled (and so forwarded) the request `request_id`."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            records = read_journal(self.journal)
            if any(isinstance(r.message, dict) and r.message.get("id") == request_id for r in records):
                return
            time.sleep(0.02)
        raise AssertionError(f"request {request_id} never reached the journal")


def stop_from_outside(pid: int, timeout_s: float = 10) -> None:
    """SIGTERM the server as opencode does at shutdown (not through the proxy), and wait until the proxy
    has reaped it, then a moment more: the proxy judges the exit before the agent lets go."""
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not os.path.exists(f"/proc/{pid}"), "the proxy did not reap its server"
    time.sleep(0.5)


def _exited(journal: Path) -> Any:
    (record,) = [r for r in read_journal(journal) if r.event == "server_exited"]
    return record


linux_proc = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="watches /proc for the reaping")


@linux_proc
def test_the_agent_stopping_the_server_itself_is_its_shutdown_not_a_crash(tmp_path: Path) -> None:
    """opencode signals its MCP server's child (found with `pgrep -P`), then closes the proxy's stdin."""
    journal = tmp_path / "j.jsonl"
    proxy = _proxy(journal, sys.executable, str(SERVERS / "capture_server.py"))
    agent = RawAgent(proxy.stdin, proxy.stdout, journal)
    stop_from_outside(agent.start_session())
    proxy.stdin.close()  # type: ignore[union-attr]
    assert proxy.wait(timeout=10) == 0
    exited = _exited(journal)
    assert (exited.expected, exited.exit_code) == (True, -signal.SIGTERM)
    assert exited.detail is not None and exited.detail.startswith(
        "the agent stopped the server: it was killed by SIGTERM, not at the proxy's request, with no "
        "tools/call in flight, and the agent let go "
    )
    assert server_failure(journal) is None
    assert [c.is_error for c in journal_tool_calls(journal)] == [False]


@linux_proc
def test_the_same_stop_with_a_call_in_flight_is_a_crash(tmp_path: Path) -> None:
    journal = tmp_path / "j.jsonl"
    proxy = _proxy(journal, sys.executable, str(SERVERS / "capture_server.py"))
    agent = RawAgent(proxy.stdin, proxy.stdout, journal)
    pid = agent.start_session()
    agent.send(_call(2, "slow", {"seconds": 30}))
    agent.wait_journaled(2)
    os.kill(pid, signal.SIGTERM)
    assert proxy.stdout.read() == b""  # type: ignore[union-attr]  # at once: the agent is not waited for
    assert proxy.wait(timeout=10) == 128 + signal.SIGTERM
    failure = "the server was killed by signal SIGTERM while the agent was connected"
    assert server_failure(journal) == failure
    assert _exited(journal).expected is False
    assert journal_tool_calls(journal)[-1].error_text == f"no result: {failure}"


def _in_process_proxy(
    tmp_path: Path, leave_s: float
) -> tuple[StdioProxy, RawAgent, threading.Thread, list[int]]:
    """A StdioProxy in a thread (a short `leave_s`, which the command line does not offer), over pipes."""
    agent_in_r, agent_in_w = os.pipe()
    agent_out_r, agent_out_w = os.pipe()
    journal = tmp_path / "j.jsonl"
    writer = JournalWriter(journal)
    proxy = StdioProxy(
        [sys.executable, str(SERVERS / "capture_server.py")],
        writer,
        agent_in=os.fdopen(agent_in_r, "rb"),
        agent_out=os.fdopen(agent_out_w, "wb"),
        leave_s=leave_s,
        stderr=subprocess.DEVNULL,  # type: ignore[arg-type]
    )
    code: list[int] = []

    def run() -> None:
        code.append(proxy.run())
        proxy.agent_out.close()
        writer.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return proxy, RawAgent(os.fdopen(agent_in_w, "wb"), os.fdopen(agent_out_r, "rb"), journal), thread, code


@linux_proc
@pytest.mark.parametrize(("then", "leave_s"), [("carries on", 1.0), ("calls again, then lets go", 10.0)])
def test_a_server_stopped_while_the_agent_goes_on_is_a_crash(
    tmp_path: Path, then: str, leave_s: float
) -> None:
    """Not the agent's shutdown: it keeps the connection past `leave_s`, or sends another tools/call
    (within `leave_s`, ample here: the proxy decides as soon as the agent lets go)."""
    proxy, agent, thread, code = _in_process_proxy(tmp_path, leave_s=leave_s)
    stop_from_outside(agent.start_session())
    if then != "carries on":
        agent.send(_call(2, "echo", {"text": "still here"}))
        agent.wait_journaled(2)
        agent.to_proxy.close()
    thread.join(timeout=20)
    assert code == [128 + signal.SIGTERM]
    assert (
        server_failure(agent.journal)
        == "the server was killed by signal SIGTERM while the agent was connected"
    )
    if then != "carries on":
        assert journal_tool_calls(agent.journal)[-1].error_text.startswith("no result: the server was killed")
    agent.to_proxy.close()


@pytest.mark.parametrize(
    ("code", "stop"),
    [(0, True), (-15, True), (-2, True), (-1, True), (-9, True), (143, True), (130, True), (137, True),
     (1, False), (3, False), (-11, False), (-6, False), (134, False), (139, False)],
)  # fmt: skip
def test_which_exits_can_be_a_stop(code: int, stop: bool) -> None:
    assert stopped_like_a_stop(code) is stop


def test_mcp_session_through_stdio_proxy(tmp_path: Path) -> None:
    """A real MCP client and server: results arrive unchanged, the journal proves each call, minus secrets."""
    journal = tmp_path / "journals" / "j.jsonl"
    server = str(SERVERS / "capture_server.py")
    config = ServerConfig(name="cap", command="python", args=[server], env={"CAPTURE_SECRET": SECRET})
    private = tmp_path / "private"
    agent = proxy_server(config, journal, "cap", secrets_dir=private, redactions=[(SECRET, "***")])
    assert SECRET not in " ".join(agent.args) and not agent.env
    assert os.stat(tmp_path / "private" / "capture-secrets.json").st_mode & 0o077 == 0
    seen: dict[str, Any] = {}

    async def session() -> None:
        params = StdioServerParameters(command=agent.command or "", args=list(agent.args))
        async with Client(params) as client:
            seen["tools"] = [tool.name for tool in (await client.list_tools()).tools]
            seen["echo"] = await client.call_tool("echo", {"text": "hello"})
            seen["fail"] = await client.call_tool("fail", {"message": "bad input"})
            seen["secret"] = await client.call_tool("secret", {})

    anyio.run(session)
    assert seen["tools"] == ["echo", "fail", "crash", "slow", "secret"]
    assert seen["secret"].content[0].text == SECRET  # the agent gets the real answer
    assert SECRET not in journal.read_text()  # the journal does not keep it

    calls = journal_tool_calls(journal)
    assert [(c.tool, c.arguments, c.is_error) for c in calls] == [
        ("echo", {"text": "hello"}, False),
        ("fail", {"message": "bad input"}, True),
        ("secret", {}, False),
    ]
    echo = seen["echo"].model_dump(mode="json", by_alias=True, exclude_none=True)
    assert calls[0].result_content == echo["content"]
    assert calls[0].structured_content == echo.get("structuredContent")
    assert calls[1].error_text == seen["fail"].content[0].text
    assert calls[2].result_content[0]["text"] == "***"
    assert all(c.latency_ms > 0 and c.result_bytes > 0 for c in calls)
    assert [c.call_id for c in calls] == [f"jsonrpc:{n}" for n in (3, 4, 5)]


# --- HTTP ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module", params=["sse", "json"])
def http_server(request: pytest.FixtureRequest) -> Iterator[str]:
    """capture_server over streamable HTTP, answering POSTs with SSE streams or with JSON bodies."""
    port = free_port()
    extra = ["--json-response"] if request.param == "json" else []
    process = subprocess.Popen(
        [sys.executable, str(SERVERS / "capture_server.py"), "--http", str(port), *extra],
        env={**os.environ, "CAPTURE_SECRET": SECRET},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_port(port, process)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_mcp_session_through_http_proxy(http_server: str, tmp_path: Path) -> None:
    seen: dict[str, Any] = {}
    with HttpCaptureProxy(http_server, redactor=Redactor([(SECRET, "***")])) as proxy:
        url = proxy.route(tmp_path / "j.jsonl", label="task__demo__r001")

        async def session() -> None:
            async with Client(url) as client:
                seen["tools"] = [tool.name for tool in (await client.list_tools()).tools]
                seen["echo"] = await client.call_tool("echo", {"text": "über"})
                seen["fail"] = await client.call_tool("fail", {"message": "nope"})
                seen["secret"] = await client.call_tool("secret", {})

        anyio.run(session)
        proxy.release(url)
        assert httpx2.post(url, content=b"{}").status_code == 404  # a released route is gone

    assert seen["tools"] == ["echo", "fail", "crash", "slow", "secret"]
    assert seen["secret"].content[0].text == SECRET
    journal = tmp_path / "j.jsonl"
    assert SECRET not in journal.read_text()
    calls = journal_tool_calls(journal)
    assert [(c.tool, c.arguments, c.is_error) for c in calls] == [
        ("echo", {"text": "über"}, False),
        ("fail", {"message": "nope"}, True),
        ("secret", {}, False),
    ]
    assert calls[0].result_content == [{"type": "text", "text": "über"}]
    records = read_journal(journal)
    assert records[0].event == "proxy_started" and records[-1].event == "proxy_stopped"
    assert server_failure(records) is None


class _Upstream(BaseHTTPRequestHandler):
    """A raw HTTP endpoint: remembers request headers; /json answers JSON, /sse two events in pieces."""

    seen: list[dict[str, str]] = []
    peers: list[int] = []
    stream_ended = threading.Event()
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:  # noqa: N802
        """Three events, chunked, then silence: an idle event stream, ended only by the client leaving."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for number in range(3):
            tick = {"jsonrpc": "2.0", "method": "tick", "params": {"n": number}}
            event = f"data: {json.dumps(tick)}\n\n".encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
            self.wfile.flush()
            time.sleep(0.05)
        self.connection.settimeout(10)
        try:
            if self.rfile.read(1) == b"":  # the proxy closed its connection: it let go of the stream
                type(self).stream_ended.set()
        except OSError:
            pass
        self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        return

    def do_POST(self) -> None:  # noqa: N802
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        type(self).seen.append({k.lower(): v for k, v in self.headers.items()})
        type(self).peers.append(self.client_address[1])
        request_id = json.loads(body)["id"]
        if self.path.startswith("/json"):
            data = json.dumps({"jsonrpc": "2.0", "id": request_id, "result": {"content": []}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("X-Upstream", "yes")
            self.end_headers()
            self.wfile.write(data)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        note = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}}
        answer = {"jsonrpc": "2.0", "id": request_id, "result": {"content": [{"type": "text", "text": "ok"}]}}
        stream = f"event: message\r\ndata: {json.dumps(note)}\r\n\r\ndata: {json.dumps(answer)}\n\n".encode()
        for piece in (stream[:20], stream[20:61], stream[61:]):
            self.wfile.write(piece)
            self.wfile.flush()
            time.sleep(0.01)
        self.close_connection = True


@pytest.fixture
def upstream() -> Iterator[str]:
    _Upstream.seen, _Upstream.peers = [], []
    _Upstream.stream_ended = threading.Event()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Upstream)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("path", ["/json", "/sse"])
def test_http_proxy_forwards_bytes_adds_server_headers(upstream: str, path: str, tmp_path: Path) -> None:
    body = b'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"t","arguments":{"a":1}}}'
    with HttpCaptureProxy(upstream + path, headers={"Authorization": "Bearer token-abcdef"}) as proxy:
        url = proxy.route(tmp_path / "j.jsonl")
        direct = httpx2.post(upstream + path, content=body, headers={"Content-Type": "application/json"})
        proxied = httpx2.post(url, content=body, headers={"Content-Type": "application/json", "X-Agent": "1"})
        proxy.release(url)
    assert proxied.status_code == 200 and proxied.content == direct.content
    assert proxied.headers["content-type"] == direct.headers["content-type"]
    forwarded = _Upstream.seen[-1]
    assert forwarded["authorization"] == "Bearer token-abcdef" and forwarded["x-agent"] == "1"
    assert forwarded["accept-encoding"] == "identity"
    messages = [r for r in read_journal(tmp_path / "j.jsonl") if r.kind == "message"]
    assert messages[0].direction == "to_server" and messages[0].message == json.loads(body)
    to_agent = [m.message for m in messages if m.direction == "to_agent"]
    assert to_agent[-1]["id"] == 5  # type: ignore[index]
    assert len(to_agent) == (2 if path == "/sse" else 1)
    (call,) = journal_tool_calls(tmp_path / "j.jsonl")
    assert call.tool == "t" and call.arguments == {"a": 1} and not call.is_error


def test_http_proxy_unreachable_server_is_a_failure(tmp_path: Path) -> None:
    with HttpCaptureProxy(f"http://127.0.0.1:{free_port()}/mcp") as proxy:
        url = proxy.route(tmp_path / "j.jsonl")
        response = httpx2.post(url, content=b'{"jsonrpc":"2.0","id":1,"method":"ping"}')
        assert httpx2.post(f"http://127.0.0.1:{proxy.port}/unknown", content=b"{}").status_code == 404
    assert response.status_code == 502
    assert "ConnectionRefusedError" in (server_failure(tmp_path / "j.jsonl") or "")


def test_http_proxy_keeps_upstream_connections_alive(upstream: str, tmp_path: Path) -> None:
    with HttpCaptureProxy(upstream + "/json") as proxy:
        url = proxy.route(tmp_path / "j.jsonl")
        with httpx2.Client() as agent:
            for number in range(5):
                body = json.dumps({"jsonrpc": "2.0", "id": number, "method": "ping"}).encode()
                assert agent.post(url, content=body).json()["id"] == number
        proxy.release(url)
    assert len(_Upstream.peers) == 5 and len(set(_Upstream.peers)) == 1, "one upstream connection, reused"
    answers = [r.message for r in read_journal(tmp_path / "j.jsonl") if r.direction == "to_agent"]
    assert [answer["id"] for answer in answers] == list(range(5))  # type: ignore[index]


def test_http_proxy_streams_events_and_lets_go_when_the_agent_hangs_up(upstream: str, tmp_path: Path) -> None:
    with HttpCaptureProxy(upstream + "/stream") as proxy:
        url = proxy.route(tmp_path / "j.jsonl")
        seen = []
        with httpx2.stream("GET", url, headers={"Accept": "text/event-stream"}) as response:
            assert response.headers["content-type"] == "text/event-stream"
            for line in response.iter_lines():
                if line.startswith("data:"):
                    seen.append(json.loads(line[5:])["params"]["n"])
                if len(seen) == 3:
                    break  # the agent closes the stream
        assert seen == [0, 1, 2], "events arrive one by one, not when the stream ends"
        assert _Upstream.stream_ended.wait(5), "the proxy closed its side of the stream"
        proxy.release(url)
    ticks = [r.message for r in read_journal(tmp_path / "j.jsonl") if r.direction == "to_agent"]
    assert [tick["params"]["n"] for tick in ticks][:3] == [0, 1, 2]  # type: ignore[index]


def test_http_proxy_serves_on_the_running_event_loop(http_server: str, tmp_path: Path) -> None:
    async def session() -> list[str]:
        async with HttpCaptureProxy(http_server) as proxy:
            url = proxy.route(tmp_path / "j.jsonl")
            async with Client(url) as client:
                await client.call_tool("echo", {"text": "same loop"})
                names = [tool.name for tool in (await client.list_tools()).tools]
            proxy.release(url)
            return names

    assert "echo" in anyio.run(session)
    (call,) = journal_tool_calls(tmp_path / "j.jsonl")
    assert call.arguments == {"text": "same loop"} and call.result_content[0]["text"] == "same loop"
