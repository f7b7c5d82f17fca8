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
- the server exits on its own while the agent is connected (a crash): the
  exit is recorded with `expected: false` and the proxy exits with the
  server's code, so the agent sees the connection close;
- SIGTERM/SIGINT to the proxy: the server is stopped the same way (expected).

The server runs in its own session, so a Ctrl-C in the terminal reaches the
proxy (which stops it cleanly) rather than killing the server mid-answer.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any, NoReturn

from mcpipechekr._util.redact import Redactor
from mcpipechekr.capture.journal import JournalWriter, time_monotonic

GRACE_S = 3.0


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


class StdioProxy:
    """One proxied server process; `run()` blocks until the agent or the server is gone."""

    def __init__(
        self,
        argv: Sequence[str],
        writer: JournalWriter,
        *,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        stderr: IO[Any] | None = None,
        agent_in: IO[bytes] | None = None,
        agent_out: IO[bytes] | None = None,
        grace_s: float = GRACE_S,
    ):
        self.argv = list(argv)
        self.writer = writer
        self.env = env or {}
        self.cwd = cwd
        self.stderr = stderr
        self.agent_in = agent_in or sys.stdin.buffer
        self.agent_out = agent_out or sys.stdout.buffer
        self.grace_s = grace_s
        self.process: subprocess.Popen[bytes] | None = None
        self._stopping = threading.Event()  # the agent left or we were told to stop: an exit is expected

    def run(self) -> int:
        """Proxy until the end; returns the proxy's exit code (the server's, if it crashed)."""
        self.writer.event(
            "proxy_started", version=1, pid=os.getpid(), detail=f"stdio: {shlex.join(self.argv)}"
        )
        try:
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
            self.writer.event("server_exited", expected=False, detail=detail)
            self.writer.event("proxy_stopped")
            print(f"mcpipechekr capture: {detail}", file=sys.stderr)
            return 127
        self.writer.event("server_started", pid=self.process.pid)
        pump = threading.Thread(target=self._agent_to_server, name="capture-to-server", daemon=True)
        pump.start()
        self._server_to_agent()
        code = self.process.wait()
        expected = self._stopping.is_set()
        self.writer.event(
            "server_exited",
            pid=self.process.pid,
            exit_code=code,
            expected=expected,
            detail=None if expected else _exit_text(code) + " while the agent was connected",
        )
        self.writer.event("proxy_stopped")
        return 0 if expected else (code if code > 0 else 128 - code)

    def stop(self) -> None:
        """Stop the server on purpose (signal handler, or the agent left): the exit is expected."""
        self._stopping.set()
        process = self.process
        if process is None:
            return
        try:
            if process.stdin is not None:
                process.stdin.close()  # most servers exit on end of input; the rest get signals
        except (OSError, ValueError):
            pass
        threading.Thread(target=self._terminate, args=(process,), daemon=True).start()

    def _agent_to_server(self) -> None:
        assert self.process is not None and self.process.stdin is not None
        stdin = self.process.stdin
        try:
            for line in iter(self.agent_in.readline, b""):
                self.writer.message("to_server", line, time_monotonic())
                stdin.write(line)
                stdin.flush()
        except (BrokenPipeError, ValueError, OSError):
            pass  # the server is gone; its exit is recorded by the other direction
        finally:
            self._stopping.set()
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
            self.writer.message("to_agent", line, time_monotonic())
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
) -> int:
    """The `python -m mcpipechekr.capture` entry: proxy stdin/stdout to `argv`, journal to `journal`."""
    stderr = open(stderr_path, "ab", buffering=0) if stderr_path else None  # noqa: SIM115
    try:
        with JournalWriter(journal, redactor) as writer:
            proxy = StdioProxy(argv, writer, env=env, cwd=cwd, stderr=stderr)

            def on_signal(signum: int, frame: object) -> None:
                proxy.stop()

            signal.signal(signal.SIGTERM, on_signal)
            signal.signal(signal.SIGINT, on_signal)
            return proxy.run()
    finally:
        if stderr is not None:
            stderr.close()
