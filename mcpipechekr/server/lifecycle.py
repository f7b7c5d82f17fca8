"""Owning the MCP server under test: start it, prove it healthy, call it, restart it, stop it.

Design (the parts live in modules of `server/` named for them):
- `connection.connect()` is the async core: one process (for stdio, or for an HTTP server
  with a `start` command) and one MCP client session, torn down together.
- `processes.http_server_started()` is for Phase 1, whose agents reach an HTTP server
  through the capture proxy rather than a session of ours: it only starts the
  `start` command, waits for the URL's port and stops it afterwards. Everything
  in this process that runs attempts at once (`mcpipechekr run`'s slots, doit's
  trace targets in threads) shares the one process: the first starts it, the
  last stops it, since a second copy could not listen on the same port.
- `ServerUnderTest` is the synchronous face the CLI and the doit graph use. It
  runs the async core in a background event loop (an anyio blocking portal), so
  one server process stays up across the phases of a harness run.
- Every way a server can fail becomes a `ServerHalt` that says what happened
  (exit code or signal, timeout, closed connection), which call was running,
  and where the server's stderr was logged, with its last lines. Nothing runs
  against a dead or stale server: after a halt the object refuses further calls
  until it is restarted.
- The server's stderr never reaches disk raw (`logs`): it goes through a `RedactingLog`
  pipe into a private log file (mode 0600, never through a symlink), with every
  secret the configuration knows replaced; halt messages are redacted too,
  since they quote that log and the server's command line. `server_under_test`
  builds the object from the whole configuration, so `${VAR}` values are among
  the secrets; without a log path the log lives in a private temporary folder
  removed when the server stops.
"""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import anyio
import anyio.from_thread
import mcp_types
from mcp import Client

from mcpipechekr._util.redact import Redactor
from mcpipechekr._util.tempfiles import own_temp_folder
from mcpipechekr.config import Config, ServerConfig
from mcpipechekr.server.connection import Connection, HealthReport, connect
from mcpipechekr.server.logs import log_path_in, server_redactor

T = TypeVar("T")


class _StartAbandoned(Exception):
    """Why a background start's event loop is cancelled when its server is stopped before it was used."""


@dataclass
class _PendingStart:
    """A start begun by `ServerUnderTest.start_soon()`: the thread waiting for it, and what it got."""

    thread: threading.Thread = field(default_factory=threading.Thread)
    entered: tuple[Connection, HealthReport] | None = None
    error: BaseException | None = None


class ServerUnderTest:
    """The server under test as a synchronous object that stays up across phases.

    `start()` launches and health-checks it; `call_tool`/`list_tools` talk to it;
    `restart()` stops and starts it again, health check included; `stop()` ends
    it. Use it as a context manager to guarantee the process is stopped.

    `start_soon()` begins the same start and returns at once, so that a slow
    server starts while the caller does other work (another server's start, say);
    `wait_started()` then waits for it. `stop()` ends it at any point, a start
    still under way included: that start is cancelled, which stops its process.
    """

    def __init__(
        self,
        server: ServerConfig,
        log_path: Path | None = None,
        redactor: Redactor | None = None,
        on_started: Callable[[HealthReport], None] | None = None,
    ):
        self.server = server
        self.on_started = on_started  # told of each start's health report (its start is measured)
        self.redactor = redactor or server_redactor(server)
        # Without a log path (no run folder, no findings home) each start logs into a private folder
        # of its own, made by mkdtemp and removed at stop().
        self._temporary_log = log_path is None
        self._scratch: Path | None = None
        self.log_path = log_path
        self._portal_cm: AbstractContextManager[anyio.from_thread.BlockingPortal] | None = None
        self._portal: anyio.from_thread.BlockingPortal | None = None
        self._session_cm: AbstractContextManager[tuple[Connection, HealthReport]] | None = None
        self._connection: Connection | None = None
        self.health: HealthReport | None = None
        self._pending: _PendingStart | None = None

    def __enter__(self) -> ServerUnderTest:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self._connection is not None and self._connection.halted is None

    def start(self) -> HealthReport:
        """Launch (or reach) the server and pass the health check; raises ServerHalt otherwise."""
        session_cm = self._begin_start()
        try:
            self._connection, self.health = session_cm.__enter__()
        except BaseException as exc:
            self._failed_start(exc)
            raise
        if self.on_started is not None:
            self.on_started(self.health)
        return self.health

    def start_soon(self) -> None:
        """Begin `start()` and return at once; `wait_started()` waits for it, `stop()` ends it.

        The server's event loop thread launches it and runs the health check
        while the caller goes on; a helper thread only waits for that to finish.
        """
        session_cm = self._begin_start()
        pending = _PendingStart()

        def enter() -> None:
            try:
                pending.entered = session_cm.__enter__()
            except BaseException as exc:  # handed to wait_started(), or dropped by stop()
                pending.error = exc

        pending.thread = threading.Thread(target=enter, name=f"start {self.server.name}", daemon=True)
        self._pending = pending
        pending.thread.start()

    def wait_started(self) -> HealthReport:
        """Wait for the start `start_soon()` began; raises what `start()` would have (ServerHalt, ...)."""
        pending = self._pending
        if pending is None:
            if self.health is None or self._connection is None:
                raise RuntimeError("no start under way: call start_soon() first")
            return self.health
        try:
            pending.thread.join()
        except BaseException as exc:  # Ctrl-C while waiting: the start is cancelled, its process stopped
            self._abandon_start(exc)
            raise
        self._pending = None
        if pending.error is not None or pending.entered is None:
            error = pending.error or RuntimeError("the server's start ended without a result")
            self._failed_start(error)
            raise error
        self._connection, self.health = pending.entered
        if self.on_started is not None:
            self.on_started(self.health)
        return self.health

    def _begin_start(self) -> AbstractContextManager[tuple[Connection, HealthReport]]:
        """The portal and session of a start, not yet entered."""
        if self._connection is not None or self._pending is not None:
            raise RuntimeError("server already started; use restart()")
        if self._temporary_log:
            self._scratch = own_temp_folder("server")
            self.log_path = self._scratch / "server.stderr.log"
        assert self.log_path is not None
        self._portal_cm = anyio.from_thread.start_blocking_portal()
        self._portal = self._portal_cm.__enter__()
        self._session_cm = self._portal.wrap_async_context_manager(
            connect(self.server, self.log_path, self.redactor, temporary_log=self._temporary_log)
        )
        return self._session_cm

    def _failed_start(self, error: BaseException) -> None:
        """Clean up after a start that raised: its session is over, its portal's tasks are cancelled."""
        self._session_cm = None
        self._close_portal(error)
        self._remove_scratch()

    def _abandon_start(self, error: BaseException | None = None) -> None:
        """End a `start_soon()` that nobody waited for: cancel it (or its session, if it got that far)
        in the server's event loop, which stops the process, then let the helper thread finish."""
        pending, self._pending = self._pending, None
        if pending is None:
            return
        try:
            self._failed_start(error or _StartAbandoned(f"server '{self.server.name}' stopped at its start"))
        finally:
            pending.thread.join()

    def stop(self) -> None:
        """Stop the server (closing its session first); safe to call twice, after a halt, or while a
        `start_soon()` is still under way (which is then cancelled)."""
        if self._pending is not None:
            self._abandon_start()
            return
        session_cm, connection = self._session_cm, self._connection
        self._session_cm, self._connection = None, None
        try:
            if session_cm is not None:
                try:
                    session_cm.__exit__(None, None, None)
                except Exception:
                    # A dead server's session can fail or be cancelled while closing; the process
                    # is stopped by the session's own cleanup either way, and the halt was reported.
                    if connection is None or connection.halted is None:
                        raise
        finally:
            self._close_portal()
            self._remove_scratch()

    def restart(self) -> HealthReport:
        """Stop, start, health-check: the new process must prove itself before anything runs against it."""
        self.stop()
        return self.start()

    def _remove_scratch(self) -> None:
        """Remove the private log folder, if this start made one; a restart makes a new one."""
        scratch, self._scratch = self._scratch, None
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)

    def _close_portal(self, error: BaseException | None = None) -> None:
        """Stop the portal's event loop; after an `error` (Ctrl-C during start-up) cancelling what still runs
        there, rather than waiting for it (the health check's full timeout)."""
        portal_cm, self._portal_cm, self._portal = self._portal_cm, None, None
        if portal_cm is not None:
            if error is None:
                portal_cm.__exit__(None, None, None)
            else:
                portal_cm.__exit__(type(error), error, error.__traceback__)

    def _require(self) -> tuple[anyio.from_thread.BlockingPortal, Connection]:
        if self._connection is None or self._portal is None:
            raise RuntimeError("server not started")
        if self._connection.halted is not None:
            raise self._connection.halted
        return self._portal, self._connection

    def list_tools(self, timeout_s: float | None = None) -> list[mcp_types.Tool]:
        portal, connection = self._require()
        return portal.call(connection.list_tools, timeout_s)

    def call_tool(
        self, name: str, arguments: dict[str, Any] | None = None, timeout_s: float | None = None
    ) -> mcp_types.CallToolResult:
        portal, connection = self._require()
        return portal.call(connection.call_tool, name, arguments, timeout_s)

    def request(self, during: str, fn: Callable[[Client], Awaitable[T]], timeout_s: float | None = None) -> T:
        """Run any request on the live session (`fn(client)`) under the same halt rules as `call_tool`.

        For requests this class has no method for (resources, prompts, ping).
        `during` names the request in a halt message, e.g. "during resources/list".
        """
        portal, connection = self._require()
        return portal.call(connection._guarded, during, timeout_s, lambda: fn(connection.client))

    @property
    def capabilities(self) -> mcp_types.ServerCapabilities:
        """What the server declared at initialize."""
        _, connection = self._require()
        return connection.client.server_capabilities

    def check_health(self) -> HealthReport:
        """Re-run the health check on the running server (tools/list within the health timeout)."""
        portal, connection = self._require()
        return portal.call(connection.health_check, time.monotonic(), self.server.health.timeout_s)


def server_under_test(
    config: Config, log_path: Path | None = None, server: ServerConfig | None = None, *, share: bool = False
) -> ServerUnderTest:
    """The configured server (or `server`, a variant of it) with the config's redactor on its stderr.

    Its stderr goes to `log_path` (a run folder's log), else to the `logs/`
    folder of `paths.home`. It is allowed as long to start as its measured
    starts say (`server.starts`), and each start is measured. With `share`,
    while the doit front end keeps servers (`server.kept`), a step that only
    needs the server up uses the one an earlier step started: stopping it
    leaves it running for the next.
    """
    from mcpipechekr.server import kept
    from mcpipechekr.server.starts import record_start, starts_path, with_start_allowance

    server = server or config.server
    log_path = log_path or log_path_in(config.paths.home / "logs", server.name)
    measured = server  # measurements are keyed by the launch as configured, not by the allowance
    path = starts_path(config)

    def record(health: HealthReport) -> None:
        record_start(path, measured, health.elapsed_s, health.cpu_s)

    def new() -> ServerUnderTest:
        return ServerUnderTest(
            with_start_allowance(config, server), log_path, config.redactor, on_started=record
        )

    if share and kept.keeping_on():

        def started() -> ServerUnderTest:
            live = new()
            live.start()
            return live

        return _SharedServer(lambda: kept.shared(config, measured, started))  # type: ignore[return-value]
    return new()


class _SharedServer:
    """A kept server as one step sees it: `start` finds it (or starts it), `stop` leaves it running."""

    def __init__(self, get: Callable[[], ServerUnderTest]):
        self._get = get
        self._live: ServerUnderTest | None = None

    def start(self) -> HealthReport:
        self._live = self._get()
        assert self._live.health is not None
        return self._live.health

    def stop(self) -> None:
        self._live = None

    def __enter__(self) -> _SharedServer:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def __getattr__(self, name: str) -> Any:
        if self._live is None:
            raise RuntimeError("server not started")
        return getattr(self._live, name)


def fetch_tool_names(
    server: ServerConfig, timeout_s: float | None = None, redactor: Redactor | None = None
) -> list[str]:
    """Start the server, list its tool names, stop it. Raises ServerHalt when it cannot be reached."""
    return [tool.name for tool in fetch_tools(server, timeout_s, redactor)]


def fetch_tools(
    server: ServerConfig, timeout_s: float | None = None, redactor: Redactor | None = None
) -> list[mcp_types.Tool]:
    """Start the server, list its tools (annotations included), stop it. Raises ServerHalt when it
    cannot be reached.

    Its stderr is kept only while it runs (a private temporary log), redacted
    with `redactor` (default: `server_redactor`).
    """
    if timeout_s is not None:
        server = server.model_copy(
            update={"health": server.health.model_copy(update={"timeout_s": timeout_s})}
        )
    with ServerUnderTest(server, redactor=redactor) as live:
        return live.list_tools(timeout_s)
