"""Servers started ahead of the Phase 1 attempts that will use them, so starts overlap model time.

Each Phase 1 attempt gets a stdio server of its own, as an agent would start
it. A server that takes 20 s to start would add 20 s to every attempt, and
those seconds would pass with nothing else to do. A `WarmPool` starts the
servers before the attempts ask for them. For a slot's next attempt to find
its server up, that server must have been started a whole start earlier, so
each slot keeps as many servers waiting as attempts it runs in one start:
start time over attempt time, rounded up (`ahead_per_slot`), at least one and
at most `MAX_AHEAD_PER_SLOT`. The attempt time is estimated at first (a
scripted model answers at once, a real one takes seconds a turn) and then
measured, from a server being up to its attempt's end. Never more are started
than the attempts still expected, and, for a server whose start is CPU-bound
(`server.starts.parallel_starts`), no more at once than the machine has cores,
since overlapping those only slows each one down.

How an attempt's proxy gets its server: the pool starts the process with its
stdin and stdout on pipes, in a session of its own, its stderr redacted into
the run's server log, and listens on a private unix socket for it. The
agent's capture proxy (`python -m mcpipechekr.capture --attach SOCKET …`)
connects and receives both pipe ends (SCM_RIGHTS) with the process id; from
then on it forwards, journals and stops the server exactly as one it started
itself. The pool keeps the process as its child: it reaps it and sends the
exit status down the socket, which is how the proxy learns how the server
ended. A server nobody took is stopped when the pool closes.

`StartTally` counts the starts of one Phase 1 phase: an attempt whose agent
never had a working server is tried again (`runners.engine`), but a server
that has never started in `STARTS_BEFORE_HALT` tries in a row cannot start
at all, and the phase halts instead of trying every attempt twice.

One pool serves a whole phase: `mcpipechekr run` opens one for its attempts;
doit's trace targets (one attempt each, in threads) share the one the loop
opens around its Phase 1 build (`open_pool` / `current_pool`). Every started
process is noted so that Ctrl-C and a later command after a SIGKILL end it
(`own_group`, `note_started`).
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from mcpipechekr._util.leftover_processes import note_started, note_stopped
from mcpipechekr._util.private_log import RedactingLog
from mcpipechekr._util.project_lock import held_lock_file
from mcpipechekr._util.redact import Redactor
from mcpipechekr._util.stops import own_group, release_group
from mcpipechekr.capture.sockets import socket_folder
from mcpipechekr.config import ServerConfig

MAX_AHEAD_PER_SLOT = 4
"""Most servers waiting per slot: a bound on the processes (and memory) a slow server costs at once."""
STARTS_BEFORE_HALT = 3
"""Failed starts in a row, with none that worked, after which the server is taken to be unable to start."""
_ACCEPT_POLL_S = 0.2


class StartTally:
    """The starts of one phase: whether any worked, and how many failed since the last that did."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.ever_started = False
        self.in_a_row = 0

    def succeeded(self) -> None:
        with self._lock:
            self.ever_started = True
            self.in_a_row = 0

    def failed(self) -> bool:
        """Count a failed start; True when the server has never started and has now failed too often."""
        with self._lock:
            self.in_a_row += 1
            return not self.ever_started and self.in_a_row >= STARTS_BEFORE_HALT


@dataclass
class _Warm:
    """One server started ahead: its process and the socket its proxy attaches through."""

    process: subprocess.Popen[bytes]
    socket_path: Path
    listener: socket.socket
    spawned: float = field(default_factory=time.monotonic)
    taken: float | None = None  # when an attempt took it
    ended: float | None = None  # when its process ended


class WarmPool:
    """Stdio servers started ahead of the attempts; `take()` hands the next one's socket to a proxy.

    The first `take()` starts one server per slot and `ahead_per_slot()` more per slot; each later take,
    and each attempt's end, tops the servers waiting up to that again, never past the attempts still
    expected. `attempt_s` is the first estimate of an attempt's length, until some are measured.
    """

    def __init__(
        self,
        server: ServerConfig,
        *,
        expected: int,
        slots: int,
        attempt_s: float = 10.0,
        parallel_starts: int | None = None,
        start_s: float = 0.0,
        stderr_log: Path | None = None,
        redactor: Redactor | None = None,
        withheld_env: tuple[str, ...] | list[str] = (),
    ):
        command = server.resolved_command()
        if command is None:
            raise ValueError("a warm pool is for stdio servers")
        self.argv = [command, *server.args]
        self.cwd = server.cwd
        env = dict(os.environ)
        for name in withheld_env:
            env.pop(name, None)
        env.update(server.env)
        env.setdefault("PYTHONUNBUFFERED", "1")
        self.env = env
        self.expected = max(0, expected)
        self.slots = max(1, slots)
        self.attempt_s = attempt_s
        self.parallel_starts = parallel_starts
        self.start_s = start_s  # how long a start takes (measured), for counting the starts still under way
        self.tally = StartTally()
        self._folder = socket_folder("mcpw-", name="99999.sock")  # a socket path has ~100 bytes
        self._stderr_log = stderr_log
        self._redactor = redactor or Redactor([])
        self._log: RedactingLog | None = None
        self._lock = threading.Lock()
        self._ready: list[_Warm] = []
        self._all: list[_Warm] = []
        self._closed = False
        self._count = 0
        # Nothing starts before the first attempt asks: the steps before it (the tools snapshot, lint)
        # may stop the phase, and the run folder the log goes to may not exist yet.

    # -- handing out --------------------------------------------------------------------------------

    def take(self) -> Path:
        """The socket of a started server for one attempt's proxy (one is started now if none waits)."""
        with self._lock:
            if self._closed:
                raise RuntimeError("the pool is closed")
            if not self._count:  # the first attempt: the servers of every slot, and those waiting behind
                for _ in range(self._burst()):
                    self._ready.append(self._spawn())
            warm = self._ready.pop(0) if self._ready else self._spawn()
            warm.taken = time.monotonic()
            self.expected = max(0, self.expected - 1)
        self._fill()
        return warm.socket_path

    def ahead_per_slot(self) -> int:
        """Servers waiting per slot: attempts a slot runs while one server starts, from 1 to the maximum."""
        finished = [
            warm.ended - max(warm.taken, warm.spawned + self.start_s)
            for warm in self._all
            if warm.taken is not None and warm.ended is not None
        ]
        attempt_s = sum(finished) / len(finished) if finished else self.attempt_s
        if self.start_s <= 0:
            return 1
        return max(1, min(MAX_AHEAD_PER_SLOT, math.ceil(self.start_s / max(attempt_s, 0.1))))

    def _burst(self) -> int:
        """How many to start for the first attempt: one per slot and those waiting, within the limits."""
        waiting = self.slots * self.ahead_per_slot()
        return max(1, self._within_parallel_starts(min(self.expected, self.slots + waiting)))

    def _wanted(self) -> int:
        """How many more to start now: enough waiting for the attempts to come, no more than they need."""
        waiting = min(self.expected, self.slots * self.ahead_per_slot())
        return self._within_parallel_starts(max(0, waiting - len(self._ready)))

    def _within_parallel_starts(self, wanted: int) -> int:
        """`wanted`, cut to the starts a CPU-bound server may make at once (those under way count)."""
        if self.parallel_starts is None:
            return wanted
        now = time.monotonic()
        starting = sum(
            1 for warm in self._all if warm.process.poll() is None and now - warm.spawned < self.start_s
        )
        return min(wanted, max(0, self.parallel_starts - starting))

    def _fill(self) -> None:
        with self._lock:
            if self._closed:
                return
            for _ in range(self._wanted()):
                self._ready.append(self._spawn())
            if self.parallel_starts is not None and self._wanted() == 0 and self.expected > len(self._ready):
                # CPU-bound starts wait for a core: look again once the ones under way should be done
                timer = threading.Timer(max(0.2, self.start_s / 2), self._fill)
                timer.daemon = True
                timer.start()

    def _spawn(self) -> _Warm:
        """Start one server (the caller holds the lock) and listen for the proxy that will take it."""
        if self._log is None and self._stderr_log is not None:
            self._log = RedactingLog(self._stderr_log, self._redactor).__enter__()
        self._count += 1
        path = self._folder / f"{self._count}.sock"
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(path))
        listener.listen(1)
        listener.settimeout(_ACCEPT_POLL_S)
        try:
            process = subprocess.Popen(
                self.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._log.fileno() if self._log is not None else subprocess.DEVNULL,
                cwd=self.cwd,
                env=self.env,
                start_new_session=True,
            )
        except OSError as exc:
            # The proxy that attaches is told why there is no server: the attempt counts a failed start.
            missing = exc.filename if exc.filename is not None else self.argv[0]
            process = _NotStarted(f"could not start the server: {exc.strerror or exc}: {missing!r}")
        else:
            own_group(process.pid)
            note_started(held_lock_file(), process.pid, "a server started ahead of a Phase 1 attempt")
        warm = _Warm(process, path, listener)  # type: ignore[arg-type]
        self._all.append(warm)
        threading.Thread(target=self._serve, args=(warm,), name="warm-server", daemon=True).start()
        return warm

    def _serve(self, warm: _Warm) -> None:
        """Hand the server's pipes to the proxy that connects, then tell it how the server ended."""
        process = warm.process
        if isinstance(process, _NotStarted):
            connection = self._accept(warm)
            if connection is not None:
                with connection, contextlib.suppress(OSError):
                    connection.sendall(orjson.dumps({"error": process.reason}) + b"\n")
            with contextlib.suppress(OSError):
                warm.listener.close()
            return
        try:
            connection = self._accept(warm)
            if connection is None:
                return
            with connection:
                age = round(time.monotonic() - warm.spawned, 3)
                header = orjson.dumps({"pid": process.pid, "started_s": age}) + b"\n"
                assert process.stdin is not None and process.stdout is not None
                pipes = [process.stdin.fileno(), process.stdout.fileno()]
                socket.send_fds(connection, [header], pipes)
                process.stdin.close()  # the proxy holds them now: the server sees the end of its input
                process.stdout.close()  # when the proxy closes its copy, or dies
                code = process.wait()
                warm.ended = time.monotonic()
                with contextlib.suppress(OSError):
                    connection.sendall(orjson.dumps({"exit": code}) + b"\n")
            self._fill()  # an attempt ended: how long it took says how many should wait
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                warm.listener.close()
            if process.poll() is not None:
                self._forget(process.pid)

    def _accept(self, warm: _Warm) -> socket.socket | None:
        while not self._closed:
            try:
                connection, _ = warm.listener.accept()
            except TimeoutError:
                continue
            connection.settimeout(None)
            return connection
        return None

    def _forget(self, pid: int) -> None:
        release_group(pid)
        note_stopped(held_lock_file(), pid)

    # -- closing ------------------------------------------------------------------------------------

    def close(self) -> None:
        """Stop every server still running (those never taken, and any a proxy left behind)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            started = list(self._all)
        stoppers = [
            threading.Thread(target=_stop, args=(warm.process,), daemon=True)
            for warm in started
            if not isinstance(warm.process, _NotStarted)
        ]
        for thread in stoppers:
            thread.start()
        for thread in stoppers:
            thread.join()
        for warm in started:
            if not isinstance(warm.process, _NotStarted):
                self._forget(warm.process.pid)
            with contextlib.suppress(OSError):
                warm.listener.close()
        if self._log is not None:
            self._log.__exit__(None, None, None)
        shutil.rmtree(self._folder, ignore_errors=True)

    def __enter__(self) -> WarmPool:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class _NotStarted:
    """A server whose process could not even be spawned (its command is missing): attaching says why."""

    def __init__(self, reason: str):
        self.reason = reason
        self.pid = 0

    def poll(self) -> int:
        return 127


def _stop(process: subprocess.Popen[bytes]) -> None:
    """End input, then SIGTERM, then SIGKILL the server's group, each after a short grace."""
    if process.poll() is not None:
        return
    with contextlib.suppress(OSError, ValueError):
        if process.stdin is not None:
            process.stdin.close()
    for sig in (None, signal.SIGTERM, signal.SIGKILL):
        if sig is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, sig)
        try:
            process.wait(timeout=1.0 if sig is None else 3.0)
            return
        except subprocess.TimeoutExpired:
            continue


# -- the pool of the phase in progress --------------------------------------------------------------------

@dataclass
class _Open:
    """A pool open in this process and how many blocks use it."""

    pool: WarmPool
    users: int = 0


_current: dict[tuple[object, ...], _Open] = {}
_current_lock = threading.Lock()


def pool_key(server: ServerConfig) -> tuple[object, ...]:
    return (server.resolved_command(), tuple(server.args), server.cwd, tuple(sorted(server.env.items())))


@contextlib.contextmanager
def open_pool(server: ServerConfig, **options: object) -> Iterator[WarmPool | None]:
    """A pool for the block, found by `current_pool` from any thread of this process; None (no pool) for an
    HTTP server.

    A block that opens a pool for a server whose pool is already open uses that one (the outer one
    serves, with its options). The pool is closed when the last block using it ends, not the first:
    doit's trace targets in threads each open one, and any may end while another still takes servers.
    """
    key = pool_key(server)
    if server.resolved_command() is None:
        yield None
        return
    with _current_lock:
        entry = _current.get(key)
        if entry is None:
            entry = _current[key] = _Open(WarmPool(server, **options))  # type: ignore[arg-type]
        entry.users += 1
    try:
        yield entry.pool
    finally:
        with _current_lock:
            entry.users -= 1
            last = entry.users == 0
            if last:
                del _current[key]
        if last:
            entry.pool.close()


def current_pool(server: ServerConfig) -> WarmPool | None:
    """The pool open for this server in this process, if any."""
    with _current_lock:
        entry = _current.get(pool_key(server))
        return entry.pool if entry is not None else None
