"""One `opencode serve` per run, driven over its HTTP API: the opencode runner's default mode.

`opencode run` costs 5-11 s per attempt before the model is asked anything
(Bun starting, the config and database opened, the MCP server launched); a
server started once pays that once. `bench/opencode_runner.py` measures both.

One server, one journal per attempt. opencode keeps one *instance* per
project folder (the `directory` query parameter of every API call), each
with its own configuration state and MCP clients. Each attempt works in its
own empty folder, so it gets an instance of its own: the attempt adds the
server under test to it (`POST /mcp`, the capture proxy's command with this
attempt's journal, under the same name as the config file would give it, so
the model sees the same tool names as with `opencode run`), creates a session,
sends the prompt and waits for the answer (`POST /session/{id}/message`),
reads the session's messages (the shape `opencode export` prints, converted
by `convert_opencode_export`), and disposes of the instance, which closes the
MCP client: the proxy sees its input close, stops its server and finishes the
journal. Attempts in flight at once never share an MCP server. The rest of
the opencode config (provider, permissions, step limit) is written once, in
the run's scratch folder, and given to the server with `OPENCODE_CONFIG`, as
`opencode run` is given it.

A crashed or hung server: while a prompt is pending, the server's process is
watched and its health endpoint polled. When it exits, or stops answering for
`HUNG_AFTER_S`, the attempts in flight on it end as `incomplete` with that
reason, the server is stopped (its process group: the MCP clients it started)
and the next attempt starts a new one. It is restarted once per run; a second
failure leaves the remaining attempts `error`, naming both.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2

from mcpipechekr._util.process_group import group_running
from mcpipechekr._util.stops import own_group, release_group
from mcpipechekr._util.tempfiles import own_temp_folder
from mcpipechekr.artifacts.atomic import atomic_write_json

MAX_RESTARTS = 1
"""Times a run's opencode server is started again after it crashed or hung."""
START_TIMEOUT_S = 60.0
"""Longest wait for `opencode serve` to say where it listens."""
HEALTH_EVERY_S = 2.0
"""How often a server with a prompt pending is checked."""
HUNG_AFTER_S = 20.0
"""A server whose health endpoint has not answered for this long is taken as hung."""
STOP_GRACE_S = 3.0
STOP_SESSION_S = 3.0
"""Longest time spent aborting a timed-out attempt's session (the engine allows 5 s past the timeout)."""
_LISTENING = re.compile(r"listening on (http://\S+)")


class OpencodeServerDown(Exception):
    """The opencode server crashed, hung or would not start; `reason` says which."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass
class ServeProcess:
    """One running `opencode serve`: its process and where it listens."""

    process: subprocess.Popen[bytes]
    url: str
    log: Path
    down: str | None = None
    """Why it is no longer usable (crashed, hung), once known."""

    @property
    def pid(self) -> int:
        return self.process.pid

    def exited(self) -> str | None:
        code = self.process.poll()
        if code is None:
            return None
        how = f"was killed by signal {signal.Signals(-code).name}" if code < 0 else f"exited with code {code}"
        return f"the opencode server {how}"

    def log_tail(self) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return " | ".join(line for line in text.splitlines()[-3:] if line.strip())[-400:]


class OpencodeServe:
    """A run's `opencode serve`: started on first use, watched, restarted once, stopped at the end.

    `env` is the server's whole environment (it is handed to the MCP servers it
    launches, as `opencode run`'s is); `config` is the opencode config written
    to the run's scratch folder and passed with `OPENCODE_CONFIG`. Its output
    goes to a file there (a pipe nobody reads would fill and stall it).
    """

    def __init__(self, binary: str, env: dict[str, str], config: dict[str, Any]):
        self.binary = binary
        self.env = env
        self.config = config
        self.scratch = own_temp_folder("opencode-serve")
        self.current: ServeProcess | None = None
        self.starts = 0
        self.failures: list[str] = []
        self.start_seconds: list[float] = []
        """How long each start took, until the server said where it listens (for benchmarks)."""
        self._idle: list[Path] = []
        self._folders = 0
        self._lock = threading.Lock()  # event loops of several threads may share the server (kept.py)
        self._folders_lock = threading.Lock()  # never held across an await
        self._local = threading.local()

    @property
    def client(self) -> httpx2.AsyncClient:
        """This thread's HTTP client: a client belongs to the event loop it was first used in."""
        client: httpx2.AsyncClient | None = getattr(self._local, "client", None)
        if client is None:
            client = httpx2.AsyncClient(timeout=httpx2.Timeout(30.0), trust_env=False)
            self._local.client = client
        return client

    async def release_client(self) -> None:
        """Close this thread's client, before its event loop ends; the server keeps running."""
        client: httpx2.AsyncClient | None = getattr(self._local, "client", None)
        self._local.client = None
        if client is not None:
            with anyio.CancelScope(shield=True):
                await client.aclose()

    async def ensure(self) -> ServeProcess:
        """The running server, started (or restarted once after a failure) when there is none."""
        while not self._lock.acquire(blocking=False):  # held by another attempt, maybe in another loop
            await anyio.sleep(0.02)
        try:
            serve = self.current
            if serve is not None and serve.down is None and serve.exited() is None:
                return serve
            if serve is not None:
                self.failures.append(serve.down or serve.exited() or "the opencode server stopped")
                self.current = None
                await self._stop(serve)
            if self.starts > MAX_RESTARTS:
                raise OpencodeServerDown(
                    "the opencode server failed again after its restart: " + "; then ".join(self.failures)
                )
            self.current = await self._start()
            return self.current
        finally:
            self._lock.release()

    async def _start(self) -> ServeProcess:
        self.starts += 1
        config_path = atomic_write_json(self.scratch / "mcpipechekr-opencode.json", self.config)
        home = self.scratch / "project"  # the server's own folder: empty, never an attempt's
        home.mkdir(exist_ok=True)
        env = {**self.env, "OPENCODE_CONFIG": str(config_path), "PWD": str(home)}
        log = self.scratch / f"serve-{self.starts}.log"
        with log.open("wb") as sink:
            process = subprocess.Popen(
                [self.binary, "serve", "--hostname", "127.0.0.1", "--port", "0"],
                stdin=subprocess.DEVNULL,
                stdout=sink,
                stderr=subprocess.STDOUT,
                cwd=str(home),
                env=env,
                start_new_session=True,
            )
        own_group(process.pid)  # ended by the front end on Ctrl-C, should this process not get to it
        serve = ServeProcess(process, "", log)
        began = time.monotonic()
        deadline = began + START_TIMEOUT_S
        try:
            while time.monotonic() < deadline and process.poll() is None:
                match = _LISTENING.search(log.read_text(errors="replace"))
                if match:
                    serve.url = match.group(1).rstrip("/")
                    self.start_seconds.append(time.monotonic() - began)
                    return serve
                await anyio.sleep(0.05)
        except BaseException:  # cancelled while it starts (a timeout, Ctrl-C): nobody else would stop it
            await self._stop(serve)
            raise
        await self._stop(serve)
        how = serve.exited() or f"no address within {START_TIMEOUT_S:g} s"
        raise OpencodeServerDown(f"`opencode serve` did not start ({how}): {serve.log_tail()}")

    async def _stop(self, serve: ServeProcess) -> None:
        """End the server, then what it launched: the capture proxies see their input close and stop
        their servers themselves (finishing their journals); whatever is left after the grace is killed."""
        with anyio.CancelScope(shield=True):
            for sig in (signal.SIGTERM, signal.SIGKILL):
                if serve.process.poll() is None:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(serve.pid, sig)
                    deadline = time.monotonic() + STOP_GRACE_S
                    while serve.process.poll() is None and time.monotonic() < deadline:
                        await anyio.sleep(0.05)
            deadline = time.monotonic() + 2 * STOP_GRACE_S
            while group_running(serve.pid) and time.monotonic() < deadline:
                await anyio.sleep(0.05)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(serve.pid, signal.SIGKILL)
            release_group(serve.pid)

    async def watch(self, serve: ServeProcess) -> str:
        """Return (the reason) once `serve` has crashed or hung; runs until cancelled otherwise."""
        silent_since: float | None = None
        while True:
            if serve.down:
                return serve.down
            exited = serve.exited()
            if exited:
                serve.down = f"{exited} during the attempt"
                return serve.down
            answered = False
            with anyio.move_on_after(HEALTH_EVERY_S * 2):
                try:
                    answered = (await self.client.get(f"{serve.url}/global/health")).status_code == 200
                except httpx2.HTTPError:
                    answered = False
            now = time.monotonic()
            if answered:
                silent_since = None
            else:
                silent_since = silent_since or now
                if serve.exited() is None and now - silent_since >= HUNG_AFTER_S:
                    serve.down = f"the opencode server stopped answering for {HUNG_AFTER_S:g} s (hung)"
                    return serve.down
            await anyio.sleep(HEALTH_EVERY_S if answered else 0.2)

    async def call(
        self,
        serve: ServeProcess,
        method: str,
        path: str,
        *,
        directory: Path,
        timeout_s: float = 30.0,
        body: Any = None,
    ) -> Any:
        """One API call on `serve` for the instance of `directory`; its JSON answer.

        Raises OpencodeServerDown when the server is gone (its reason), RuntimeError
        for an answer that is not 2xx.
        """
        try:
            response = await self.client.request(
                method,
                f"{serve.url}{path}",
                params={"directory": str(directory)},
                json=body,
                timeout=httpx2.Timeout(timeout_s),
            )
        except httpx2.HTTPError as exc:
            await anyio.sleep(0.1)  # a connection cut by a dying server: let its exit be seen
            exited = serve.exited()
            serve.down = serve.down or (
                f"{exited} during the attempt"
                if exited
                else f"the opencode server did not answer {path}: {exc!r}"
            )
            raise OpencodeServerDown(serve.down) from None
        if response.status_code >= 300:
            raise RuntimeError(
                f"opencode answered {method} {path} with {response.status_code}: {response.text[:400]}"
            )
        return response.json() if response.content else None

    async def stop_session(self, serve: ServeProcess, folder: Path, session_id: str) -> None:
        """Abort a session until its status says it no longer runs, for at most `STOP_SESSION_S`.

        An abort that reaches opencode before it has started the prompt's loop is lost: the loop
        starts after it and runs on, asking the model. The abort is sent again while the session
        is busy; the folder's instance is then disposed of (`release_folder`), which ends a loop
        that starts even later.
        """
        with anyio.move_on_after(STOP_SESSION_S), contextlib.suppress(RuntimeError):
            while True:
                await self.call(serve, "POST", f"/session/{session_id}/abort", directory=folder)
                await anyio.sleep(0.2)
                status = await self.call(serve, "GET", "/session/status", directory=folder)
                running = status.get(session_id) if isinstance(status, dict) else None
                if not isinstance(running, dict) or running.get("type") in (None, "idle"):
                    return

    def take_folder(self) -> Path:
        """An empty project folder no attempt is using: its instance of the server is already set up
        when an earlier attempt used it (a new instance costs seconds)."""
        with self._folders_lock:
            if self._idle:
                return self._idle.pop()
            self._folders += 1
            folder = self.scratch / "projects" / f"p{self._folders}"
        folder.mkdir(parents=True)
        return folder

    async def release_folder(self, serve: ServeProcess, folder: Path, mcp_name: str, *, reuse: bool) -> None:
        """Disconnect the attempt's MCP server (the proxy then finishes its journal) and put the folder
        back for the next attempt. An attempt that did not end cleanly (`reuse` false: timed out, an
        API error) may leave its session's loop running (an abort can be lost, see `stop_session`):
        its folder's instance is disposed of instead, which ends that loop and closes its MCP
        clients, and is never reused; so is one whose disconnect fails."""
        if serve.down is not None or serve.exited() is not None:
            return
        if reuse:
            with anyio.move_on_after(10):
                try:
                    await self.call(serve, "POST", f"/mcp/{mcp_name}/disconnect", directory=folder)
                    with self._folders_lock:
                        self._idle.append(folder)
                    return
                except (OpencodeServerDown, RuntimeError):
                    pass
        with anyio.move_on_after(10):
            try:
                await self.call(serve, "POST", "/instance/dispose", directory=folder)
            except (OpencodeServerDown, RuntimeError):
                pass

    async def aclose(self) -> None:
        """Stop the server and remove the run's scratch folder."""
        with anyio.CancelScope(shield=True):
            if self.current is not None:
                await self._stop(self.current)
                self.current = None
            await self.release_client()
            shutil.rmtree(self.scratch, ignore_errors=True)
