"""Owning the MCP server under test: start it, prove it healthy, call it, restart it, stop it.

Design:
- `connect()` is the async core: one process (for stdio, or for an HTTP server
  with a `start` command) and one MCP client session, torn down together.
- `http_server_started()` is for Phase 1, whose agents reach an HTTP server
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
- The server's stderr never reaches disk raw: it goes through a `RedactingLog`
  pipe into a private log file (mode 0600, never through a symlink), with every
  secret the configuration knows replaced; halt messages are redacted too,
  since they quote that log and the server's command line. `server_under_test`
  builds the object from the whole configuration, so `${VAR}` values are among
  the secrets; without a log path the log lives in a private temporary folder
  removed when the server stops.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractContextManager, asynccontextmanager, closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

import anyio
import anyio.from_thread
import anyio.to_thread
import mcp_types
import pydantic
from mcp import Client
from mcp.shared.exceptions import MCPError

from mcpipechekr import __version__
from mcpipechekr._util.leftover_processes import note_started, note_stopped
from mcpipechekr._util.private_log import RedactingLog, UnsafeLogPath
from mcpipechekr._util.process_group import group_cpu_seconds
from mcpipechekr._util.project_lock import held_lock_file
from mcpipechekr._util.redact import Redactor
from mcpipechekr._util.stops import own_group, release_group
from mcpipechekr._util.tempfiles import own_temp_folder
from mcpipechekr.config import MASK, Config, LaunchSpec, ServerConfig
from mcpipechekr.errors import ServerHalt, UserError
from mcpipechekr.server.stdio_transport import StdioProcessTransport

_LOG_TAIL_LINES = 15
T = TypeVar("T")
_PAGE_CAP = 100  # tools/list pages followed at most: a paginator that never ends cannot hang us


class StructuredContentMismatch(RuntimeError):
    """The server answered a tool call, but its structuredContent breaks the tool's own outputSchema.

    The SDK client raises a bare RuntimeError for this; naming it lets callers
    tell a wrong answer from a dead server.
    """


@dataclass
class HealthReport:
    """What the health check saw: enough to print and to record in a run."""

    server: str
    transport: str
    tools: list[str]
    elapsed_s: float
    protocol_version: str | None = None
    server_info: dict[str, Any] = field(default_factory=dict)
    cpu_s: float | None = None
    """CPU seconds the server's processes used to get there, where it could be told (a stdio server on
    Linux): whether its start is CPU-bound (`server.starts`)."""


def describe_target(server: ServerConfig) -> str:
    """One line naming how the server is reached, for messages and reports (no header values)."""
    if server.command:
        return "stdio: " + " ".join([server.command, *server.args])
    return f"http: {server.url}"


def log_tail(log_path: Path, offset: int = 0) -> str:
    """The server's last stderr lines written after `offset`, indented: what a halt message quotes."""
    try:
        with open(log_path, "rb") as handle:
            handle.seek(offset)
            lines = handle.read().decode(errors="replace").splitlines()
    except OSError:
        return ""
    tail = [line for line in lines if line.strip()][-_LOG_TAIL_LINES:]
    return "\n".join("    " + line for line in tail)


def _exit_description(returncode: int | None) -> str | None:
    if returncode is None:
        return None
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = str(-returncode)
        return f"was killed by signal {name}"
    return f"exited with code {returncode}"


def process_env(extra: dict[str, str]) -> dict[str, str]:
    """The environment a server under test starts with: ours plus its own, its output unbuffered so a
    crash's last lines reach the log."""
    env = dict(os.environ)
    env.update(extra)
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


@dataclass
class ServerLog:
    """Where one start of the server writes its stderr, and how messages quote it.

    `sink` is the redacting pipe the process writes to; `offset` where this
    start's lines begin; `temporary` says the file goes away when the server
    stops, so a message quotes its lines without pointing at it.
    """

    path: Path
    redactor: Redactor
    sink: RedactingLog
    temporary: bool = False

    def quote(self, message: str, what: str) -> str:
        """`message` followed by the last lines of this start's log, all redacted."""
        self.sink.flush()
        tail = log_tail(self.path, self.sink.offset)
        where = what if self.temporary else f"{what} is logged at {self.path}"
        message += f"  {where}" + ((":\n" + tail) if tail else " (nothing written).")
        return self.redactor.redact(message)


class Connection:
    """A live MCP session with the server under test, and the process behind it when we started one."""

    def __init__(
        self,
        server: ServerConfig,
        client: Client,
        log: ServerLog,
        exit_code: Callable[[], int | None],
        kill: Callable[[], None] | None = None,
        group: Callable[[], int | None] | None = None,
    ):
        self.server = server
        self.client = client
        self.log = log
        self.exit_code = exit_code
        self.group = group or (lambda: None)  # the process group we started, for its CPU time
        self.halted: ServerHalt | None = None
        self.kill = kill or (lambda: None)

    def halt(self, what: str, during: str, *, prefer_cause: bool = False) -> ServerHalt:
        """Build (and remember) the error that stops everything; later calls re-raise it.

        A process that exited explains a broken call better than the symptom,
        except for timeouts (`prefer_cause`), where we killed it ourselves.
        """
        died = None if prefer_cause else _exit_description(self.exit_code())
        cause = f"{died} {during}" if died else f"{what} {during}"
        message = f"server '{self.server.name}' {cause} ({describe_target(self.server)}).\n"
        self.halted = ServerHalt(self.log.quote(message, "Its stderr"))
        return self.halted

    async def _guarded(self, during: str, timeout_s: float | None, call: Callable[[], Any]) -> Any:
        if self.halted is not None:
            raise self.halted
        try:
            with anyio.fail_after(timeout_s):
                return await call()
        except TimeoutError:
            # The process may have died while we waited: prefer that explanation.
            await anyio.sleep(0.05)
            raise self.halt(f"did not answer within {timeout_s:g}s", during) from None
        except ServerHalt:
            raise
        except RuntimeError as exc:
            if _structured_content_mismatch(exc):
                raise StructuredContentMismatch(str(exc)) from exc
            await anyio.sleep(0.05)
            raise self.halt(f"broke the connection ({type(exc).__name__}: {exc})", during) from exc
        except Exception as exc:  # closed stream, broken pipe, transport error, protocol error
            await anyio.sleep(0.05)
            if self.exit_code() is None and _answered(exc):
                raise  # the server answered: an error response or a malformed result is the caller's business
            raise self.halt(f"broke the connection ({type(exc).__name__}: {exc})", during) from exc

    async def list_tools(self, timeout_s: float | None = None) -> list[mcp_types.Tool]:
        """tools/list, following pagination."""

        async def walk() -> list[mcp_types.Tool]:
            tools: list[mcp_types.Tool] = []
            cursor: str | None = None
            for _ in range(_PAGE_CAP):
                page = await self.client.list_tools(cursor=cursor)
                tools.extend(page.tools)
                cursor = page.next_cursor
                if not cursor:
                    break
            return tools

        return await self._guarded("during tools/list", timeout_s, walk)

    async def call_tool(
        self, name: str, arguments: dict[str, Any] | None = None, timeout_s: float | None = None
    ) -> mcp_types.CallToolResult:
        """tools/call; a tool error is a normal result (`is_error`), a dead server is a `ServerHalt`."""
        return await self._guarded(
            f"during tools/call '{name}'", timeout_s, lambda: self.client.call_tool(name, arguments or {})
        )

    async def health_check(self, started: float, timeout_s: float) -> HealthReport:
        remaining = max(0.1, timeout_s - (time.monotonic() - started))
        tools = await self.list_tools(timeout_s=remaining)
        min_tools = self.server.health.min_tools
        if len(tools) < min_tools:
            raise self.halt(
                f"listed {len(tools)} tool(s) where the health check needs at least {min_tools} "
                "(server.health.min_tools)",
                "at the health check",
            )
        info = self.client.server_info
        group = self.group()
        return HealthReport(
            server=self.server.name,
            transport=self.server.transport,
            tools=[tool.name for tool in tools],
            elapsed_s=time.monotonic() - started,
            protocol_version=self.client.protocol_version,
            server_info=info.model_dump(exclude_none=True) if info is not None else {},
            cpu_s=group_cpu_seconds(group) if group is not None else None,
        )


def _structured_content_mismatch(exc: RuntimeError) -> bool:
    text = str(exc)
    return (
        "Invalid structured content returned by tool" in text or "did not return structured content" in text
    )


def _answered(exc: Exception) -> bool:
    """True when the server is alive and answered, just not well: a JSON-RPC error or an invalid result."""
    if isinstance(exc, MCPError):
        return exc.code != mcp_types.CONNECTION_CLOSED
    return isinstance(exc, pydantic.ValidationError)


def _client(target: Any) -> Client:
    return Client(target, client_info=mcp_types.Implementation(name="mcpipechekr", version=__version__))


@asynccontextmanager
async def connect(
    server: ServerConfig, log_path: Path, redactor: Redactor | None = None, *, temporary_log: bool = False
) -> AsyncIterator[tuple[Connection, HealthReport]]:
    """Start (or reach) the server, pass the health check within `health.timeout_s`, and yield the session.

    The server's stderr is redacted with `redactor` (default: `server_redactor`)
    into `log_path`. Raises ServerHalt when the server exits, hangs or lists too
    few tools; the process is always stopped on the way out.
    """
    redactor = redactor or server_redactor(server)
    started = time.monotonic()
    with closing(open_log(log_path, redactor)) as sink:
        log = ServerLog(log_path, redactor, sink, temporary_log)
        command = server.resolved_command()
        if command is not None:
            transport = StdioProcessTransport(
                command,
                server.args,
                env=process_env(server.env),
                cwd=server.cwd,
                stderr=sink.fileno(),
            )

            def exit_code() -> int | None:
                return transport.process.returncode if transport.process is not None else None

            def group() -> int | None:
                return transport.process.pid if transport.process is not None else None

            connection = Connection(server, _client(transport), log, exit_code, transport.kill, group)
            async with _session(connection, started) as pair:
                yield pair
            return
        process = _start_http_process(server.start, sink.fileno(), redactor) if server.start else None
        try:
            await _wait_for_port(server, process, log, started)
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            async with httpx2.AsyncClient(
                headers=dict(server.headers), timeout=httpx2.Timeout(30.0, read=300.0)
            ) as http:
                assert server.url is not None
                client = _client(streamable_http_client(server.url, http_client=http))
                connection = Connection(
                    server,
                    client,
                    log,
                    (lambda: process.poll()) if process is not None else (lambda: None),
                    (lambda: _kill_popen(process)) if process is not None else None,
                    (lambda: process.pid) if process is not None else None,
                )
                async with _session(connection, started) as pair:
                    yield pair
        finally:
            if process is not None:
                _stop_popen(process)


@dataclass
class _SharedStart:
    """One running `start` process and how many callers use it (see `http_server_started`)."""

    process: subprocess.Popen[bytes]
    log: ServerLog
    started: float
    users: int = 0


_shared_starts: dict[tuple[Any, ...], _SharedStart] = {}
_shared_guard = threading.Lock()


@asynccontextmanager
async def http_server_started(
    server: ServerConfig, log_path: Path, redactor: Redactor | None = None
) -> AsyncIterator[None]:
    """Keep an HTTP server with a `start` command running for the block; nothing for any other server.

    Starts the command (its output redacted into `log_path`), waits until the
    URL's port accepts within `health.timeout_s`, and stops the process group on
    the way out. Callers in this process at the same time share one process.
    Raises ServerHalt when the command cannot run, dies or never listens.
    """
    if server.start is None or server.url is None:
        yield
        return
    key = (server.url, server.start.resolved_command(), tuple(server.start.args), server.start.cwd)
    with _shared_guard:
        shared = _shared_starts.get(key)
        if shared is None or shared.process.poll() is not None:
            redactor = redactor or server_redactor(server)
            sink = open_log(log_path, redactor)
            try:
                process = _start_http_process(server.start, sink.fileno(), redactor)
            except BaseException:
                sink.close()
                raise
            shared = _SharedStart(process, ServerLog(log_path, redactor, sink), time.monotonic())
            _shared_starts[key] = shared
        shared.users += 1
    try:
        await _wait_for_port(server, shared.process, shared.log, shared.started)
        yield
    finally:
        with _shared_guard:
            shared.users -= 1
            last = shared.users == 0
            if last and _shared_starts.get(key) is shared:
                del _shared_starts[key]
        if last:  # shielded: a phase cut short (Ctrl-C, a halt) must still stop the process
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(_stop_popen, shared.process)
            shared.log.sink.close()


def open_log(path: Path, redactor: Redactor) -> RedactingLog:
    """A server's stderr log, redacted as written; a path that is not safe to write is a UserError."""
    try:
        return RedactingLog(path, redactor).__enter__()
    except UnsafeLogPath as exc:
        raise UserError(str(exc)) from None


@asynccontextmanager
async def _session(connection: Connection, started: float) -> AsyncIterator[tuple[Connection, HealthReport]]:
    """Open the MCP session and pass the health check before a watchdog runs out the health timeout.

    The watchdog cancels the whole start-up instead of wrapping it in a timeout
    scope, because the client opens task groups that outlive its `__aenter__`.
    """
    server = connection.server
    timeout_s = server.health.timeout_s
    timed_out = False
    report: HealthReport | None = None
    try:
        async with anyio.create_task_group() as tg:
            watchdog_scope = anyio.CancelScope()

            async def watchdog() -> None:
                nonlocal timed_out
                with watchdog_scope:
                    await anyio.sleep(max(0.0, timeout_s - (time.monotonic() - started)))
                    timed_out = True
                    connection.kill()
                    tg.cancel_scope.cancel()

            tg.start_soon(watchdog)
            async with connection.client:
                report = await connection.health_check(started, timeout_s)
                watchdog_scope.cancel()
                yield connection, report
    except BaseException as caught:
        exc = _leaf(caught)
        if timed_out and report is None:
            raise connection.halt(_start_timeout(timeout_s), "during start-up", prefer_cause=True) from None
        if isinstance(exc, FileNotFoundError):
            raise ServerHalt(
                connection.log.redactor.redact(
                    f"server '{server.name}' could not be started: {exc.strerror}: {exc.filename!r} "
                    f"({describe_target(server)}). Check server.command in config.yaml or --command."
                )
            ) from None
        if isinstance(exc, ServerHalt):
            raise exc from None
        if not isinstance(exc, Exception):
            raise
        if report is not None:
            if connection.halted is not None or connection.exit_code() is not None:
                return  # the server died under us; the caller already saw (or will see) the halt
            raise exc from None
        await anyio.sleep(0.1)  # let the exit code land
        raise connection.halt(
            f"failed to initialize ({type(exc).__name__}: {exc})", "during start-up"
        ) from None
    if timed_out and report is None:
        raise connection.halt(_start_timeout(timeout_s), "during start-up", prefer_cause=True)


def _start_timeout(timeout_s: float) -> str:
    """A start that ran out of time, naming the setting that bounds it."""
    return (
        f"did not answer within {timeout_s:g}s (server.health.timeout_s, or more when its starts were "
        "measured slower: raise it in config.yaml if the server needs longer to start)"
    )


def _leaf(exc: BaseException) -> BaseException:
    """The exception that matters inside task-group wrapping: a halt if there is one, else the first."""
    if isinstance(exc, BaseExceptionGroup):
        leaves = [_leaf(inner) for inner in exc.exceptions]
        for leaf in leaves:
            if isinstance(leaf, ServerHalt):
                return leaf
        return leaves[0]
    return exc


def _start_http_process(start: LaunchSpec, log: int, redactor: Redactor) -> subprocess.Popen[bytes]:
    """Start the server's `start` command, noted so that a next command ends it if we are killed."""
    try:
        process = subprocess.Popen(
            [start.resolved_command(), *start.args],
            cwd=start.cwd,
            env=process_env(start.env),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
        )
    except FileNotFoundError as exc:
        raise ServerHalt(
            redactor.redact(
                f"the server's start command could not be run: {exc.strerror}: {exc.filename!r}. "
                "Check server.start in config.yaml."
            )
        ) from None
    _track(process.pid)
    return process


def _track(pid: int) -> None:
    """Note a started server's group: ended on Ctrl-C even when the thread that started it never hears
    of it (`own_group`), and by the next command if this one is killed (`note_started`)."""
    own_group(pid)
    note_started(held_lock_file(), pid, "the HTTP server that server.start started")


def _untrack(pid: int) -> None:
    release_group(pid)
    note_stopped(held_lock_file(), pid)


def _kill_popen(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    _untrack(process.pid)


def _stop_popen(process: subprocess.Popen[bytes]) -> None:
    try:
        _end_popen(process)
    finally:
        _untrack(process.pid)


def _end_popen(process: subprocess.Popen[bytes]) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if process.poll() is not None:
            return
        try:
            os.killpg(process.pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        try:
            process.wait(timeout=3)
        except subprocess.TimeoutExpired:
            continue


async def _wait_for_port(
    server: ServerConfig,
    process: subprocess.Popen[bytes] | None,
    log: ServerLog,
    started: float,
) -> None:
    """Poll the URL's TCP port until it accepts, the start process dies, or the health timeout passes."""
    parts = urlsplit(server.url or "")
    host = parts.hostname or "127.0.0.1"
    port = parts.port or (443 if parts.scheme == "https" else 80)
    timeout_s = server.health.timeout_s
    while time.monotonic() - started < timeout_s:
        if process is not None and process.poll() is not None:
            break
        try:
            with anyio.fail_after(0.5):
                stream = await anyio.connect_tcp(host, port)
            await stream.aclose()
            return
        except (OSError, TimeoutError):
            await anyio.sleep(0.1)
    exit_text = _exit_description(process.poll()) if process is not None else None
    what = (
        f"{exit_text} during start-up"
        if exit_text
        else f"did not accept connections on {host}:{port} within {timeout_s:g}s"
    )
    raise ServerHalt(log.quote(f"server '{server.name}' {what} ({describe_target(server)}).\n", "Its output"))


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


def server_redactor(server: ServerConfig) -> Redactor:
    """What a server's own settings say is secret: its header and environment values.

    For callers that have no `Config`; `server_under_test` uses the config's
    redactor, which also knows every `${VAR}` value and provider key.
    """
    return Redactor([(value, MASK) for value in server.secret_values()])


def log_path_in(folder: Path, server_name: str) -> Path:
    """`folder/<name>.stderr.log`, the name made safe for a file name."""
    safe = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in server_name) or "server"
    return folder / f"{safe}.stderr.log"


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
