"""`mcpipechekr capture -- CMD…`: the passive proxy a user puts in a real MCP client's config.

It is the Phase 1 stdio proxy (`capture.stdio_proxy.StdioProxy`: byte-for-byte
forwarding, journal before forward, clean shutdown of the server) with a
different journal writer: instead of every message, `CallRecordWriter` keeps
one sanitized call record per `tools/call` (`records.CallRecord`), paired by
`tracker.CallTracker`, and appends it to its own journal under the home's
shared lock. Nothing else of the traffic is stored.

Each proxy process is one session (a random token) with one journal, named
by its start time. A record is written when the response arrives, with one
`write(2)` on an O_APPEND file, not fsynced: as for Phase 1 journals, a crash
may lose the record being written, never corrupt an earlier one, and the
indexer leaves an unfinished last line for later. Calls still waiting when
the server exits or the client leaves are recorded as unanswered.

The proxy adds the parse of each line to the forwarding path; a server's
line is not parsed at all while no call (or handshake) waits for an answer.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from mcpipechekr.capture.stdio_proxy import StdioProxy, exit_at_once
from mcpipechekr.findings.evidence.records import CallRecord, journal_name
from mcpipechekr.findings.evidence.tracker import CallTracker
from mcpipechekr.findings.home import Home
from mcpipechekr.findings.locking import JournalLock

_LAUNCHERS = {"python", "node", "npx", "uv", "uvx", "bun", "bunx", "deno", "pipx", "docker", "run", "exec"}


def default_server_name(argv: Sequence[str]) -> str:
    """A name for the server until its own answers name it: the script or package it runs.

    `python server.py` → `server`, `npx -y @acme/mail-mcp` → `mail-mcp`,
    `./bin/notes` → `notes`.
    """
    for arg in argv:
        base = Path(arg).name
        stem = base.split("@")[0] if not base.startswith("@") else base
        stem = Path(stem).stem if "." in stem else stem
        if arg.startswith("-") or stem.rstrip("0123456789.") in _LAUNCHERS or not stem:
            continue
        return stem[:200]
    return "server"


class CallRecordWriter:
    """The journal writer the stdio proxy calls (`message`, `event`, `close`), keeping call records only.

    Thread-safe: the proxy's two pump threads call `message` concurrently.
    """

    def __init__(
        self,
        home: Home,
        *,
        server: str | None,
        fallback_server: str = "server",
    ):
        home.journals.mkdir(parents=True, exist_ok=True)
        self.path = home.journals / journal_name("capture")
        self.session = uuid.uuid4().hex
        self.tracker = CallTracker(
            salt=home.salt(),
            server=server or fallback_server,
            session=self.session,
            learn_server=server is None,
        )
        self.written = 0
        self._lock = threading.Lock()
        self._journal_lock = JournalLock(home)
        self._fd: int | None = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)

    def message(self, direction: str, data: bytes, t: float, parsed: Any = None) -> None:
        """One line crossed the proxy; remember calls, write the record of each answered one.

        Never raises: the proxy journals before it forwards, and recording must
        not stop the client's traffic. A failure (a full disk, say) is reported
        once on stderr and recording stops; forwarding goes on.
        """
        with self._lock:
            if self._fd is None:
                return
            try:
                if direction == "to_server":
                    message = parsed if parsed is not None else _loads(data)
                    self.tracker.to_server(message, len(data), t, datetime.now(UTC))
                elif self.tracker.waiting:
                    message = parsed if parsed is not None else _loads(data)
                    self._write(self.tracker.to_agent(message, len(data), t))
            except Exception as exc:  # see the docstring: recording must not stop forwarding
                self._give_up(exc)

    def event(self, event: str, t: float | None = None, **fields: Any) -> None:
        """The server exited or the proxy stopped: calls still waiting will get no answer."""
        if event not in ("server_exited", "proxy_stopped"):
            return
        from mcpipechekr.capture.journal import time_monotonic

        reason = "server_exited" if event == "server_exited" and not fields.get("expected") else "ended"
        with self._lock:
            if self._fd is None:
                return
            try:
                self._write(self.tracker.unanswered(time_monotonic() if t is None else t, reason))
            except Exception as exc:  # as in `message`
                self._give_up(exc)

    def _give_up(self, exc: Exception) -> None:
        """Stop recording (the lock is held); say so once, where the client logs the server's stderr."""
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)
        print(
            f"mcpipechekr capture: stopped recording calls to {self.path} ({type(exc).__name__}: {exc}); "
            "the server's traffic is still forwarded",
            file=sys.stderr,
            flush=True,
        )

    def _write(self, records: list[CallRecord]) -> None:
        if not records or self._fd is None:
            return
        data = memoryview(b"".join(record.to_line() for record in records))
        with self._journal_lock.shared():
            while data:
                data = data[os.write(self._fd, data) :]
        self.written += len(records)

    def close(self) -> None:
        self.event("proxy_stopped")
        with self._lock:
            fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)
        self._journal_lock.close()

    def __enter__(self) -> CallRecordWriter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _loads(data: bytes) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return None


def run_passive_capture(argv: Sequence[str], home: Home, *, server: str | None = None) -> int:
    """Proxy this process's stdin/stdout to the server `argv`, recording calls; returns the exit code.

    The server inherits the environment and working folder, and its stderr
    goes where the client sends the proxy's.
    """
    if not argv:
        raise ValueError("no server command")
    with CallRecordWriter(home, server=server, fallback_server=default_server_name(argv)) as writer:
        proxy = StdioProxy(argv, writer)  # type: ignore[arg-type]

        def on_signal(signum: int, frame: object) -> None:
            proxy.stop()

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        return proxy.run()


def main(argv: list[str] | None = None) -> int:
    """`python -m mcpipechekr.findings.evidence.passive [--home DIR] [--server NAME] -- CMD…`.

    The same proxy as `mcpipechekr capture`, started without loading the rest
    of the command line: for clients that give a server little time to start.
    """
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m mcpipechekr.findings.evidence.passive",
        description="Run an MCP stdio server behind a proxy that records each tool call, sanitized.",
    )
    parser.add_argument("--home", help="Findings home [default: $MCPIPECHEKR_HOME, else .mcpipechekr/].")
    parser.add_argument("--server", help="Server name in the records [default: the name it gives itself].")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- CMD ARGS…: the server to run.")
    opts = parser.parse_args(argv)
    command = opts.command[1:] if opts.command[:1] == ["--"] else opts.command
    if not command:
        parser.error("give the server's command after `--`")
    home = Home.resolve(opts.home)
    try:
        return run_passive_capture(command, home, server=opts.server)
    except OSError as exc:
        parser.exit(2, f"capture: cannot record calls under {home.root}: {exc.strerror or exc}\n")


if __name__ == "__main__":
    exit_at_once(main())
