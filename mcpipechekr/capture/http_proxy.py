"""The streamable-HTTP capture proxy: one local HTTP server per run, one route per agent attempt.

    agent  --HTTP-->  127.0.0.1:PORT/<route>  --HTTP-->  the server's URL

Each attempt registers a route (`HttpCaptureProxy.route(journal)`) and gets its
own URL; every request on it is forwarded to the real endpoint with its
method, query, headers and body unchanged (hop-by-hop headers aside), and the
response comes back the same way, streamed as it arrives, so server-sent
events (a POST answered with `text/event-stream`, the GET stream) reach the
agent event by event. JSON-RPC messages found in request bodies, JSON
responses and SSE `data:` lines are journaled as they pass.

A request is journaled before it is forwarded, a JSON response before it is
passed on, and an SSE chunk's complete events before the chunk, so by the
time the agent has an answer its record is in the journal.

The headers of `server.headers` (e.g. Authorization) are added by the proxy
on the way to the server, so agent configs never hold them. Upstream bodies
are requested uncompressed (`Accept-Encoding: identity`) so what is journaled
is what is forwarded.

A connection error to the server is journaled as `upstream_error` and
answered with HTTP 502: the server is down, which halts the run.

Why a small HTTP/1.1 forwarder on asyncio streams rather than an ASGI server
and an HTTP client: it sits on every message of every attempt, and a proxy
built from uvicorn and httpx spent several milliseconds of CPU per call in
their layers (ASGI events, validation, task groups) where this one moves
bytes, parses heads and keeps upstream connections alive. What it speaks:
HTTP/1.1 (and 1.0) with Content-Length or chunked bodies, close-delimited
responses, `Expect: 100-continue`; `http` and `https` upstreams (the latter
with the process's shared TLS context). No pipelining, no upgrades.

Where it runs: `async with proxy` serves on the running asyncio event loop —
Phase 1 does this, so the proxy shares the agents' loop instead of fighting
it for the GIL from another thread; `with proxy` (or `start()`) serves from a
thread with its own loop, for synchronous callers. `route` and `release` may
be called from any thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import socket
import ssl
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import orjson

from mcpipechekr._util.redact import Redactor
from mcpipechekr.capture.journal import JournalWriter, time_monotonic

_HOP_BY_HOP = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-authenticate",
        b"proxy-authorization",
        b"proxy-connection",
        b"te",
        b"trailer",
        b"transfer-encoding",
        b"upgrade",
        b"content-length",
    }
)
_NOT_FORWARDED = _HOP_BY_HOP | {b"host", b"accept-encoding", b"expect"}
"""Request headers the proxy sets itself (framing, Host, identity encoding) or has already answered."""
_START_TIMEOUT_S = 10.0
_CONNECT_TIMEOUT_S = 30.0
_MAX_HEAD = 1 << 20
_PIECE = 1 << 16
_IDLE_S = 4.0
"""How long an upstream connection is kept idle: less than servers' usual keep-alive timeout (uvicorn: 5 s),
so the proxy seldom sends on a connection the server is closing."""


class _BadMessage(Exception):
    """A request or response the proxy cannot frame; the connection it came on is closed."""


@dataclass
class _Head:
    """A request or response head: its first line's three parts and its headers, as sent."""

    start: tuple[bytes, bytes, bytes]
    headers: list[tuple[bytes, bytes]]

    def get(self, name: bytes) -> bytes | None:
        for key, value in self.headers:
            if key.lower() == name:
                return value
        return None

    def has_token(self, name: bytes, token: bytes) -> bool:
        """Whether a comma-separated header (Connection, Transfer-Encoding) lists `token`."""
        return any(
            key.lower() == name and token in (part.strip().lower() for part in value.split(b","))
            for key, value in self.headers
        )

    @property
    def http11(self) -> bool:
        version = self.start[2] if self.start[0][:5] != b"HTTP/" else self.start[0]
        return version.upper() == b"HTTP/1.1"

    @property
    def keep_alive(self) -> bool:
        if self.has_token(b"connection", b"close"):
            return False
        return self.http11 or self.has_token(b"connection", b"keep-alive")


def _parse_head(data: bytes) -> _Head:
    lines = data.rstrip(b"\r\n").split(b"\r\n")
    parts = lines[0].split(b" ", 2)
    if len(parts) < 2:
        raise _BadMessage(f"malformed start line {lines[0][:80]!r}")
    start = (parts[0], parts[1], parts[2] if len(parts) > 2 else b"")
    headers = []
    for line in lines[1:]:
        name, colon, value = line.partition(b":")
        if not colon or not name.strip():
            raise _BadMessage(f"malformed header line {line[:80]!r}")
        headers.append((name.strip(), value.strip()))
    return _Head(start, headers)


async def _read_head(reader: asyncio.StreamReader) -> _Head | None:
    """The next head on a connection; None when the peer closed it between messages."""
    try:
        data = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as exc:
        if exc.partial.strip():
            raise _BadMessage("the connection closed inside a message head") from None
        return None
    except asyncio.LimitOverrunError:
        raise _BadMessage("a message head over 1 MiB") from None
    return _parse_head(data)


async def _chunks(reader: asyncio.StreamReader) -> AsyncIterator[bytes]:
    """A chunked body's data, chunk by chunk (trailers are read and dropped)."""
    while True:
        line = await reader.readuntil(b"\r\n")
        try:
            size = int(line.split(b";", 1)[0].strip(), 16)
        except ValueError:
            raise _BadMessage(f"malformed chunk size {line[:40]!r}") from None
        if size == 0:
            while await reader.readuntil(b"\r\n") != b"\r\n":
                pass
            return
        data = await reader.readexactly(size)
        await reader.readexactly(2)
        yield data


async def _pieces(reader: asyncio.StreamReader, length: int | None) -> AsyncIterator[bytes]:
    """A body of `length` bytes, or up to the end of the connection, as it arrives."""
    left = length
    while left is None or left > 0:
        data = await reader.read(_PIECE if left is None else min(_PIECE, left))
        if not data:
            if left is not None:
                raise asyncio.IncompleteReadError(b"", left)
            return
        if left is not None:
            left -= len(data)
        yield data


def _content_length(head: _Head) -> int | None:
    value = head.get(b"content-length")
    if value is None:
        return None
    try:
        length = int(value)
    except ValueError:
        raise _BadMessage(f"malformed Content-Length {value[:40]!r}") from None
    if length < 0:
        raise _BadMessage("negative Content-Length")
    return length


class SSEScanner:
    """Finds the `data:` payload of each complete server-sent event in a byte stream fed in chunks."""

    def __init__(self) -> None:
        self._buffer = b""

    def feed(self, chunk: bytes) -> list[bytes]:
        self._buffer += chunk.replace(b"\r\n", b"\n")
        events = []
        while b"\n\n" in self._buffer:
            block, self._buffer = self._buffer.split(b"\n\n", 1)
            data = [line[5:].removeprefix(b" ") for line in block.split(b"\n") if line.startswith(b"data:")]
            if data:
                events.append(b"\n".join(data))
        return events


class _Upstream:
    """Where a route forwards to, with a pool of idle keep-alive connections to it."""

    def __init__(self, url: str, headers: dict[str, str]):
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"the capture proxy forwards to http(s) URLs, not {url!r}")
        self.url = url
        self.tls = parts.scheme == "https"
        self.host = parts.hostname
        self.port = parts.port or (443 if self.tls else 80)
        default_port = (443 if self.tls else 80) == self.port
        host = f"[{self.host}]" if ":" in self.host else self.host
        self.host_header = (host if default_port else f"{host}:{self.port}").encode()
        self.target = (parts.path or "/").encode() + (b"?" + parts.query.encode() if parts.query else b"")
        self.headers = [(name.encode(), value.encode()) for name, value in headers.items()]
        self.replaced = {name.lower() for name, _ in self.headers}
        self._idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter, float]] = []

    async def connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        context: ssl.SSLContext | None = None
        if self.tls:
            from mcpipechekr.llm import tls_context

            context = tls_context()
        return await asyncio.wait_for(
            asyncio.open_connection(
                self.host,
                self.port,
                ssl=context,
                server_hostname=self.host if context else None,
                limit=_MAX_HEAD,
            ),
            _CONNECT_TIMEOUT_S,
        )

    def idle(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        """A kept-alive connection the server has not closed meanwhile, if there is one."""
        while self._idle:
            reader, writer, since = self._idle.pop()
            if not reader.at_eof() and not writer.is_closing() and time.monotonic() - since < _IDLE_S:
                return reader, writer
            writer.close()
        return None

    def keep(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._idle.append((reader, writer, time.monotonic()))

    def close(self) -> None:
        for _, writer, _ in self._idle:
            writer.close()
        self._idle.clear()

    def request(self, head: _Head, body: bytes) -> bytes:
        """The request as the server gets it: our target, Host and framing; the agent's other headers."""
        method, target, _ = head.start
        query = target.partition(b"?")[2]
        path = self.target + ((b"&" if b"?" in self.target else b"?") + query if query else b"")
        dropped = _NOT_FORWARDED | self.replaced
        dropped |= {
            token.strip().lower() for value in _values(head, b"connection") for token in value.split(b",")
        }
        lines = [method + b" " + path + b" HTTP/1.1", b"Host: " + self.host_header]
        lines += [name + b": " + value for name, value in head.headers if name.lower() not in dropped]
        lines += [name + b": " + value for name, value in self.headers]
        lines.append(b"Accept-Encoding: identity")
        if body or method not in (b"GET", b"HEAD", b"DELETE", b"OPTIONS"):
            lines.append(b"Content-Length: " + str(len(body)).encode())
        return b"\r\n".join(lines) + b"\r\n\r\n" + body


def _values(head: _Head, name: bytes) -> list[bytes]:
    return [value for key, value in head.headers if key.lower() == name]


class HttpCaptureProxy:
    """The run's HTTP proxy: `async with` serves on the running loop, `with` from a thread of its own."""

    def __init__(
        self, upstream_url: str, headers: dict[str, str] | None = None, redactor: Redactor | None = None
    ):
        self.upstream_url = upstream_url
        self.redactor = redactor
        self._upstream = _Upstream(upstream_url, headers or {})
        self._routes: dict[str, JournalWriter] = {}  # route token -> the attempt's journal
        self._socket: socket.socket | None = None
        self._server: asyncio.AbstractServer | None = None
        self._connections: set[asyncio.Task[None]] = set()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None

    # --- lifecycle ----------------------------------------------------------------------------

    @property
    def port(self) -> int:
        if self._socket is None:
            raise RuntimeError("the proxy is not running")
        return int(self._socket.getsockname()[1])

    def _bind(self) -> None:
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # Accepted connections inherit this: without it, a response's head and its first event go out as
        # two small segments, and Nagle plus the agent's delayed ACK hold the event back ~40 ms.
        self._socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._socket.bind(("127.0.0.1", 0))

    async def _open(self) -> None:
        self._server = await asyncio.start_server(self._accept, sock=self._socket, limit=_MAX_HEAD)

    async def _close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._connections):
            task.cancel()
        self._upstream.close()
        self._server = None
        if self._connections:  # a cancelled caller stops waiting here; everything is closed already
            await asyncio.wait(list(self._connections), timeout=5)

    def _finish(self) -> None:
        if self._socket is not None:
            self._socket.close()
        for journal in list(self._routes.values()):
            journal.close()
        self._routes.clear()
        self._socket = None

    async def __aenter__(self) -> HttpCaptureProxy:
        self._bind()
        try:
            await self._open()
        except BaseException:
            self._finish()
            raise
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        try:
            await self._close()
        finally:
            self._finish()

    def start(self) -> HttpCaptureProxy:
        """Serve from a thread with its own event loop (for callers without a running loop)."""
        self._bind()
        ready = threading.Event()
        failure: list[BaseException] = []

        async def serve() -> None:
            self._stop = asyncio.Event()
            try:
                await self._open()
            except BaseException as exc:
                failure.append(exc)
                ready.set()
                return
            ready.set()
            await self._stop.wait()
            await self._close()

        def main() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            try:
                loop.run_until_complete(serve())
            finally:
                loop.close()

        self._thread = threading.Thread(target=main, name="capture-http", daemon=True)
        self._thread.start()
        if not ready.wait(_START_TIMEOUT_S) or failure:
            self.stop()
            why = failure[0] if failure else f"not serving after {_START_TIMEOUT_S:g} s"
            raise RuntimeError(f"the HTTP capture proxy did not start: {why}")
        return self

    def stop(self) -> None:
        if self._thread is not None:
            loop, stop = self._loop, self._stop
            if loop is not None and stop is not None:
                with contextlib.suppress(RuntimeError):  # the loop already ended
                    loop.call_soon_threadsafe(stop.set)
            self._thread.join(timeout=10)
            self._thread = self._loop = self._stop = None
        self._finish()

    def __enter__(self) -> HttpCaptureProxy:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # --- routes -------------------------------------------------------------------------------

    def route(self, journal: Path, label: str = "attempt") -> str:
        """Open a journal and a route to the server for one attempt; returns the URL the agent uses."""
        token = f"{''.join(ch if ch.isalnum() else '-' for ch in label)[:60]}-{secrets.token_hex(4)}"
        writer = JournalWriter(journal, self.redactor)
        writer.event("proxy_started", version=1, detail=f"http: {self.upstream_url}")
        self._routes[token] = writer
        return f"http://127.0.0.1:{self.port}/{token}"

    def release(self, url: str) -> None:
        """End an attempt's route: later requests on it get 404, its journal is closed."""
        journal = self._routes.pop(url.rstrip("/").rsplit("/", 1)[-1], None)
        if journal is not None:
            journal.event("proxy_stopped")
            journal.close()

    # --- the agent's side ---------------------------------------------------------------------

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            while await self._one_request(reader, writer):
                pass
        except (_BadMessage, ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass  # the agent sent something unframeable or left: nothing more to do on this connection
        except asyncio.CancelledError:
            pass  # the proxy is closing; ending here spares asyncio's stream callback a cancelled task
        finally:
            self._connections.discard(task)
            writer.close()

    async def _one_request(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Serve one request; whether the connection stays open for the next."""
        head = await _read_head(reader)
        if head is None:
            return False
        if head.has_token(b"expect", b"100-continue"):
            writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        if head.has_token(b"transfer-encoding", b"chunked"):
            body = b"".join([chunk async for chunk in _chunks(reader)])
        else:
            body = await reader.readexactly(_content_length(head) or 0)
        keep = head.keep_alive
        path = head.start[1].partition(b"?")[0]
        if path.startswith(b"http://"):  # absolute form
            path = b"/" + path[7:].partition(b"/")[2]
        journal = self._routes.get(path.strip(b"/").split(b"/", 1)[0].decode("latin-1"))
        if journal is None:
            await _plain(writer, 404, b"no such capture route\n", keep)
            return keep
        return await self._forward(journal, head, body, reader, writer) and keep

    async def _forward(
        self,
        journal: JournalWriter,
        head: _Head,
        body: bytes,
        agent_reader: asyncio.StreamReader,
        agent: asyncio.StreamWriter,
    ) -> bool:
        t = time_monotonic()
        if body:
            for part, parsed in _messages(body):
                journal.message("to_server", part, t, parsed)
        request = self._upstream.request(head, body)
        try:
            reader, writer, response = await self._send(request)
        except (TimeoutError, OSError, asyncio.IncompleteReadError, _BadMessage) as exc:
            detail = f"{type(exc).__name__}: {exc or 'no response'} ({self._upstream.url})"
            journal.event("upstream_error", detail=detail)
            message = f"capture proxy: the MCP server is unreachable: {type(exc).__name__}: {exc}\n"
            await _plain(agent, 502, message.encode(), head.keep_alive)
            return True
        try:
            reusable, keep_agent = await self._relay(head, response, reader, journal, agent_reader, agent)
        except BaseException:
            writer.close()
            raise
        if reusable:
            self._upstream.keep(reader, writer)
        else:
            writer.close()
        return keep_agent

    async def _send(self, request: bytes) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, _Head]:
        """Send on a kept-alive connection (again on a new one if the server had dropped it); the head."""
        pooled = self._upstream.idle()
        if pooled is not None:
            reader, writer = pooled
            try:
                return reader, writer, await self._exchange(reader, writer, request)
            except (ConnectionError, asyncio.IncompleteReadError):
                # Closed by the server while idle, before any answer: sent again on a new connection.
                writer.close()
        reader, writer = await self._upstream.connect()
        try:
            return reader, writer, await self._exchange(reader, writer, request)
        except BaseException:
            writer.close()
            raise

    @staticmethod
    async def _exchange(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, request: bytes) -> _Head:
        writer.write(request)
        while True:
            response = await _read_head(reader)
            if response is None:
                raise asyncio.IncompleteReadError(b"", None)
            status = response.start[1]
            if not (status.startswith(b"1") and status != b"101"):
                return response  # interim 1xx answers (100 Continue) are not the response

    async def _relay(
        self,
        request: _Head,
        response: _Head,
        reader: asyncio.StreamReader,
        journal: JournalWriter,
        agent_reader: asyncio.StreamReader,
        agent: asyncio.StreamWriter,
    ) -> tuple[bool, bool]:
        """Pass the response on; whether the upstream connection, and the agent's, can be reused."""
        _, status, reason = response.start
        headers = b"".join(
            k.lower() + b": " + v + b"\r\n" for k, v in response.headers if k.lower() not in _HOP_BY_HOP
        )
        head = b"HTTP/1.1 " + status + (b" " + reason if reason else b"") + b"\r\n" + headers
        keep_agent = request.keep_alive
        status_code = int(status) if status.isdigit() else 502
        chunked = response.has_token(b"transfer-encoding", b"chunked")
        length = None if chunked else _content_length(response)
        if request.start[0] == b"HEAD" or status_code in (204, 304) or status_code < 200:
            framing = b"content-length: %d\r\n" % length if length is not None else b""
            agent.write(head + framing + _connection(keep_agent) + b"\r\n")
            return response.keep_alive, keep_agent
        reusable = response.keep_alive and (chunked or length is not None)
        body = _chunks(reader) if chunked else _pieces(reader, length)
        content_type = (response.get(b"content-type") or b"").lower()
        if content_type.startswith(b"application/json"):
            # A JSON answer is one unit: journal it before the agent can act on it.
            data = b"".join([piece async for piece in body])
            t = time_monotonic()
            for part, parsed in _messages(data):
                journal.message("to_agent", part, t, parsed)
            framing = b"content-length: %d\r\n" % len(data)
            agent.write(head + framing + _connection(keep_agent) + b"\r\n" + data)
            await agent.drain()
            return reusable, keep_agent
        chunk_out = length is None and request.http11  # else the agent gets the length, or the close
        keep_agent = keep_agent and (chunk_out or length is not None)
        framing = b"content-length: %d\r\n" % length if length is not None else b""
        framing += b"transfer-encoding: chunked\r\n" if chunk_out else b""
        agent.write(head + framing + _connection(keep_agent) + b"\r\n")
        await agent.drain()
        sse = SSEScanner() if content_type.startswith(b"text/event-stream") else None

        async def pump() -> None:
            async for piece in body:
                if sse is not None:  # journal the events a piece completes before passing it on
                    t = time_monotonic()
                    for data in sse.feed(piece):
                        for part, parsed in _messages(data):
                            journal.message("to_agent", part, t, parsed)
                agent.write(b"%x\r\n%s\r\n" % (len(piece), piece) if chunk_out else piece)
                await agent.drain()
            if chunk_out:
                agent.write(b"0\r\n\r\n")

        if request.start[0] != b"GET":
            await pump()  # a POST's answer: it ends when the server has answered
            return reusable, keep_agent
        # The GET event stream lasts as long as the agent wants it: when the agent hangs up, stop reading
        # the server. Watching the agent's side reads from it, so its connection is not reused afterwards.
        pumping = asyncio.ensure_future(pump())
        watching = asyncio.ensure_future(agent_reader.read(1))
        try:
            await asyncio.wait({pumping, watching}, return_when=asyncio.FIRST_COMPLETED)
            if pumping.done():
                pumping.result()  # a broken upstream raises here: the agent's connection closes unfinished
                return reusable, False
            if watching.result():  # the agent sent more (agents do not pipeline): finish, then close
                await pumping
                return reusable, False
            return False, False
        finally:
            for task in (pumping, watching):
                task.cancel()


def _connection(keep: bool) -> bytes:
    return b"" if keep else b"connection: close\r\n"


def _messages(data: bytes) -> list[tuple[bytes, Any]]:
    """A body's JSON-RPC messages: one, or each of a batch; a non-JSON body is one raw record."""
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        return [(data, None)]
    if isinstance(value, list) and value:
        return [(orjson.dumps(item), item) for item in value]
    return [(data, value)]


async def _plain(writer: asyncio.StreamWriter, status: int, body: bytes, keep: bool) -> None:
    reason = {404: b"Not Found", 502: b"Bad Gateway"}.get(status, b"")
    writer.write(
        b"HTTP/1.1 %d %s\r\ncontent-type: text/plain\r\ncontent-length: %d\r\n%s\r\n%s"
        % (status, reason, len(body), _connection(keep), body)
    )
    await writer.drain()
