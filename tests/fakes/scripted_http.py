"""What every scripted provider fake shares: a reply queue, a responder, bounds, a threaded server.

The OpenAI and Anthropic fakes differ only in their wire formats; taking
requests, picking the next reply and running on 127.0.0.1 live here once.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar, Generic, TypeVar

R = TypeVar("R")


class ScriptedHTTPServer(Generic[R]):
    """Replies come from the queue in order, then from `responder(body)`; else an HTTP 500 naming why.

    Subclasses set `handler` (their request handler class, which reads `owner`,
    and calls `note_headers` for every POST), `url_suffix` and `error_reply`.
    `headers` holds each POST's headers, names lower-cased, in arrival order:
    what a client authenticated with.
    """

    handler: ClassVar[type[BaseHTTPRequestHandler]]
    url_suffix: ClassVar[str] = ""
    error_reply: Callable[[int, str], R]

    def __init__(self, responder: Callable[[dict[str, Any]], R] | None, max_requests: int, max_body: int):
        self.responder = responder
        self.max_requests = max_requests
        self.max_body = max_body
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._queue: deque[R] = deque()
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def note_headers(self, headers: Mapping[str, str]) -> None:
        with self._lock:
            self.headers.append({name.lower(): value for name, value in headers.items()})

    def enqueue(self, *replies: R) -> None:
        with self._lock:
            self._queue.extend(replies)

    def _next_reply(self, body: dict[str, Any]) -> R:
        with self._lock:
            if len(self.requests) >= self.max_requests:
                return self.error_reply(500, f"fake server: more than {self.max_requests} requests")
            self.requests.append(body)
            if self._queue:
                return self._queue.popleft()
        if self.responder is not None:
            try:
                return self.responder(body)
            except Exception as exc:  # a broken responder must show up in the test, not hang it
                return self.error_reply(500, f"fake server: responder failed: {type(exc).__name__}: {exc}")
        return self.error_reply(500, "fake server: no scripted reply left and no responder")

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError(f"{type(self).__name__} is not running; use it in a `with` block")
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}{self.url_suffix}"

    def __enter__(self):  # noqa: ANN204 - returns the subclass
        owner = self

        class Handler(self.handler):  # type: ignore[name-defined,misc]
            pass

        Handler.owner = owner  # type: ignore[attr-defined]
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05})
        self._thread.daemon = True
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
