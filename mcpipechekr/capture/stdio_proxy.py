"""The stdio capture proxy: the agent launches it as its MCP server, and it launches the real one.

    agent  --stdin-->  proxy  --stdin-->  server
    agent  <--stdout-- proxy  <--stdout-- server

MCP's stdio transport is newline-delimited JSON-RPC, so the proxy moves whole
lines: each line is forwarded byte for byte and recorded in the journal. Two
threads pump the two directions with blocking reads, which costs a few
microseconds per message and needs no event loop.

Ordering: every line is journaled *before* it is forwarded, in both
directions, so the journal's order is the order the other side could act on:
a request's record precedes its response's, and a response's record precedes
whatever the agent sends after reading it. The timestamp is taken when the
line arrives, so the journal write does not count in a call's latency.

Lifecycle:
- the agent closes stdin (it is done): the server's stdin is closed, it gets
  `grace_s` to exit, then SIGTERM, then SIGKILL; `server_exited` is recorded
  with `expected: true`;
- SIGTERM/SIGINT to the proxy: the server is stopped the same way (expected);
- the server exits while the agent is connected: a crash, recorded with
  `expected: false`; the proxy exits with the server's code, so the agent
  sees the connection close. One exception, the agent's own shutdown: some
  agents stop their MCP server's whole process tree themselves (opencode
  sends SIGTERM to each descendant of the process it launched, found with
  `pgrep -P`, then closes that process's stdin), so the server may die a few
  milliseconds before the agent lets go of the proxy. When the server ended
  the way a stop ends a process (a stop signal the proxy did not send, the
  128+n code a wrapper reports for one, or a clean exit) and no `tools/call`
  was in flight, the proxy keeps the connection open for up to `leave_s` and
  watches the agent: if it lets go (closes stdin or signals the proxy)
  without sending another `tools/call`, the exit was its shutdown and is
  recorded as expected, with a `detail` saying so. The agent cannot have
  learned of the exit meanwhile (the connection is still open), so its
  letting go is its own decision, not a reaction. A server that dies while a
  `tools/call` is in flight, dies of anything else (an exit code, SIGSEGV,
  SIGABRT), or is stopped while the agent carries on, is a crash as before.

The server runs in its own session, so a Ctrl-C in the terminal reaches the
proxy (which stops it cleanly) rather than killing the server mid-answer.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any, NoReturn

import orjson

from mcpipechekr._util.private_log import RedactingLog
from mcpipechekr._util.redact import Redactor
from mcpipechekr.capture.journal import JournalWriter, parse_message, time_monotonic

GRACE_S = 3.0
LEAVE_S = 5.0
"""How long a server stopped from outside the proxy waits for the agent to let go (see the module doc).

opencode closes its MCP server's stdin within milliseconds of signalling the server, and signals the
proxy two seconds later if it is still there; the rest is slack for a loaded machine."""
STOP_SIGNALS = frozenset({signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGKILL})
"""Signals agents and process managers stop a process with; SIGSEGV, SIGABRT and the like are crashes."""


def exit_at_once(code: int) -> NoReturn:
    """Flush stdout and stderr, then leave without the interpreter's shutdown.

    The thread pumping the agent's stdin may still be blocked reading it (the
    server left first); a normal shutdown would then abort on the stdin lock.
    """
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


def _python_env(extra: dict[str, str]) -> dict[str, str]:
    env = dict(os.environ)
    env.update(extra)
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def _request_key(request_id: Any) -> bytes:
    return orjson.dumps(request_id)


def stopped_like_a_stop(code: int) -> bool:
    """Whether an exit status is how a stopped process ends: a stop signal, its 128+n code, or 0.

    The 128+n form is what a wrapper (a shell, `npx`, `uv run`) reports when the
    process it runs was stopped; an agent that stops the whole tree stops both.
    """
    if code == 0:
        return True
    number = -code if code < 0 else code - 128
    return number in {int(sig) for sig in STOP_SIGNALS}


class StdioProxy:
    """One proxied server process; `run()` blocks until the agent or the server is gone."""

    def __init__(
        self,
        argv: Sequence[str],
        writer: JournalWriter,
        *,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        stderr: IO[Any] | int | None = None,
        agent_in: IO[bytes] | None = None,
        agent_out: IO[bytes] | None = None,
        grace_s: float = GRACE_S,
        leave_s: float = LEAVE_S,
        attach: Path | None = None,
    ):
        self.argv = list(argv)
        self.attach = attach  # a server the harness started ahead (`capture.warm`), instead of starting one
        self.writer = writer
        self.env = env or {}
        self.cwd = cwd
        self.stderr = stderr
        self.agent_in = agent_in or sys.stdin.buffer
        self.agent_out = agent_out or sys.stdout.buffer
        self.grace_s = grace_s
        self.leave_s = leave_s
        self.process: subprocess.Popen[bytes] | None = None
        # True once the agent let go: it closed stdin, stopped reading, or signalled the proxy. A plain
        # attribute, not an Event: the signal handler sets it on the main thread, which could be holding
        # an Event's lock at that moment (a deadlock); the main thread polls it instead of waiting.
        self._agent_left = False
        self._in_flight: set[bytes] = set()  # ids of tools/call requests neither answered nor cancelled
        self._in_flight_lock = threading.Lock()

    def run(self) -> int:
        """Proxy until the end; returns the proxy's exit code (the server's, if it crashed)."""
        self.writer.event(
            "proxy_started", version=1, pid=os.getpid(), detail=f"stdio: {shlex.join(self.argv)}"
        )
        detail: str | None = None
        try:
            if self.attach is not None:
                attached = AttachedServer(self.attach)
                self.process = attached  # type: ignore[assignment]
                detail = f"started {attached.started_s:.1f} s before the agent attached"
            else:
                self.process = subprocess.Popen(
                    self.argv,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=self.stderr,
                    cwd=self.cwd,
                    env=_python_env(self.env),
                    start_new_session=True,
                )
        except OSError as exc:
            detail = f"could not start the server: {exc.strerror or exc}: {self.argv[0]!r}"
            if self.attach is not None:
                detail = f"could not reach the server started ahead: {exc.strerror or exc}"
            self.writer.event("server_exited", expected=False, detail=detail)
            self.writer.event("proxy_stopped")
            print(f"mcpipechekr capture: {detail}", file=sys.stderr)
            return 127
        self.writer.event("server_started", pid=self.process.pid, detail=detail)
        pump = threading.Thread(target=self._agent_to_server, name="capture-to-server", daemon=True)
        pump.start()
        self._server_to_agent()
        code = self.process.wait()
        expected, detail = self._judge_exit(code)
        self.writer.event(
            "server_exited", pid=self.process.pid, exit_code=code, expected=expected, detail=detail
        )
        self.writer.event("proxy_stopped")
        return 0 if expected else (code if code > 0 else 128 - code)

    def _judge_exit(self, code: int) -> tuple[bool, str | None]:
        """(expected, detail) for the server's exit with `code`: the agent's doing, or a crash."""
        if self._agent_left:
            return True, None
        crash = _exit_text(code) + " while the agent was connected"
        if self._calls_in_flight() or not stopped_like_a_stop(code):
            return False, crash
        # Perhaps the agent stopped the server itself and is about to let go of the proxy: hold the
        # connection open and watch.
        waited_from = time_monotonic()
        deadline = waited_from + self.leave_s
        while not self._agent_left and time_monotonic() < deadline:
            time.sleep(0.005)
        if not self._agent_left or self._calls_in_flight():
            return False, crash
        how = f"was killed by {_signal_name(-code)}" if code < 0 else f"exited with code {code}"
        return True, (
            f"the agent stopped the server: it {how}, not at the proxy's request, with no tools/call "
            f"in flight, and the agent let go {time_monotonic() - waited_from:.2f} s later"
        )

    def stop(self) -> None:
        """Stop the server on purpose (the agent signalled the proxy or stopped reading): an expected exit."""
        self._agent_left = True
        process = self.process
        if process is None:
            return
        try:
            if process.stdin is not None:
                process.stdin.close()  # most servers exit on end of input; the rest get signals
        except (OSError, ValueError):
            pass
        threading.Thread(target=self._terminate, args=(process,), daemon=True).start()

    def _calls_in_flight(self) -> bool:
        with self._in_flight_lock:
            return bool(self._in_flight)

    def _record(self, direction: str, line: bytes, t: float) -> None:
        """Journal one line, and keep count of the tools/call requests the server owes an answer."""
        parsed, _ = parse_message(line)
        for message in parsed if isinstance(parsed, list) else [parsed]:  # a JSON-RPC batch, or one
            if isinstance(message, dict):
                self._track(direction, message)
        self.writer.message(direction, line, t, parsed)

    def _track(self, direction: str, message: dict[str, Any]) -> None:
        method = message.get("method")
        with self._in_flight_lock:
            if direction == "to_server" and method == "tools/call" and "id" in message:
                self._in_flight.add(_request_key(message["id"]))
            elif direction == "to_server" and method == "notifications/cancelled":
                params = message.get("params")
                if isinstance(params, dict):
                    self._in_flight.discard(_request_key(params.get("requestId")))
            elif direction == "to_agent" and method is None and "id" in message:
                self._in_flight.discard(_request_key(message["id"]))

    def _agent_to_server(self) -> None:
        assert self.process is not None and self.process.stdin is not None
        stdin = self.process.stdin
        forwarding = True
        try:
            for line in iter(self.agent_in.readline, b""):
                self._record("to_server", line, time_monotonic())
                if not forwarding:
                    continue
                try:
                    stdin.write(line)
                    stdin.flush()
                except (BrokenPipeError, ValueError, OSError):
                    # The server is gone (its exit is recorded by the other direction). Reading goes on:
                    # whether the agent lets go, or sends more, tells a shutdown from a crash.
                    forwarding = False
        except (ValueError, OSError):
            pass  # the agent's end of stdin broke: it is gone
        finally:
            self._agent_left = True
            try:
                stdin.close()
            except OSError:
                pass
            self._terminate(self.process)

    def _server_to_agent(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        out = self.agent_out
        agent_gone = False
        for line in iter(self.process.stdout.readline, b""):
            self._record("to_agent", line, time_monotonic())
            if not agent_gone:
                try:
                    out.write(line)
                    out.flush()
                except (BrokenPipeError, ValueError, OSError):
                    agent_gone = True
                    self.stop()

    def _terminate(self, process: subprocess.Popen[bytes]) -> None:
        """Give the server `grace_s` to exit after its stdin closed, then SIGTERM, then SIGKILL."""
        for sig in (None, signal.SIGTERM, signal.SIGKILL):
            if sig is not None:
                try:
                    os.killpg(process.pid, sig)
                except (ProcessLookupError, PermissionError):
                    return
            try:
                process.wait(timeout=self.grace_s)
                return
            except subprocess.TimeoutExpired:
                continue


class AttachedServer:
    """A server the harness started ahead (`capture.warm`), driven like a process the proxy started.

    The pool hands over the server's stdin and stdout over a unix socket (SCM_RIGHTS) with its pid, keeps
    the process as its own child, and sends its exit status down the socket when it ends: `wait` reads it.
    The attributes and methods are those of `subprocess.Popen` the proxy uses.
    """

    def __init__(self, path: Path):
        self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._socket.connect(str(path))
            data, fds, _, _ = socket.recv_fds(self._socket, 4096, 2)
        except OSError:
            self._socket.close()
            raise
        line, _, self._buffer = data.partition(b"\n")
        header = orjson.loads(line) if line else {"error": "the pool closed the connection"}
        if "error" in header or len(fds) != 2:
            for fd in fds:
                os.close(fd)
            self._socket.close()
            raise OSError(str(header.get("error") or "the pool sent no pipes"))
        self.pid: int = header["pid"]
        self.started_s: float = float(header.get("started_s") or 0.0)
        self.stdin: IO[bytes] = os.fdopen(fds[0], "wb")
        self.stdout: IO[bytes] = os.fdopen(fds[1], "rb")
        self.returncode: int | None = None
        self._lock = threading.Lock()

    def wait(self, timeout: float | None = None) -> int:
        with self._lock:
            if self.returncode is not None:
                return self.returncode
            deadline = None if timeout is None else time.monotonic() + timeout
            while b"\n" not in self._buffer:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    raise subprocess.TimeoutExpired(str(self.pid), timeout or 0)
                self._socket.settimeout(remaining)
                try:
                    chunk = self._socket.recv(4096)
                except TimeoutError:
                    raise subprocess.TimeoutExpired(str(self.pid), timeout or 0) from None
                except OSError:
                    chunk = b""
                if not chunk:  # the pool is gone (its process was killed): the status cannot be known
                    self.returncode = 0
                    return 0
                self._buffer += chunk
            line = self._buffer.split(b"\n", 1)[0]
            self.returncode = int(orjson.loads(line).get("exit", 0))
            self._socket.close()
            return self.returncode

    def poll(self) -> int | None:
        try:
            return self.wait(timeout=0.001)
        except subprocess.TimeoutExpired:
            return None


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _exit_text(code: int) -> str:
    if code < 0:
        try:
            return f"the server was killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"the server was killed by signal {-code}"
    return f"the server exited with code {code}"


def run_stdio_proxy(
    argv: Sequence[str],
    journal: Path,
    *,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
    stderr_path: Path | None = None,
    redactor: Redactor | None = None,
    attach: Path | None = None,
) -> int:
    """The `python -m mcpipechekr.capture` entry: proxy stdin/stdout to `argv`, journal to `journal`.

    The server's stderr, when `stderr_path` is given, goes through a redacting
    pipe into that private log: it never reaches the file raw.
    """
    with contextlib.ExitStack() as stack:
        stderr = (
            stack.enter_context(RedactingLog(stderr_path, redactor or Redactor([]))).fileno()
            if stderr_path
            else None
        )
        writer = stack.enter_context(JournalWriter(journal, redactor))
        proxy = StdioProxy(argv, writer, env=env, cwd=cwd, stderr=stderr, attach=attach)

        def on_signal(signum: int, frame: object) -> None:
            proxy.stop()

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        return proxy.run()
