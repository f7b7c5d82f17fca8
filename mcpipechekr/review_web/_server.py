"""The review page's HTTP server: 127.0.0.1 only, a random token, one decision, then it stops.

Built on the standard library's `ThreadingHTTPServer`: the page is one reviewer
on one machine for a few minutes, so a framework would add a dependency and
nothing this needs. What keeps other people and other pages out:

- It binds 127.0.0.1 alone (never 0.0.0.0): nothing off this machine reaches it.
- Every request must carry the token printed with the URL
  (`secrets.token_urlsafe`), as `?token=` or the `X-Review-Token` header,
  compared with `secrets.compare_digest`; without it: 403. Another local
  user, or a page in the browser that guesses the port, has no token.
- The `Host` header must name 127.0.0.1 or localhost at this port, so a name
  rebound to 127.0.0.1 (DNS rebinding) is refused even before the token.
- A POST whose `Origin` is not the page's own (`http://127.0.0.1:PORT`) is
  refused (a page elsewhere that learnt the token still cannot decide), and a
  POST without `Origin` (a script, curl) only with the token in the header.
- Answers carry the policy of the page, `no-store`, `nosniff`,
  `no-referrer` and `frame-ancestors 'none'`; request bodies are bounded.

The decision is made by `ReviewSession.decide`; the server stops once it is
answered, and `serve_review` returns the review. Ctrl-C stops it with nothing
recorded.
"""

from __future__ import annotations

import secrets
import threading
import time
import webbrowser
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import SplitResult, parse_qs, unquote, urlsplit

from pydantic import ValidationError
from rich.console import Console
from rich.text import Text

from mcpipechekr.artifacts import Review, RunDir
from mcpipechekr.config import Config
from mcpipechekr.review.prompt import announce_decision
from mcpipechekr.review_web._api import DecisionRequest, ErrorAnswer
from mcpipechekr.review_web._page import (
    CONTENT_SECURITY_POLICY,
    ENDED_POLICY,
    PROGRESS_POLICY,
    TRACE_POLICY,
    render_ended_page,
    render_page,
    render_progress_page,
    render_trace_page,
)
from mcpipechekr.review_web._progress import LoopProgress
from mcpipechekr.review_web._session import Refused, ReviewSession

HOST = "127.0.0.1"
TOKEN_HEADER = "X-Review-Token"
MAX_BODY_BYTES = 64 * 1024
"""A decision is a few ids and a note; a larger body is refused (413) before it is read."""


WATCHED_S = 5.0
"""A page that asked for anything this recently is being watched: the loop's end waits this long for it
to reload."""


class ReviewServer(ThreadingHTTPServer):
    """The review page on 127.0.0.1, answering only requests that carry `token`.

    `session` is the run under review, or None while none waits (the loop's page between reviews);
    `progress`, when given (the loop's page), answers `GET /api/progress` and the page shows it while
    no review waits. The handler reads `session` once per request, so a request answered while the loop
    swaps it sees one run throughout.
    """

    daemon_threads = True

    def __init__(
        self,
        session: ReviewSession | None,
        *,
        port: int = 0,
        token: str | None = None,
        progress: LoopProgress | None = None,
    ) -> None:
        self.session = session
        self.progress = progress
        self.last_run: ReviewSession | None = None  # the loop's last run, shown once the loop has ended
        self.polled = 0.0  # when the page (or a client of its API) last asked for anything (monotonic)
        self.ended_shown = threading.Event()  # the ended page was served after the loop ended
        self.token = token or secrets.token_urlsafe(32)
        super().__init__((HOST, port), _Handler)

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    @property
    def origin(self) -> str:
        """The page's own origin: the only one a POST may come from."""
        return f"http://{HOST}:{self.port}"

    @property
    def url(self) -> str:
        return f"{self.origin}/?token={self.token}"


class _Handler(BaseHTTPRequestHandler):
    server: ReviewServer
    server_version = "MCPipeChekr-review"
    sys_version = ""
    protocol_version = "HTTP/1.0"  # one request per connection: nothing lingers once the decision is made

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (the standard library's name)
        """Quiet: request lines would print the token; refusals are answered to the caller instead."""

    # --- requests ---------------------------------------------------------------------------------

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        if self._token_source(url) is None:
            return
        self.server.polled = time.monotonic()  # someone has the page (or its API) open
        session = self.server.session
        progress = self.server.progress
        last, ended = self.server.last_run, progress.ended if progress is not None else None
        if url.path == "/api/progress":
            if progress is None:
                self._error(404, "no progress here: this page serves one review")
            else:
                self._send_json(200, progress.view(session).model_dump_json())
        elif ended is not None and last is not None and session is None:
            # the loop has ended by itself: its last run, read only
            if url.path == "/":
                page = render_ended_page(last, last.view(), self.server.token, ended)
                self._send(200, page, ENDED_POLICY)
                self.server.ended_shown.set()
            elif url.path.startswith("/trace/"):
                self._send_trace(last, url.path)
            else:
                self._error(409 if url.path == "/api/run" else 404, f"the loop has ended: {ended}")
        elif session is None or (progress is not None and session.review is not None):
            # the loop's page between reviews (or just after a decision): its progress, no run to decide
            if url.path == "/" and progress is not None:
                view = progress.view(session)
                self._send(200, render_progress_page(view), PROGRESS_POLICY)
            elif url.path == "/api/run":
                self._error(409, "no review is waiting: the loop is working (GET /api/progress says on what)")
            else:
                self._error(404, "no such page while no review is waiting")
        elif url.path == "/":
            page = render_page(session, session.view(), self.server.token, loop=progress is not None)
            self._send(200, page, CONTENT_SECURITY_POLICY)
        elif url.path == "/api/run":
            self._send_json(200, session.view().model_dump_json())
        elif url.path.startswith("/trace/"):
            self._send_trace(session, url.path)
        else:
            self._error(404, "no such page")

    def _send_trace(self, session: ReviewSession, path: str) -> None:
        """`/trace/<name>`: one trace of the session's run, looked up by name (never a path joined)."""
        data = session.trace(unquote(path.removeprefix("/trace/")))
        if data is None:
            self._error(404, "no such trace in this run")
        else:
            self._send(200, render_trace_page(session, data, self.server.token), TRACE_POLICY)

    def do_POST(self) -> None:
        url = urlsplit(self.path)
        source = self._token_source(url)
        if source is None:
            return
        origin = self.headers.get("Origin")
        if origin is None and source != "header":
            self._error(403, f"a request without Origin must carry the token in the {TOKEN_HEADER} header")
            return
        if origin is not None and origin != self.server.origin:
            self._error(403, "cross-origin request refused: decide on the review page itself")
            return
        if url.path != "/api/decision":
            self._error(404, "no such endpoint")
            return
        body = self._body()
        if body is None:
            return
        try:
            request = DecisionRequest.model_validate_json(body)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(part) for part in error['loc']) or 'body'}: {error['msg']}"
                for error in exc.errors()
            )
            self._error(400, f"not a decision: {problems} (nothing was recorded)")
            return
        session = self.server.session
        if session is None:
            self._error(409, "no review is waiting: nothing to decide now (nothing was recorded)")
            return
        try:
            answer = session.decide(request)
        except Refused as refused:
            self._error(refused.status, refused.message)
            return
        self._send_json(200, answer.model_dump_json())
        session.done.set()  # answered: the server (or the loop's review) may go on now

    # --- checks -----------------------------------------------------------------------------------

    def _token_source(self, url: SplitResult) -> str | None:
        """Where the token came from (`query` or `header`); None after answering 403 (or 400)."""
        host = self.headers.get("Host", "")
        if host not in (f"{HOST}:{self.server.port}", f"localhost:{self.server.port}"):
            self._error(403, "wrong Host: open the address the command printed")
            return None
        expected = self.server.token.encode()
        header = self.headers.get(TOKEN_HEADER)
        if header is not None:
            if secrets.compare_digest(header.encode("utf-8", "replace"), expected):
                return "header"
            self._error(403, "wrong token: open the address the command printed")
            return None
        query = parse_qs(url.query, keep_blank_values=True).get("token", [])
        if len(query) == 1 and secrets.compare_digest(query[0].encode("utf-8", "replace"), expected):
            return "query"
        self._error(403, "no valid token: open the address the command printed")
        return None

    def _body(self) -> bytes | None:
        if self.headers.get_content_type() != "application/json":
            self._error(415, "send the decision as application/json")
            return None
        try:
            length = int(self.headers.get("Content-Length", ""))
        except ValueError:
            self._error(411, "Content-Length is required")
            return None
        if length < 0 or length > MAX_BODY_BYTES:
            self._error(413, f"a decision is at most {MAX_BODY_BYTES:,} bytes")
            return None
        return self.rfile.read(length)

    # --- answers ----------------------------------------------------------------------------------

    def _error(self, status: int, message: str) -> None:
        self._send_json(status, ErrorAnswer(error=message).model_dump_json())

    def _send_json(self, status: int, body: str) -> None:
        self._send(status, body, "default-src 'none'; frame-ancestors 'none'", "application/json")

    def _send(self, status: int, body: str, policy: str, content_type: str = "text/html") -> None:
        data = body.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", f"{content_type}; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Content-Security-Policy", policy)
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("X-Frame-Options", "DENY")
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()


def serve_review(
    run_dir: RunDir,
    out: Console,
    *,
    config: Config | None = None,
    port: int = 0,
    open_browser: bool = False,
    token: str | None = None,
) -> Review:
    """Serve the review page of `run_dir` until a decision is recorded on it; returns that review.

    Prints the page's address (with its token) and how to stop; `open_browser`
    opens it with the `webbrowser` module. The report is read once, here, and
    the decision is recorded on exactly those bytes (`ReviewSession`). Ctrl-C
    (KeyboardInterrupt) stops the server and propagates, with nothing recorded.
    `port` 0 takes a free one.
    """
    session = ReviewSession.load(run_dir, config)
    server = ReviewServer(session, port=port, token=token)
    thread = _serve_in_thread(server)
    try:
        _show_address(
            server,
            out,
            "Decide on the page (only this machine can reach it; the address carries its key). "
            "Ctrl-C stops without recording anything.",
            open_browser=open_browser,
        )
        review = _decision(session)
    finally:
        _stop(server, thread)
    announce_decision(run_dir, review, out)
    return review


class LoopPage:
    """The loop's one page (`doit loop --web-review`): started once, its progress between reviews.

    One server, one token and one address for the whole loop, printed once: the reviewer keeps one tab
    open, which follows Phase 1, the evaluation and the fix (`LoopProgress`) and turns into the review
    of the current run when the loop reaches it (`review`), then back. `close` stops it.
    """

    def __init__(
        self,
        config: Config,
        out: Console,
        *,
        port: int = 0,
        token: str | None = None,
        open_browser: bool = False,
    ) -> None:
        self.config = config
        self.out = out
        self.progress = LoopProgress(config.redactor.redact)
        self.server = ReviewServer(None, port=port, token=token, progress=self.progress)
        self._thread = _serve_in_thread(self.server)
        _show_address(
            self.server,
            out,
            "It shows the loop's progress, and each review when the loop reaches it: decide there "
            "(only this machine can reach it; the address carries its key).",
            open_browser=open_browser,
        )

    def review(self, run_dir: RunDir) -> Review:
        """Serve the review of `run_dir` on the page until a decision is recorded on it; that review.

        As `serve_review` without a server of its own. Ctrl-C propagates with nothing recorded; either way
        the page goes back to the progress view.
        """
        session = ReviewSession.load(run_dir, self.config)
        self.server.session = session
        try:
            self.out.print(
                Text(f"the review of {run_dir.run_id} waits on the review page (the address above)")
            )
            review = _decision(session)
        finally:
            self.server.session = None
        announce_decision(run_dir, review, self.out)
        return review

    def ended(self, run_dir: RunDir, reason: str) -> None:
        """The loop ended by itself, for `reason`: the page shows `run_dir` (its last run) read only.

        A page that asked for anything in the last few seconds (someone is watching) is given time to load
        it before `close` stops the server, so the reviewer sees how the loop ended and not a page that
        stopped answering. A run without a bug report has nothing to show: the page stops with the loop.
        """
        if not run_dir.bug_report.exists():
            return
        self.server.last_run = ReviewSession.load(run_dir, self.config)
        self.progress.end(reason)
        if time.monotonic() - self.server.polled < WATCHED_S:
            self.server.ended_shown.wait(WATCHED_S)

    def close(self) -> None:
        _stop(self.server, self._thread)


def _serve_in_thread(server: ReviewServer) -> threading.Thread:
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True)
    thread.start()
    return thread


def _stop(server: ReviewServer, thread: threading.Thread) -> None:
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


def _show_address(server: ReviewServer, out: Console, what_to_do: str, *, open_browser: bool) -> None:
    """The address (with its key) and what to do there; `open_browser` opens it."""
    out.print(Text(f"review page → {server.url}"))
    out.print(Text(what_to_do))
    if open_browser and not webbrowser.open(server.url):
        out.print(Text("no browser could be opened here: open the address above yourself."))


def _decision(session: ReviewSession) -> Review:
    """Wait until the page records a decision on `session`; that review."""
    while not session.done.wait(0.2):  # a timed wait, so Ctrl-C reaches this thread
        pass
    assert session.review is not None  # done is set only after a decision is recorded
    return session.review


_loop_page: LoopPage | None = None


def active_loop_page() -> LoopPage | None:
    """The loop's page while the loop runs with the web review, else None (the review serves its own)."""
    return _loop_page


@contextmanager
def loop_page(
    config: Config, out: Console, *, enabled: bool, port: int = 0, open_browser: bool = False
) -> Iterator[LoopPage | None]:
    """The loop's page for the `with` block when `enabled` (else None); closed when the block ends."""
    global _loop_page
    if not enabled:
        yield None
        return
    page = LoopPage(config, out, port=port, open_browser=open_browser)
    _loop_page = page
    try:
        yield page
    finally:
        _loop_page = None
        page.close()
