"""The streamable-HTTP capture proxy: one local HTTP server per run, one route per agent attempt.

    agent  --HTTP-->  127.0.0.1:PORT/<route>  --HTTP-->  the server's URL

Each attempt registers a route (`HttpCaptureProxy.route(journal)`) and gets its
own URL; every request on it is forwarded to the real endpoint with its
method, query, headers and body unchanged (hop-by-hop headers aside), and the
response comes back the same way, streamed as it arrives, so server-sent
events (a POST answered with `text/event-stream`, the GET stream) reach the
agent event by event. JSON-RPC messages found in request bodies, JSON
responses and SSE `data:` lines are journaled as they pass.

A JSON response is journaled before it is passed on, and an SSE chunk's
complete events before the chunk, so by the time the agent has an answer its
record is in the journal.

The headers of `server.headers` (e.g. Authorization) are added by the proxy
on the way to the server, so agent configs never hold them. Upstream bodies
are requested uncompressed (`Accept-Encoding: identity`) so what is journaled
is what is forwarded.

A connection error to the server is journaled as `upstream_error` and
answered with HTTP 502: the server is down, which halts the run.

The proxy runs uvicorn in a thread of its own with its own event loop, so it
neither competes with the agents' event loop nor takes over the process's
signal handlers (uvicorn installs them only in the main thread).
"""

from __future__ import annotations

import secrets
import socket
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import orjson

from mcpipechekr.capture.journal import JournalWriter, time_monotonic
from mcpipechekr.config import Redactor

ASGIReceive = Callable[[], Awaitable[dict[str, Any]]]
ASGISend = Callable[[dict[str, Any]], Awaitable[None]]

_HOP_BY_HOP = {
    b"connection",
    b"keep-alive",
    b"proxy-authenticate",
    b"proxy-authorization",
    b"te",
    b"trailer",
    b"transfer-encoding",
    b"upgrade",
    b"host",
    b"content-length",
    b"accept-encoding",
}
_START_TIMEOUT_S = 10.0


@dataclass
class _Route:
    upstream: str
    writer: JournalWriter


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


class HttpCaptureProxy:
    """The run's HTTP proxy; a context manager that starts and stops its thread."""

    def __init__(
        self, upstream_url: str, headers: dict[str, str] | None = None, redactor: Redactor | None = None
    ):
        self.upstream_url = upstream_url
        self.headers = dict(headers or {})
        self.redactor = redactor
        self._routes: dict[str, _Route] = {}
        self._socket: socket.socket | None = None
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self._client: Any = None

    # --- lifecycle ----------------------------------------------------------------------------

    @property
    def port(self) -> int:
        if self._socket is None:
            raise RuntimeError("the proxy is not running")
        return int(self._socket.getsockname()[1])

    def start(self) -> HttpCaptureProxy:
        import uvicorn

        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # Accepted connections inherit this: without it, a response's headers and its first event go out
        # as two small segments, and Nagle plus the agent's delayed ACK hold the event back ~40 ms.
        self._socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._socket.bind(("127.0.0.1", 0))
        config = uvicorn.Config(
            self._asgi,
            log_level="warning",
            access_log=False,
            lifespan="on",
            http="h11",
            loop="asyncio",
            interface="asgi3",
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._socket]}, name="capture-http", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + _START_TIMEOUT_S
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("the HTTP capture proxy did not start")
            time.sleep(0.005)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self._socket is not None:
            self._socket.close()
        for route in list(self._routes.values()):
            route.writer.close()
        self._routes.clear()
        self._server = self._thread = self._socket = None

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
        self._routes[token] = _Route(self.upstream_url, writer)
        return f"http://127.0.0.1:{self.port}/{token}"

    def release(self, url: str) -> None:
        """End an attempt's route: later requests on it get 404, its journal is closed."""
        route = self._routes.pop(url.rstrip("/").rsplit("/", 1)[-1], None)
        if route is not None:
            route.writer.event("proxy_stopped")
            route.writer.close()

    # --- the ASGI app -------------------------------------------------------------------------

    async def _asgi(self, scope: dict[str, Any], receive: ASGIReceive, send: ASGISend) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        token = scope["path"].strip("/").split("/", 1)[0]
        route = self._routes.get(token)
        if route is None:
            await _plain(send, 404, b"no such capture route\n")
            return
        await self._forward(route, scope, receive, send)

    async def _lifespan(self, receive: ASGIReceive, send: ASGISend) -> None:
        import httpx2

        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                self._client = httpx2.AsyncClient(
                    timeout=httpx2.Timeout(30.0, read=None),
                    limits=httpx2.Limits(max_keepalive_connections=32),
                )
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if self._client is not None:
                    await self._client.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _forward(
        self, route: _Route, scope: dict[str, Any], receive: ASGIReceive, send: ASGISend
    ) -> None:
        import httpx2

        body = await _read_body(receive)
        t = time_monotonic()
        writer = route.writer
        if body:
            for part, parsed in _messages(body):
                writer.message("to_server", part, t, parsed)
        headers = [(k, v) for k, v in scope["headers"] if k.lower() not in _HOP_BY_HOP]
        names = {name.lower().encode() for name in self.headers}
        headers = [(k, v) for k, v in headers if k.lower() not in names]
        headers += [(name.encode(), value.encode()) for name, value in self.headers.items()]
        headers.append((b"accept-encoding", b"identity"))
        url = route.upstream + (("?" + scope["query_string"].decode()) if scope.get("query_string") else "")
        request = self._client.build_request(scope["method"], url, headers=headers, content=body)
        try:
            response = await self._client.send(request, stream=True)
        except httpx2.HTTPError as exc:
            writer.event("upstream_error", detail=f"{type(exc).__name__}: {exc} ({route.upstream})")
            await _plain(send, 502, f"capture proxy: the MCP server is unreachable: {exc}\n".encode())
            return
        try:
            await self._relay(response, writer, receive, send)
        finally:
            await response.aclose()

    async def _relay(
        self, response: Any, writer: JournalWriter, receive: ASGIReceive, send: ASGISend
    ) -> None:
        out_headers = [
            (k.lower(), v)
            for k, v in response.headers.raw
            if k.lower() not in _HOP_BY_HOP - {b"content-length"}
        ]
        await send({"type": "http.response.start", "status": response.status_code, "headers": out_headers})
        content_type = response.headers.get("content-type", "")
        if content_type.startswith("application/json"):
            # A JSON answer is one unit: journal it before the agent can act on it.
            body = await response.aread()
            t = time_monotonic()
            for part, parsed in _messages(body):
                writer.message("to_agent", part, t, parsed)
            await send({"type": "http.response.body", "body": body, "more_body": False})
            return
        sse = SSEScanner() if content_type.startswith("text/event-stream") else None

        async with anyio.create_task_group() as tg:

            async def watch_disconnect() -> None:
                while (await receive())["type"] != "http.disconnect":
                    pass
                tg.cancel_scope.cancel()

            tg.start_soon(watch_disconnect)
            async for chunk in response.aiter_raw():
                t = time_monotonic()
                if sse is not None:  # journal the events a chunk completes before passing it on
                    for data in sse.feed(chunk):
                        for part, parsed in _messages(data):
                            writer.message("to_agent", part, t, parsed)
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            tg.cancel_scope.cancel()


def _messages(data: bytes) -> list[tuple[bytes, Any]]:
    """A body's JSON-RPC messages: one, or each of a batch; a non-JSON body is one raw record."""
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        return [(data, None)]
    if isinstance(value, list) and value:
        return [(orjson.dumps(item), item) for item in value]
    return [(data, value)]


async def _read_body(receive: ASGIReceive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            break
    return b"".join(chunks)


async def _plain(send: ASGISend, status: int, body: bytes) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"text/plain"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})
