"""Phase 1 across worker processes: one run's attempts shared by several forked interpreters.

Why: every attempt costs its process tens of milliseconds of CPU in the agent
stack (pydantic-ai, the provider's SDK and HTTP client, the MCP client session,
the capture proxy, the trace), all under one GIL. In one process a run of many
short attempts is bound by one core however high `--concurrency` is; spread
over workers it uses the machine's cores, and the wait for the model is again
what sets the wall time (bench/phase1_concurrency.py).

How:
- `WorkerPool` forks the workers. Fork, because each then has the imported
  agent stack and the run's objects (the runner factory, often a closure) at
  no cost; a spawned interpreter would import them again, about 1.5 s each.
  Each worker runs `run_attempts` with its share of the slots, its own event
  loop, capture hub and runners. They take attempts from one shared counter,
  in plan order, so a slow task holds up only its own slot.
- Workers report each attempt that starts or ends over a pipe; the parent keeps
  the run's `Phase1State` (the progress display reads it) and returns it.
- Stopping is the parent's job; workers let SIGINT pass. On Ctrl-C, a server
  halt reported by one worker, or a worker that fails or dies, the parent takes
  the remaining attempts away (nothing new starts) and tells the others why;
  they write their attempts in flight as `incomplete` with that reason, as a
  single process does. A worker whose parent went away stops the same way.
- Only on Linux, where fork is the platform's own default; elsewhere, and for a
  run of one attempt or one slot, Phase 1 runs in its caller's process.
"""

from __future__ import annotations

import contextlib
import functools
import multiprocessing
import os
import signal
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

import anyio

from mcpipechekr.artifacts.rundir import RunDir
from mcpipechekr.config import Config
from mcpipechekr.errors import ServerHalt, UserError
from mcpipechekr.runners.engine import Attempt, Phase1State, RunnerFor, run_attempts

INTERRUPTED = "interrupted by the user (Ctrl-C)"
PARENT_GONE = "the run stopped: its main process went away"
JOIN_TIMEOUT_S = 10.0
"""How long a worker that closed its pipe gets to exit before it is reported by its exit code."""


def can_fork() -> bool:
    return sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods()


def worker_count(concurrency: int, attempts: int, requested: int | None = None) -> int:
    """Workers for a run: `requested`, else one per usable CPU; never more than its slots or attempts,
    and 1 where fork is not safe."""
    if not can_fork():
        return 1
    cpus = len(os.sched_getaffinity(0)) if requested is None else requested
    return max(1, min(cpus, concurrency, attempts))


class WorkerLost(UserError):
    """A worker ended without saying so (killed, out of memory): its attempts in flight have no trace."""


@dataclass
class _Worker:
    process: Any
    conn: Connection
    running: set[int] = field(default_factory=set)
    done: bool = False


def _first_line(text: str) -> str:
    return (text.strip().splitlines() or [""])[0]


def _exit_description(code: int | None) -> str:
    if code is None:
        return "did not exit"
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


class WorkerPool:
    """The workers of one Phase 1 run: forked on entry; `run` collects their reports until all have ended.

    Leaving the `with` block on an error (Ctrl-C included) stops and reaps every
    worker, so none outlives the run.
    """

    def __init__(
        self,
        config: Config,
        run_dir: RunDir | Path,
        attempts: list[Attempt],
        runner_for: RunnerFor,
        *,
        workers: int,
        concurrency: int,
        max_requests: int,
    ):
        self.config = config
        self.run_dir = run_dir
        self.attempts = attempts
        self.runner_for = runner_for
        self.count = workers
        self.concurrency = concurrency
        self.max_requests = max_requests
        self.context = multiprocessing.get_context("fork")
        self.counter = self.context.Value("q", 0)
        self.workers: list[_Worker] = []
        self.state = Phase1State(attempts)
        self.stopping = False
        self.interrupted = False
        self.abandoned = False
        self.failure: BaseException | None = None

    def __enter__(self) -> WorkerPool:
        started = time.monotonic()
        try:
            for number in range(self.count):
                slots = self.concurrency // self.count + (1 if number < self.concurrency % self.count else 0)
                ours, theirs = self.context.Pipe()
                inherited = [worker.conn for worker in self.workers] + [ours]  # the parent's ends
                process = self.context.Process(
                    target=_worker_main,
                    name=f"mcpipechekr-phase1-{number + 1}",
                    args=(theirs, inherited, self, slots, started),
                    daemon=True,  # terminated should the parent exit without reaping it
                )
                process.start()
                theirs.close()
                self.workers.append(_Worker(process, ours))
        except BaseException:
            self.__exit__(*sys.exc_info())
            raise
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        pending = any(not worker.done for worker in self.workers)
        again = self.abandoned  # a second Ctrl-C: leave now
        if pending and exc_type is not None and not again:
            self.stop(INTERRUPTED if exc_type is KeyboardInterrupt else "the run stopped")
            with contextlib.suppress(KeyboardInterrupt):
                self._collect(lambda state, attempt: None)
        for worker in self.workers:
            worker.process.join(timeout=0 if again else JOIN_TIMEOUT_S)
            if worker.process.is_alive():
                worker.process.kill()
                worker.process.join()
            worker.conn.close()

    def claim(self) -> int | None:
        """The next attempt to run, or None when there are none left (or the run is stopping)."""
        with self.counter.get_lock():
            index = self.counter.value
            if index >= len(self.attempts):
                return None
            self.counter.value = index + 1
            return index

    def stop(self, reason: str) -> None:
        """Nothing new starts; every worker still running writes its attempts in flight with `reason`."""
        with self.counter.get_lock():
            self.counter.value = len(self.attempts)
        if self.stopping:
            return
        self.stopping = True
        self.state.stop_reason = self.state.stop_reason or reason
        for worker in self.workers:
            if not worker.done:
                try:
                    worker.conn.send(("stop", self.state.stop_reason))
                except OSError:  # it has just ended; its EOF is handled in turn
                    pass

    def run(self, on_change: Callable[[Phase1State, Attempt | None], None] | None = None) -> Phase1State:
        """Wait for every worker, passing on what they report; raise as a single process would."""
        notify = on_change or (lambda state, attempt: None)
        try:
            self._collect(notify)
        except KeyboardInterrupt:
            self.interrupted = True
            self.stop(INTERRUPTED)
            try:
                self._collect(notify)
            except KeyboardInterrupt:  # a second Ctrl-C: __exit__ kills what is left
                self.abandoned = True
                raise
        if self.failure is not None:
            raise self.failure
        if self.interrupted:
            raise KeyboardInterrupt
        if self.state.halt is not None:
            raise self.state.halt
        return self.state

    def _collect(self, notify: Callable[[Phase1State, Attempt | None], None]) -> None:
        while live := {worker.conn: worker for worker in self.workers if not worker.done}:
            for conn in wait(list(live)):
                worker = live[conn]  # type: ignore[index]
                try:
                    message = conn.recv()  # type: ignore[union-attr]
                except EOFError:
                    self._ended(worker)
                    continue
                self._handle(worker, message, notify)

    def _handle(self, worker: _Worker, message: tuple[Any, ...], notify: Callable[..., None]) -> None:
        kind = message[0]
        if kind == "running":
            index = message[1]
            worker.running.add(index)
            self.attempts[index].state = "running"
            notify(self.state, None)
        elif kind == "finished":
            _, index, status, trace, tokens = message
            worker.running.discard(index)
            attempt = self.attempts[index]
            attempt.state, attempt.trace, attempt.tokens = status, Path(trace) if trace else None, tokens
            notify(self.state, attempt)
        elif kind == "interrupted":  # Ctrl-C reached a worker: the run is interrupted, as if it reached us
            self.interrupted = True
            self.stop(INTERRUPTED)
        elif kind == "halt":
            _, halt_message, reason = message
            if self.state.halt is None:
                self.state.halt = ServerHalt(halt_message)
            self.stop(reason or f"the run halted: {_first_line(halt_message)}")
        elif kind == "done":
            _, outcome, detail = message
            worker.done = True
            if outcome == "user_error":
                self.failure = self.failure or detail
                self.stop(f"the run stopped: {_first_line(detail.message)}")
            elif outcome == "error":
                self.failure = self.failure or RuntimeError(f"a Phase 1 worker process failed:\n{detail}")
                self.stop("the run stopped: a Phase 1 worker process failed")

    def _ended(self, worker: _Worker) -> None:
        """Its pipe closed without a word: the worker died; what it was running has no trace."""
        worker.done = True
        worker.process.join(timeout=JOIN_TIMEOUT_S)
        labels = ", ".join(self.attempts[index].label for index in sorted(worker.running))
        how = _exit_description(worker.process.exitcode)
        lost = WorkerLost(
            f"a Phase 1 worker process (pid {worker.process.pid}) {how}"
            + (f" while running {labels}; those attempts have no trace" if labels else "")
            + ". The traces already written are kept; run again to redo the rest."
        )
        for index in worker.running:
            self.attempts[index].state = "incomplete"
        worker.running.clear()
        self.failure = self.failure or lost
        self.stop(f"the run stopped: {_first_line(lost.message)}")


def _ignore(signum: int, frame: object) -> None:
    pass


def _worker_main(
    conn: Connection, inherited: list[Connection], pool: WorkerPool, slots: int, started: float
) -> None:
    """A worker's life: run attempts until none are left, report each, then say how it ended."""
    # The parent decides when to stop (see the module doc). A handler, not SIG_IGN: dispositions set to
    # SIG_IGN survive exec, and the agents and servers this worker starts should take Ctrl-C as usual.
    signal.signal(signal.SIGINT, _ignore)
    for other in inherited:  # the parent's ends of the pipes, its own included: kept open, they would hide
        # the parent's death (no EOF) from this worker
        other.close()
    halted = False
    positions = {id(attempt): index for index, attempt in enumerate(pool.attempts)}

    def claim() -> int | None:
        index = pool.claim()
        if index is not None:
            conn.send(("running", index))
        return index

    def on_change(state: Phase1State, attempt: Attempt | None) -> None:
        nonlocal halted
        if state.halt is not None and not halted:
            halted = True
            conn.send(("halt", state.halt.message, state.stop_reason))
        if attempt is not None:
            index = positions[id(attempt)]
            trace = str(attempt.trace) if attempt.trace is not None else None
            conn.send(("finished", index, attempt.state, trace, attempt.tokens))

    async def from_parent() -> str:
        while True:
            await anyio.wait_readable(conn.fileno())
            try:
                message = conn.recv()
            except EOFError:
                return PARENT_GONE
            if message[0] == "stop":
                return str(message[1])

    async def from_terminal() -> str:
        """Ctrl-C at a terminal signals the whole process group, this worker included: it stops at once,
        without waiting for the parent's word, and tells the parent (which may not have been signalled)."""
        try:
            with anyio.open_signal_receiver(signal.SIGINT) as received:
                async for _ in received:
                    conn.send(("interrupted",))
                    return INTERRUPTED
        finally:  # deaf again once stopping: a second Ctrl-C is the parent's to act on
            signal.signal(signal.SIGINT, _ignore)
        return INTERRUPTED

    async def stop_signal() -> str:
        reasons: list[str] = []
        async with anyio.create_task_group() as tg:

            async def first(source: Callable[[], Any]) -> None:
                reasons.append(await source())
                tg.cancel_scope.cancel()

            tg.start_soon(first, from_parent)
            tg.start_soon(first, from_terminal)
        return reasons[0]

    phase_s = max(0.0, pool.config.timeouts.phase_s - (time.monotonic() - started))
    try:
        anyio.run(
            functools.partial(
                run_attempts,
                pool.config,
                pool.run_dir,
                pool.attempts,
                pool.runner_for,
                concurrency=slots,
                max_requests=pool.max_requests,
                on_change=on_change,
                claim=claim,
                stop_signal=stop_signal,
                phase_s=phase_s,
            )
        )
        outcome: tuple[Any, ...] = ("done", "ok", None)
    except (ServerHalt, KeyboardInterrupt):  # a halt was reported as it happened; Ctrl-C is the parent's
        outcome = ("done", "ok", None)
    except UserError as exc:
        outcome = ("done", "user_error", exc)
    except BaseException:
        outcome = ("done", "error", traceback.format_exc())
    try:
        conn.send(outcome)
    except OSError:  # the parent is gone: nobody to tell
        pass
    except Exception:  # an error that does not pickle: its message and exit code do
        if outcome[1] == "user_error":
            plain = UserError(outcome[2].message)
            plain.exit_code = outcome[2].exit_code
            conn.send(("done", "user_error", plain))
        else:
            conn.send(("done", "error", f"{outcome[2]!r} (as text: it could not be sent as it was)"))
    conn.close()
