"""The server under test: health check, halts on every way a server fails, restart, over stdio and HTTP."""

from __future__ import annotations

import os
import signal
import socket
import sys
import threading
import time
from pathlib import Path

import pytest

from mcpipechekr._util.process_group import process_running
from mcpipechekr.config import ServerConfig
from mcpipechekr.errors import ServerHalt
from mcpipechekr.server.lifecycle import ServerUnderTest, fetch_tool_names

TINY = str(Path(__file__).parent / "servers" / "tiny_server.py")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def stdio(*args: str, timeout_s: float = 10, min_tools: int = 1) -> ServerConfig:
    return ServerConfig(
        name="tiny",
        command="python",
        args=[TINY, *args],
        health={"timeout_s": timeout_s, "min_tools": min_tools},
    )


def http(port: int, *args: str, timeout_s: float = 10, start: bool = True) -> ServerConfig:
    return ServerConfig(
        name="tiny-http",
        url=f"http://127.0.0.1:{port}/mcp",
        start={"command": sys.executable, "args": [TINY, "--http", str(port), *args]} if start else None,
        health={"timeout_s": timeout_s},
    )


def server_pid(live: ServerUnderTest) -> int:
    return int(live.call_tool("pid").content[0].text)


def test_stdio_health_call_and_restart(tmp_path: Path) -> None:
    log = tmp_path / "server.stderr.log"
    with ServerUnderTest(stdio(), log) as live:
        assert live.health is not None
        assert live.health.tools == ["echo", "pid", "sleep"]
        assert live.health.transport == "stdio"
        assert live.health.elapsed_s < 10
        result = live.call_tool("echo", {"text": "hello"})
        assert not result.is_error and result.content[0].text == "hello"
        first = server_pid(live)
        report = live.restart()
        assert report.tools == ["echo", "pid", "sleep"]
        second = server_pid(live)
        assert second != first
        with pytest.raises(ProcessLookupError):
            os.kill(first, 0)  # the old process is gone, not leaked
    with pytest.raises(ProcessLookupError):
        os.kill(second, 0)
    assert log.exists()


def test_server_that_exits_at_start_halts_with_exit_code_and_stderr(tmp_path: Path) -> None:
    log = tmp_path / "server.stderr.log"
    started = time.monotonic()
    with pytest.raises(ServerHalt) as caught:
        ServerUnderTest(stdio("--exit-at-start", "3", timeout_s=5), log).start()
    assert time.monotonic() - started < 5
    message = str(caught.value.message)
    assert "server 'tiny' exited with code 3 during start-up" in message
    assert f"Its stderr is logged at {log}" in message
    assert "missing DATABASE_URL" in message  # the server's own explanation is shown
    assert caught.value.exit_code == 2


def test_server_that_never_answers_halts_within_the_timeout(tmp_path: Path) -> None:
    started = time.monotonic()
    with pytest.raises(ServerHalt) as caught:
        ServerUnderTest(stdio("--hang", timeout_s=2), tmp_path / "log").start()
    elapsed = time.monotonic() - started
    assert elapsed < 2 + 1.0
    assert "did not answer within 2s (server.health.timeout_s" in caught.value.message
    assert "during start-up" in caught.value.message


def test_server_with_too_few_tools_fails_the_health_check(tmp_path: Path) -> None:
    with pytest.raises(ServerHalt) as caught:
        ServerUnderTest(stdio("--no-tools"), tmp_path / "log").start()
    assert "listed 0 tool(s) where the health check needs at least 1" in caught.value.message
    # ...and min_tools: 0 accepts it
    with ServerUnderTest(stdio("--no-tools", min_tools=0), tmp_path / "log") as live:
        assert live.health is not None and live.health.tools == []


def test_missing_executable_is_named(tmp_path: Path) -> None:
    config = ServerConfig(name="ghost", command="/nonexistent/mcp-server", health={"timeout_s": 5})
    with pytest.raises(ServerHalt) as caught:
        ServerUnderTest(config, tmp_path / "log").start()
    assert "could not be started" in caught.value.message
    assert "/nonexistent/mcp-server" in caught.value.message


def test_server_killed_mid_session_halts_and_restart_recovers(tmp_path: Path) -> None:
    with ServerUnderTest(stdio(), tmp_path / "log") as live:
        pid = server_pid(live)
        os.kill(pid, signal.SIGKILL)
        started = time.monotonic()
        with pytest.raises(ServerHalt) as caught:
            live.call_tool("echo", {"text": "anyone?"}, timeout_s=5)
        assert time.monotonic() - started < 5
        assert "was killed by signal SIGKILL during tools/call 'echo'" in caught.value.message
        # nothing runs against a dead server: later calls repeat the halt instead of hanging
        with pytest.raises(ServerHalt):
            live.list_tools()
        assert not live.running
        live.restart()
        assert live.running
        assert live.call_tool("echo", {"text": "back"}).content[0].text == "back"


def test_hung_tool_call_times_out_with_the_tool_named(tmp_path: Path) -> None:
    with ServerUnderTest(stdio(), tmp_path / "log") as live:
        started = time.monotonic()
        with pytest.raises(ServerHalt) as caught:
            live.call_tool("sleep", {"seconds": 30}, timeout_s=1)
        assert time.monotonic() - started < 3
        assert "did not answer within 1s during tools/call 'sleep'" in caught.value.message


def test_http_server_started_by_harness(tmp_path: Path) -> None:
    port = free_port()
    with ServerUnderTest(http(port), tmp_path / "log") as live:
        assert live.health is not None and live.health.transport == "http"
        assert live.call_tool("echo", {"text": "over http"}).content[0].text == "over http"
        first = server_pid(live)
        live.restart()
        second = server_pid(live)
        assert first != second
        os.kill(second, signal.SIGKILL)
        with pytest.raises(ServerHalt) as caught:
            live.call_tool("echo", {"text": "x"}, timeout_s=5)
        assert "was killed by signal SIGKILL during tools/call 'echo'" in caught.value.message
        live.restart()
        assert live.call_tool("echo", {"text": "again"}).content[0].text == "again"


def test_http_server_that_exits_at_start(tmp_path: Path) -> None:
    with pytest.raises(ServerHalt) as caught:
        ServerUnderTest(http(free_port(), "--exit-at-start", "4", timeout_s=5), tmp_path / "log").start()
    assert "exited with code 4 during start-up" in caught.value.message


def test_http_url_nobody_listens_on(tmp_path: Path) -> None:
    port = free_port()
    started = time.monotonic()
    with pytest.raises(ServerHalt) as caught:
        ServerUnderTest(http(port, timeout_s=1.5, start=False), tmp_path / "log").start()
    assert time.monotonic() - started < 3
    assert f"did not accept connections on 127.0.0.1:{port} within 1.5s" in caught.value.message


def test_fetch_tool_names(tmp_path: Path) -> None:
    assert fetch_tool_names(stdio()) == ["echo", "pid", "sleep"]
    with pytest.raises(ServerHalt):
        fetch_tool_names(stdio("--hang"), timeout_s=1)


# --- a start begun in the background (start_soon), waited for or abandoned ----------------------------


def running_with(marker: str) -> list[int]:
    """Our running (not zombie) child processes whose command line holds `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if marker in cmdline and process_running(int(entry.name)):
            found.append(int(entry.name))
    return found


def test_a_start_begun_in_the_background_is_waited_for_and_used(tmp_path: Path) -> None:
    live = ServerUnderTest(stdio(), tmp_path / "server.stderr.log")
    live.start_soon()
    try:
        report = live.wait_started()
        assert report.tools == ["echo", "pid", "sleep"]
        pid = server_pid(live)
    finally:
        live.stop()
    assert not process_running(pid)
    with pytest.raises(ServerHalt, match="exited with code 3 during start-up"):
        failing = ServerUnderTest(stdio("--exit-at-start", "3"), tmp_path / "failing.stderr.log")
        failing.start_soon()
        failing.wait_started()


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="finds the server's process in /proc")
def test_a_start_under_way_is_cancelled_by_stop_and_leaves_no_process(tmp_path: Path) -> None:
    marker = str(tmp_path / "never-answers")
    log = tmp_path / "server.stderr.log"
    # The health check would wait 600 s: stop() returns long before, because it cancels the start.
    live = ServerUnderTest(stdio("--hang", "--gate", marker, timeout_s=600), log)
    live.start_soon()
    deadline = time.monotonic() + 30
    while "hanging" not in (log.read_text() if log.exists() else "") and time.monotonic() < deadline:
        time.sleep(0.02)  # until the process runs: an order, not a duration
    assert running_with(marker), "the server never started"
    live.stop()
    assert running_with(marker) == []
    assert not [thread for thread in threading.enumerate() if thread.name == "start tiny"]
