"""A stdio transport that keeps hold of the server process.

mcp's own `stdio_client` hides the process it spawns, so a dead server can only
be seen as a closed stream. The harness needs more: the exit code or signal for
the halt message, the server's stderr in a log file it can point the user to,
and a process it can kill to restart. This transport spawns the process itself
and speaks the same newline-delimited JSON-RPC framing.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Sequence
from contextlib import suppress
from typing import IO, Any

import anyio
import anyio.abc
from anyio.streams.text import TextReceiveStream
from mcp.shared.message import SessionMessage
from mcp_types import jsonrpc_message_adapter

from mcpipechekr._util.stops import own_group, release_group

_STOP_GRACE_S = 2.0


class StdioProcessTransport:
    """Spawn `command` in its own process group and exchange JSON-RPC lines with it.

    Usable once, as the `Transport` given to `mcp.Client`; `process` is set once entered.
    """

    def __init__(
        self,
        command: str,
        args: Sequence[str],
        *,
        env: dict[str, str] | None,
        cwd: str | None,
        stderr: IO[Any] | int,
    ) -> None:
        self.argv = [command, *args]
        self.env = env
        self.cwd = cwd
        self.stderr = stderr
        self.process: anyio.abc.Process | None = None
        self._tg: anyio.abc.TaskGroup | None = None
        self._streams: tuple[Any, ...] = ()

    async def __aenter__(self) -> tuple[Any, Any]:
        self.process = await anyio.open_process(
            self.argv, env=self.env, cwd=self.cwd, stderr=self.stderr, start_new_session=True
        )
        own_group(self.process.pid)  # its own session: ended on Ctrl-C even if this thread never hears of it
        to_client_send, to_client_recv = anyio.create_memory_object_stream[SessionMessage | Exception](16)
        to_server_send, to_server_recv = anyio.create_memory_object_stream[SessionMessage](16)
        self._streams = (to_client_send, to_client_recv, to_server_send, to_server_recv)
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        self._tg.start_soon(self._read_stdout, to_client_send)
        self._tg.start_soon(self._write_stdin, to_server_recv, to_client_send)
        return to_client_recv, to_server_send

    async def __aexit__(self, *exc_info: Any) -> bool:
        assert self._tg is not None
        with anyio.CancelScope(shield=True):
            await self.stop_process()
            for stream in self._streams:
                await stream.aclose()
        # Outside the shield: a task group must be exited as the innermost scope.
        self._tg.cancel_scope.cancel()
        await self._tg.__aexit__(None, None, None)
        return False

    async def _read_stdout(self, sink: Any) -> None:
        """Forward each stdout line as a parsed message; a non-JSON-RPC line becomes an error value."""
        assert self.process is not None and self.process.stdout is not None
        buffer = ""
        try:
            async with sink:
                async for chunk in TextReceiveStream(self.process.stdout, errors="replace"):
                    lines = (buffer + chunk).split("\n")
                    buffer = lines.pop()
                    for line in lines:
                        if not line.strip():
                            continue
                        try:
                            item: SessionMessage | Exception = SessionMessage(
                                jsonrpc_message_adapter.validate_json(line, by_name=False)
                            )
                        except ValueError as exc:
                            item = exc
                        await sink.send(item)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError):
            pass

    async def _write_stdin(self, source: Any, sink: Any) -> None:
        assert self.process is not None and self.process.stdin is not None
        try:
            async with source:
                async for message in source:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                    await self.process.stdin.send(data.encode())
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            # The server stopped reading (it died): end the session's read side so no request waits forever.
            await sink.aclose()

    def kill(self) -> None:
        """SIGKILL the whole process group now: for a server that stopped answering, grace is wasted time."""
        if self.process is not None and self.process.returncode is None:
            with suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, signal.SIGKILL)

    async def stop_process(self) -> None:
        """Close stdin, give the server a grace period, then SIGTERM and SIGKILL its process group."""
        process = self.process
        if process is None:
            return
        if process.returncode is not None:
            release_group(process.pid)
            return
        if process.stdin is not None:
            with suppress(Exception):
                await process.stdin.aclose()
        for sig in (None, signal.SIGTERM, signal.SIGKILL):
            if sig is not None:
                with suppress(ProcessLookupError, PermissionError):
                    os.killpg(process.pid, sig)
            with anyio.move_on_after(_STOP_GRACE_S):
                await process.wait()
            if process.returncode is not None:
                release_group(process.pid)
                return
