"""The processes we start for an HTTP server (`server.start`): spawned in a group of their own,
noted so that a killed run's next command ends them, waited on until the URL's port accepts, and
stopped by group.

`http_server_started` shares one such process between everything in this
process that needs the server at once (Phase 1's slots, doit's trace targets in
threads), since a second copy could not listen on the same port.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import anyio.to_thread

from mcpipechekr._util.leftover_processes import note_started, note_stopped
from mcpipechekr._util.project_lock import held_lock_file
from mcpipechekr._util.redact import Redactor
from mcpipechekr._util.stops import own_group, release_group
from mcpipechekr.config import LaunchSpec, ServerConfig
from mcpipechekr.errors import ServerHalt
from mcpipechekr.server.logs import ServerLog, describe_target, exit_description, open_log, server_redactor


def process_env(extra: dict[str, str]) -> dict[str, str]:
    """The environment a server under test starts with: ours plus its own, its output unbuffered so a
    crash's last lines reach the log."""
    env = dict(os.environ)
    env.update(extra)
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


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
                process = start_http_process(server.start, sink.fileno(), redactor)
            except BaseException:
                sink.close()
                raise
            shared = _SharedStart(process, ServerLog(log_path, redactor, sink), time.monotonic())
            _shared_starts[key] = shared
        shared.users += 1
    try:
        await wait_for_port(server, shared.process, shared.log, shared.started)
        yield
    finally:
        with _shared_guard:
            shared.users -= 1
            last = shared.users == 0
            if last and _shared_starts.get(key) is shared:
                del _shared_starts[key]
        if last:  # shielded: a phase cut short (Ctrl-C, a halt) must still stop the process
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(stop_popen, shared.process)
            shared.log.sink.close()


def start_http_process(start: LaunchSpec, log: int, redactor: Redactor) -> subprocess.Popen[bytes]:
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


def kill_popen(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    _untrack(process.pid)


def stop_popen(process: subprocess.Popen[bytes]) -> None:
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


async def wait_for_port(
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
    exit_text = exit_description(process.poll()) if process is not None else None
    what = (
        f"{exit_text} during start-up"
        if exit_text
        else f"did not accept connections on {host}:{port} within {timeout_s:g}s"
    )
    raise ServerHalt(log.quote(f"server '{server.name}' {what} ({describe_target(server)}).\n", "Its output"))
