"""Hands each capture proxy its secrets over a unix socket, once: no secret is ever written to disk.

The proxy an agent launches needs the server's environment and the values to redact, and must not
get them on its command line (an agent's config, a process listing) nor from a file (a run killed
with SIGKILL leaves its files behind). The harness keeps them in memory; for each proxy it deposits
them under a one-time token, and the proxy (`--secrets-socket PATH --secrets-token TOKEN`) collects
them as it starts. A token is good until its attempt ends (`withdraw`; an agent CLI may start its
server again within the attempt): read from a config file afterwards, it opens nothing. The socket
sits in a folder only its owner may enter, and goes with the phase.
"""

from __future__ import annotations

import contextlib
import secrets
import shutil
import socket
import threading
from pathlib import Path

import orjson

from mcpipechekr.capture.sockets import socket_folder

MAX_TOKEN = 128
"""Bytes a client may send as its token; more is refused."""
MAX_PAYLOAD = 16 * 1024 * 1024
"""Bytes a proxy reads back at most."""


class SecretsDesk:
    """A unix socket, served from a thread, that gives each deposited payload to whoever asks with its
    token, until the token is withdrawn."""

    def __init__(self) -> None:
        self.folder = socket_folder("mcpd-", name="s")  # 0700, as mkdtemp makes it
        self.path = self.folder / "s"
        self._payloads: dict[str, bytes] = {}
        self._lock = threading.Lock()
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(str(self.path))
        self._server.listen(64)
        self._thread = threading.Thread(target=self._serve, name="capture-secrets-desk", daemon=True)
        self._thread.start()

    def deposit(self, payload: dict) -> str:
        """Keep `payload` until its token is withdrawn; the token to collect it with."""
        token = secrets.token_hex(24)  # hex: a token never starts with `-`, which argparse reads as an option
        with self._lock:
            self._payloads[token] = orjson.dumps(payload)
        return token

    def withdraw(self, token: str) -> None:
        """Forget a payload: its attempt is over."""
        with self._lock:
            self._payloads.pop(token, None)

    def close(self) -> None:
        """Stop serving and forget every payload not collected; the socket's folder goes."""
        with self._lock:
            self._payloads.clear()
        with contextlib.suppress(OSError):
            self._server.shutdown(socket.SHUT_RDWR)
        self._server.close()
        self._thread.join(timeout=5)
        shutil.rmtree(self.folder, ignore_errors=True)

    def _serve(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return  # closed
            with client:
                client.settimeout(5)
                try:
                    token = _read_line(client)
                except (OSError, ValueError):
                    continue
                with self._lock:
                    payload = self._payloads.get(token)
                with contextlib.suppress(OSError):
                    client.sendall(payload if payload is not None else b"")


def _read_line(client: socket.socket) -> str:
    data = b""
    while not data.endswith(b"\n"):
        chunk = client.recv(MAX_TOKEN)
        if not chunk:
            break
        data += chunk
        if len(data) > MAX_TOKEN:
            raise ValueError("token too long")
    return data.strip().decode("ascii", "replace")


def collect(path: str | Path, token: str, timeout_s: float = 10.0) -> dict:
    """The payload deposited under `token` (the proxy's side); ValueError when there is none."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        client.settimeout(timeout_s)
        client.connect(str(path))
        client.sendall(token.encode("ascii") + b"\n")
        data = b""
        while len(data) <= MAX_PAYLOAD:
            chunk = client.recv(65536)
            if not chunk:
                break
            data += chunk
    if not data:
        raise ValueError("no secrets for this token (its attempt or the phase is over)")
    return orjson.loads(data)
