"""One MCP session with the server under test and the process behind it, torn down together:
started (or reached), health-checked within `health.timeout_s`, called, and every failure turned
into a `ServerHalt` that says what happened.

The async core below `server.lifecycle`'s synchronous `ServerUnderTest`.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import mcp_types
import pydantic
from mcp import Client
from mcp.shared.exceptions import MCPError

from mcpipechekr import __version__
from mcpipechekr._util.process_group import group_cpu_seconds
from mcpipechekr._util.redact import Redactor
from mcpipechekr.config import ServerConfig
from mcpipechekr.errors import ServerHalt
from mcpipechekr.server.logs import ServerLog, describe_target, exit_description, open_log, server_redactor
from mcpipechekr.server.processes import (
    kill_popen,
    process_env,
    start_http_process,
    stop_popen,
    wait_for_port,
)
from mcpipechekr.server.stdio_transport import StdioProcessTransport

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
        died = None if prefer_cause else exit_description(self.exit_code())
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
        process = start_http_process(server.start, sink.fileno(), redactor) if server.start else None
        try:
            await wait_for_port(server, process, log, started)
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
                    (lambda: kill_popen(process)) if process is not None else None,
                    (lambda: process.pid) if process is not None else None,
                )
                async with _session(connection, started) as pair:
                    yield pair
        finally:
            if process is not None:
                stop_popen(process)


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
