"""A raw JSON-RPC session with the server under test, for what the SDK client will not send.

Why: the lifecycle and JSON-RPC checks (check/spec_lifecycle.py) must send what a
well-behaved client never does: an initialize asking for "1999-01-01", a ping
before the initialized notification, a line that is not JSON, a batch, ids of
chosen types. The SDK's `Client` validates and frames every message itself, so
these checks speak JSON-RPC by hand:

- stdio: a second process of the server, started exactly as the one under test
  (`server.command`, `args`, `env`, `cwd`), in its own process group, its
  stderr redacted into a private log beside the main one (`RedactingLog`, the
  config's redactor). Its stdout is read line by line by a thread into a queue,
  so every wait has a deadline and nothing blocks on a silent server.
- streamable HTTP: POSTs to `server.url` with the configured headers, the
  `Mcp-Session-Id` the server hands out and the negotiated
  `MCP-Protocol-Version`; a JSON body or an SSE stream is read whole (under the
  timeout, and at most `raw_http.MAX_BODY` bytes) into the same queue, by the
  raw HTTP client the transport checks use too (check/raw_http.py). The server
  is the one already running: no second process.

Whatever the server sends that is not the awaited response is kept: its
notifications and its requests (answered: ping with an empty result, anything
else with -32601, so a server waiting on the client is never stuck), responses
to other ids, and stdout lines that are not JSON.

Limits: one message per stdout line (the stdio framing); an SSE stream is read
until it ends, the timeout passes or `MAX_BODY` bytes came, so a server that
keeps a POST's stream open costs that timeout; what an HTTP server does on its
own GET stream is not seen.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import threading
import time
from contextlib import suppress
from pathlib import Path
from typing import Any

import httpx2
import mcp_types

from mcpipechekr import __version__
from mcpipechekr._util.private_log import RedactingLog
from mcpipechekr._util.redact import Redactor
from mcpipechekr._util.stops import own_group, release_group
from mcpipechekr.check.raw_http import Wire, own_origin
from mcpipechekr.config import ServerConfig
from mcpipechekr.server.logs import log_tail, open_log
from mcpipechekr.server.processes import process_env

_EOF = object()
_STOP_GRACE_S = 2.0
_MAX_QUEUED = 10_000  # a server that floods stdout cannot grow our memory without bound

CLIENT_INFO = {"name": "mcpipechekr", "version": __version__}


class RawUnavailable(RuntimeError):
    """The raw session could not be opened (the process would not start, the URL would not answer)."""


def same_id(sent: Any, answered: Any) -> bool:
    """The id echoed exactly: equal and of the same JSON type (7 is not "7", 1 is not true)."""
    return type(sent) is type(answered) and sent == answered


def is_response(value: Any) -> bool:
    """A JSON-RPC response object (a result or an error, no method)."""
    return isinstance(value, dict) and "method" not in value and ("result" in value or "error" in value)


class RawSession:
    """Newline-delimited (stdio) or POSTed (HTTP) JSON-RPC, with a deadline on every wait.

    Subclasses deliver what the server sends into `inbox` and implement `_send`,
    `exit_code`, `stderr_tail` and `close`.
    """

    transport = "raw"

    def __init__(self) -> None:
        self.inbox: queue.Queue[Any] = queue.Queue(_MAX_QUEUED)
        self.notifications: list[dict[str, Any]] = []
        """Every notification the server sent, in order, each with `_received` (monotonic seconds) added."""
        self.server_requests: list[dict[str, Any]] = []
        self.strays: list[Any] = []
        """Responses nobody awaited any more (a late answer, a wrong id), and arrays."""
        self.garbage: list[str] = []
        """What arrived that is not JSON (stdout lines, HTTP bodies)."""
        self.protocol_version: str | None = None
        self.capabilities: dict[str, Any] = {}
        """What the server declared in its answer to this session's initialize."""
        self.ended = False
        self.lost: str | None = None
        """Why the session could not be written to any more, once it could not."""
        self._next_id = 0

    # --- transport ---------------------------------------------------------------------------------

    def _send(self, payload: str) -> None:
        raise NotImplementedError

    def exit_code(self) -> int | None:
        """The process's exit status when it ended; None while it runs (or for HTTP)."""
        return None

    def stderr_tail(self) -> str:
        """The last lines of the process's stderr (redacted), for a reason; empty for HTTP."""
        return ""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> RawSession:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # --- messages ----------------------------------------------------------------------------------

    def new_id(self) -> str:
        self._next_id += 1
        return f"mcpipechekr-{self._next_id}"

    def send(self, message: Any) -> bool:
        """Send one message (a JSON value, or a str sent as it is, for malformed input); False: it could not.

        A session that cannot be written to (the process exited, the URL stopped
        answering) is over: `ended` is set and `lost` says why, and every later
        wait returns None at once, so a check records what it saw instead of raising.
        """
        if self.ended:
            return False
        try:
            self._send(message if isinstance(message, str) else json.dumps(message))
        except RawUnavailable as exc:
            self.ended, self.lost = True, str(exc)
            return False
        return True

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)

    def request(
        self, method: str, params: dict[str, Any] | None = None, *, timeout_s: float, msg_id: Any = None
    ) -> dict[str, Any] | None:
        """Send a request and wait for the response with its id; None when none came in time."""
        msg_id = self.new_id() if msg_id is None else msg_id
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return self.response_to(msg_id, timeout_s)

    def response_to(self, msg_id: Any, timeout_s: float) -> dict[str, Any] | None:
        found = self.wait_for(
            lambda value: is_response(value) and same_id(msg_id, value.get("id")), timeout_s
        )
        return found if isinstance(found, dict) else None

    def wait_for(self, wanted: Any, timeout_s: float) -> Any:
        """The first value `wanted(value)` accepts within `timeout_s`, or None; every other value is filed."""
        deadline = time.monotonic() + timeout_s
        while not self.ended:
            left = deadline - time.monotonic()
            try:
                value = self.inbox.get(timeout=max(0.0, left)) if left > 0 else self.inbox.get_nowait()
            except queue.Empty:
                return None
            if value is _EOF:
                self.ended = True
                return None
            if wanted(value):
                return value
            self._file(value)
        return None

    def settle(self, timeout_s: float) -> None:
        """Wait `timeout_s`, filing whatever arrives (notifications, late answers)."""
        self.wait_for(lambda _value: False, timeout_s)

    def _file(self, value: Any) -> None:
        if isinstance(value, dict) and isinstance(value.get("method"), str):
            if "id" in value:
                self.server_requests.append(value)
                self._answer_server_request(value)
            else:
                self.notifications.append({**value, "_received": time.monotonic()})
        elif isinstance(value, str):
            self.garbage.append(value)
        else:
            self.strays.append(value)

    def _answer_server_request(self, request: dict[str, Any]) -> None:
        """Answer what the server asks (roots, sampling, ...): a ping with {}, the rest with -32601."""
        answer: dict[str, Any] = {"jsonrpc": "2.0", "id": request["id"]}
        if request["method"] == "ping":
            answer["result"] = {}
        else:
            answer["error"] = {"code": mcp_types.METHOD_NOT_FOUND, "message": "not supported by mcpipechekr"}
        self.send(answer)

    def initialize(self, version: str, timeout_s: float) -> dict[str, Any] | None:
        """Send initialize asking for `version`; the response (its version kept), or None."""
        params = {"protocolVersion": version, "capabilities": {}, "clientInfo": CLIENT_INFO}
        response = self.request("initialize", params, timeout_s=timeout_s)
        result = response.get("result") if response else None
        if isinstance(result, dict) and isinstance(result.get("protocolVersion"), str):
            self.protocol_version = result["protocolVersion"]
            declared = result.get("capabilities")
            self.capabilities = declared if isinstance(declared, dict) else {}
        return response

    def _deliver(self, value: Any) -> None:
        with suppress(queue.Full):
            self.inbox.put_nowait(value)


def _parse(text: str) -> Any:
    """A JSON value, or the text itself when it is not JSON."""
    try:
        return json.loads(text)
    except ValueError:
        return text


class StdioRawSession(RawSession):
    """A second process of a stdio server, spoken to line by line."""

    transport = "stdio"

    def __init__(self, server: ServerConfig, log_path: Path, redactor: Redactor) -> None:
        super().__init__()
        command = server.resolved_command()
        assert command is not None
        self._sink: RedactingLog = open_log(log_path, redactor)
        self._log_path = log_path
        try:
            self.process = subprocess.Popen(
                [command, *server.args],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._sink.fileno(),
                env=process_env(server.env),
                cwd=server.cwd,
                start_new_session=True,
            )
        except OSError as exc:
            self._sink.close()
            raise RawUnavailable(f"a second process of the server could not be started: {exc}") from None
        own_group(self.process.pid)
        self._reader = threading.Thread(target=self._read, name="raw-session stdout", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        with suppress(OSError, ValueError):
            for raw in self.process.stdout:
                line = raw.decode(errors="replace").strip()
                if line:
                    self._deliver(_parse(line))
        self._deliver(_EOF)

    def _send(self, payload: str) -> None:
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(payload.encode() + b"\n")
            self.process.stdin.flush()
        except (OSError, ValueError) as exc:
            raise RawUnavailable(f"the server's stdin is closed ({exc})") from None

    def exit_code(self) -> int | None:
        return self.process.poll()

    def wait_exit(self, timeout_s: float) -> int | None:
        with suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout_s)
        return self.process.poll()

    def stderr_tail(self) -> str:
        self._sink.flush()
        return log_tail(self._log_path, self._sink.offset)

    def close(self) -> None:
        """Close stdin, give the server a grace period, then SIGTERM and SIGKILL its process group."""
        process = self.process
        with suppress(OSError, ValueError):
            if process.stdin is not None:
                process.stdin.close()
        for sig in (None, signal.SIGTERM, signal.SIGKILL):
            if sig is not None:
                with suppress(ProcessLookupError, PermissionError):
                    os.killpg(process.pid, sig)
            with suppress(subprocess.TimeoutExpired):
                process.wait(_STOP_GRACE_S)
            if process.returncode is not None:
                break
        release_group(process.pid)
        with suppress(OSError, ValueError):
            if process.stdout is not None:
                process.stdout.close()
        self._sink.close()


class HttpRawSession(RawSession):
    """POSTs to a streamable-HTTP server through the checks' raw HTTP client (check/raw_http.py); each
    answer, a JSON body or every event of an SSE stream, is read within the bounds into the inbox."""

    transport = "http"

    def __init__(self, server: ServerConfig, timeout_s: float) -> None:
        super().__init__()
        assert server.url is not None
        self.timeout_s = timeout_s
        self.statuses: list[int] = []
        """The HTTP status of each POST, in order."""
        self._http = httpx2.Client(timeout=httpx2.Timeout(timeout_s))
        self.wire = Wire(self._http, server.url, dict(server.headers))

    @property
    def url(self) -> str:
        return self.wire.url

    @property
    def session_id(self) -> str | None:
        return self.wire.session_id

    def _headers(self) -> httpx2.Headers:
        """What a client sends: the session id once issued, the protocol version once negotiated."""
        if self.protocol_version:
            return self.wire.headers(mcp_protocol_version=self.protocol_version)
        return self.wire.headers(version=False)

    def _send(self, payload: str, *, redirected: bool = False) -> None:
        try:
            answer = self.wire.exchange(
                "POST", payload.encode(), self._headers(), within_s=self.timeout_s, whole_stream=True
            )
        except httpx2.HTTPError as exc:
            raise RawUnavailable(f"POST {self.url} failed: {type(exc).__name__}: {exc}") from None
        if answer.location and not redirected and own_origin(answer.location) == own_origin(self.url):
            # `/mcp/` -> `/mcp`, say: clients follow a redirect within the origin, so do these
            # checks, once; the configured headers never go to another origin
            self.wire.url = answer.location
            self._send(payload, redirected=True)
            return
        assert answer.status is not None
        self.statuses.append(answer.status)
        self.wire.session_id = self.wire.session_id or answer.session_id or None
        if answer.content_type == "text/event-stream":
            for event in answer.events:
                self._deliver(_parse(event.strip()))
        else:
            body = answer.body.decode(errors="replace").strip()
            if body:
                self._deliver(_parse(body))
        if answer.broken is not None:
            exc = answer.broken
            raise RawUnavailable(f"POST {self.url} failed: {type(exc).__name__}: {exc}")

    def close(self) -> None:
        """End the session (DELETE, as the transport asks of a client that leaves), then the client."""
        if self.session_id:
            with suppress(httpx2.HTTPError):
                self._http.delete(self.url, headers=self._headers(), timeout=2.0)
        self._http.close()


def open_raw_session(
    server: ServerConfig, log_path: Path, redactor: Redactor, timeout_s: float
) -> RawSession:
    """A raw session with `server`: a second stdio process, or a new HTTP session on the running server."""
    if server.resolved_command() is not None:
        return StdioRawSession(server, log_path, redactor)
    return HttpRawSession(server, timeout_s)
