"""The Phase 1 engine: attempts run concurrently in one event loop, each one trace.

`execute.run_phase1` plans the attempts and `execute.execute_attempts` runs
this engine in its process; under doit, each trace's task runs it on its one
attempt. The attempt types
live here so that the progress display can use them without importing
`execute.py`.

`concurrency` slots run the attempts: each slot takes the next attempt in plan
order as soon as it is free, so a slow attempt holds up only its own slot.

Each attempt gets its own journal (`journals/…jsonl`), its own proxied server
(`capture.CaptureHub`), a private scratch folder outside the run (agent
configs and the proxy's secrets live there and are deleted afterwards), and a
runner chosen per provider (one per provider for the whole run, so what it
keeps between attempts, such as the native runner's model and HTTP client, is
built once). When the runner returns, the trace is assembled from its output
and the journal and written to `traces/`, in a worker thread: file work does
not hold up the event loop the attempts and the HTTP proxy share.

Rules, in the order they apply:
- **per attempt**: the runner is given `timeouts.task_s` and a maximum number of
  model requests and reports hitting either as `timeout`/`incomplete`; the
  engine also enforces the timeout itself (with a few seconds' slack for the
  runner to wrap up), so a runner that hangs still ends as `timeout`. Either
  way the trace is written and the run goes on. A runner that fails in an
  unexpected way yields an `error` trace; the run goes on.
- **server failure**: when the journal shows the server died (or could not
  be reached), or the runner raises `ServerHalt`, the attempt is written as
  `incomplete`, every attempt in flight is cancelled and written as
  `incomplete`, nothing new starts, and `ServerHalt` names the task. Traces
  already written stay as they are.
- **Ctrl-C**: the same, with the reason "interrupted by the user", and
  `KeyboardInterrupt` propagates (the harness run records `interrupted`).
- **phase timeout** (`timeouts.phase_s`): attempts in flight are written as
  `incomplete`, the rest are not started; the run ends normally.
- **configuration problems** (`UserError` from a runner: unknown model, no API
  key) stop the run at once: they would fail every attempt alike.

Everything written is redacted with the config's secrets, the values of the
`.env` beside config.yaml and every provider key that is set (`run_redactor`).
The keys an agent CLI is handed from `.env` are withheld from the server under
test behind the capture proxy (`Config.provider_env_from_dotenv`).
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import anyio
import orjson

from mcpipechekr._util.process_group import end_group, process_running
from mcpipechekr._util.tempfiles import own_temp_folder
from mcpipechekr.artifacts._base import utc_now
from mcpipechekr.artifacts.journal import JournalRecord, journal_path, read_journal
from mcpipechekr.artifacts.rundir import RunDir
from mcpipechekr.artifacts.trace import Trace, safe_name, write_trace
from mcpipechekr.capture.calls import journal_tool_calls, server_failure, start_failure
from mcpipechekr.capture.hub import CaptureHub
from mcpipechekr.capture.warm import StartTally, open_pool
from mcpipechekr.config import Config, Redactor
from mcpipechekr.errors import ServerHalt, UserError
from mcpipechekr.providers import ProviderSpec
from mcpipechekr.runners.assemble import assemble_trace
from mcpipechekr.runners.base import AgentServer, Runner, RunnerOutput, RunRequest
from mcpipechekr.server.processes import http_server_started
from mcpipechekr.server.starts import parallel_starts, start_profile, starts_path, with_start_allowance
from mcpipechekr.tasks import Task

DEFAULT_CONCURRENCY = 4
"""Attempts in flight at once: enough to hide API latency, few enough for provider rate limits."""
START_TRIES = 2
"""Tries of an attempt whose agent never had a working server before it is recorded `errored`."""
DEFAULT_MAX_REQUESTS = 50
"""Model requests one attempt may make before it is cut short as `incomplete`."""
TIMEOUT_SLACK_S = 5.0
"""Time a runner gets past `timeouts.task_s` (at most half of it) to report its own timeout before the
engine cancels it."""
JOURNAL_SETTLE_S = 10.0
"""Longest wait for a stdio proxy to finish its journal after the agent let go of it."""
PROXY_GONE_QUIET_S = 0.2
"""How long a journal whose proxy is gone must stay unchanged before the wait for it ends."""

RunnerFor = Callable[[ProviderSpec], Runner]
T = TypeVar("T")
ENDED = ("completed", "error", "timeout", "incomplete", "errored")
"""The states an attempt ends in: `completed`, then the failures."""


@dataclass
class Attempt:
    """One task x provider x repetition, and what became of it."""

    task: Task
    provider: ProviderSpec
    repetition: int
    state: str = "pending"  # pending, running, completed, or the trace status that ended it
    trace: Path | None = None
    tokens: int = 0

    @property
    def label(self) -> str:
        return f"{self.task.task_id} · {self.provider} · r{self.repetition}"


@dataclass
class Phase1State:
    """What the progress display shows, and why the run stopped early (if it did)."""

    attempts: list[Attempt]
    stop_reason: str | None = None
    halt: ServerHalt | None = None
    started: float = field(default_factory=time.monotonic)

    def count(self, *states: str) -> int:
        return sum(1 for attempt in self.attempts if attempt.state in states)

    @property
    def tokens(self) -> int:
        return sum(attempt.tokens for attempt in self.attempts)

    def summary(self) -> str:
        done = self.count(*ENDED)
        failed = self.count(*ENDED[1:])
        return (
            f"{done}/{len(self.attempts)} done, {self.count('running')} running, {failed} failed, "
            f"{self.tokens:,} tokens, {time.monotonic() - self.started:.0f}s"
        )


def redaction_pairs(config: Config) -> list[tuple[str, str]]:
    """Secret values and their replacements: the config's own, every `.env` value and every provider key.

    Keys are covered whichever provider an attempt uses and wherever the key was
    found (the process environment or `.env`): a provider may echo any of them
    in an error, and an agent CLI is handed all that are set.
    """
    return config.secret_pairs()


def run_redactor(config: Config) -> Redactor:
    """The redactor every Phase 1 artifact goes through (see `redaction_pairs`)."""
    return Redactor(redaction_pairs(config))


def _journal_settled(path: Path) -> bool:
    """True once the journal's last record is `proxy_stopped`: the proxy wrote everything it will."""
    try:
        with open(path, "rb") as handle:
            handle.seek(max(0, os.path.getsize(path) - 256))
            tail = handle.read()
    except FileNotFoundError:
        return True  # never opened: the agent never started the proxy
    return tail.endswith(b"\n") and b'"proxy_stopped"' in tail.rsplit(b"\n", 2)[-2]


def _proxy_pid(path: Path) -> int | None:
    """The stdio proxy's process id, from the journal's `proxy_started` record; None if it has none."""
    try:
        with open(path, "rb") as handle:
            first = handle.readline(4096)
        record = orjson.loads(first)
    except (OSError, orjson.JSONDecodeError):
        return None
    pid = record.get("pid") if isinstance(record, dict) and record.get("event") == "proxy_started" else None
    return pid if isinstance(pid, int) and not isinstance(pid, bool) and pid > 0 else None


def orphaned_server(records: Sequence[JournalRecord]) -> int | None:
    """The process group of a stdio server whose proxy was killed before it could stop it.

    The proxy starts the server in a session of its own (its pid is the group's
    id, in `server_started`) and stops it when the agent lets go. An agent that
    kills the proxy outright (Claude Code, at its own exit, when the proxy takes
    long to stop) leaves the server with its input closed: most servers exit
    then, one that does not would be left running after the run.
    """
    events = [record for record in records if record.kind == "event"]
    if any(record.event in ("proxy_stopped", "server_exited") for record in events):
        return None
    started = [record.pid for record in events if record.event == "server_started" and record.pid]
    return started[-1] if started else None


async def _settle(path: Path, timeout_s: float) -> None:
    """Wait until the proxy has finished the journal, for at most `timeout_s`.

    A proxy killed before it finished (an agent CLI may SIGKILL the proxy it
    launched while the proxy is still stopping the server) will write nothing
    more: once its process is gone and the journal has not grown for
    `PROXY_GONE_QUIET_S`, the wait ends without running out the time.
    """
    deadline = time.monotonic() + timeout_s
    pid: int | None = None
    size, quiet_since = -1, time.monotonic()
    while not _journal_settled(path) and time.monotonic() < deadline:
        pid = pid or _proxy_pid(path)
        if pid is not None and not process_running(pid):
            try:
                now_size = os.path.getsize(path)
            except OSError:
                return
            if now_size != size:
                size, quiet_since = now_size, time.monotonic()
            elif time.monotonic() - quiet_since >= PROXY_GONE_QUIET_S:
                return
        await anyio.sleep(0.01)


class _Engine:
    def __init__(
        self,
        config: Config,
        run_dir: RunDir | Path,
        runner_for: RunnerFor,
        hub: CaptureHub,
        redactor: Redactor,
        state: Phase1State,
        max_requests: int,
        on_change: Callable[[Attempt | None], None],
    ):
        self.config = config
        self.run_dir = run_dir if isinstance(run_dir, RunDir) else RunDir(Path(run_dir))
        self.runner_for = runner_for
        self.hub = hub
        self.redactor = redactor
        self.state = state
        self.max_requests = max_requests
        self.on_change = on_change
        self.runners: dict[str, Runner] = {}
        self.starts = StartTally()  # the phase's: the pool's when there is one

    def runner(self, provider: ProviderSpec) -> Runner:
        """The provider's runner, one for the whole run, so what it keeps (a model's client) is shared."""
        key = str(provider)
        if key not in self.runners:
            self.runners[key] = self.runner_for(provider)
        return self.runners[key]

    async def close_runners(self) -> None:
        """Let each runner release what it kept between attempts (its optional `aclose`)."""
        with anyio.CancelScope(shield=True):
            for runner in self.runners.values():
                close = getattr(runner, "aclose", None)
                if close is None:
                    continue
                with anyio.move_on_after(5):
                    try:
                        await close()
                    except Exception:  # the traces are written; a client that fails to close changes nothing
                        pass

    def _halt(self, message: str, tg: anyio.abc.TaskGroup) -> None:
        if self.state.halt is None:
            self.state.halt = ServerHalt(message)
            self.state.stop_reason = f"the run halted: {message.splitlines()[0]}"
        tg.cancel_scope.cancel()

    async def slot(self, pending: Iterator[Attempt], tg: anyio.abc.TaskGroup) -> None:
        """One of `concurrency` slots: runs pending attempts one after another until none are left."""
        while self.state.halt is None and (attempt := next(pending, None)) is not None:
            attempt.state = "running"
            self.on_change(None)
            halt_message = await self._run(attempt)
            if halt_message is not None:  # before the change is reported, so a listener sees the halt
                self._halt(halt_message, tg)
            self.on_change(attempt)

    async def _run(self, attempt: Attempt) -> str | None:
        """Run one attempt and write its trace; returns a halt message if the server failed.

        A try whose agent never had a working server (`capture.calls.start_failure`) is tried again,
        once; a second such try writes the attempt `errored`, unless no server of this kind has started
        yet and `STARTS_BEFORE_HALT` starts in a row failed: then the server cannot start at all, and
        the run halts as for any server failure.
        """
        failed_starts: list[str] = []
        while True:
            halt, start = await self._try(attempt, failed_starts)
            if start is None:
                self.starts.succeeded()
                return halt
            failed_starts.append(start)
            if self.starts.failed():
                return (
                    f"the server under test did not start in {self.starts.in_a_row} tries in a row "
                    f"(task '{attempt.task.task_id}'): {start}\n  server stderr: "
                    f"{self.run_dir.server_stderr_log}"
                )
            if len(failed_starts) >= START_TRIES:
                return None

    async def _try(self, attempt: Attempt, failed_starts: list[str]) -> tuple[str | None, str | None]:
        """One try of an attempt: (halt message, why the server did not start).

        The trace is written unless the server did not start and another try is due.
        """
        config, task = self.config, attempt.task
        journal = journal_path(self.run_dir, task.task_id, str(attempt.provider), attempt.repetition)
        journal.parent.mkdir(parents=True, exist_ok=True)
        journal.unlink(missing_ok=True)
        workdir = own_temp_folder(safe_name(task.task_id)[:40])
        server = self.hub.agent_server(journal, config.server.name, secrets_dir=workdir)
        request = RunRequest(
            task=task,
            prompt=task.prompt,
            provider=attempt.provider,
            repetition=attempt.repetition,
            server=server,
            journal=journal,
            workdir=workdir,
            config=config,
            timeout_s=config.timeouts.task_s,
            max_requests=self.max_requests,
        )
        started = utc_now()
        runner: Runner | None = None
        output: RunnerOutput
        halt: str | None = None
        try:
            runner = self.runner(attempt.provider)
            with anyio.fail_after(config.timeouts.task_s + min(TIMEOUT_SLACK_S, config.timeouts.task_s / 2)):
                output = await runner.run(request)
        except TimeoutError:
            output = RunnerOutput(
                status="timeout",
                status_reason=f"the attempt ran past timeouts.task_s ({config.timeouts.task_s:g} s)",
            )
        except ServerHalt as exc:
            partial = getattr(exc, "partial", None)
            output = partial if isinstance(partial, RunnerOutput) else RunnerOutput(status="incomplete")
            output.status = "incomplete"
            output.status_reason = output.status_reason or _first_line(exc.message)
            halt = exc.message
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                await _settle(journal, 2.0)
                reason = self.state.stop_reason or "interrupted by the user (Ctrl-C)"
                output = RunnerOutput(status="incomplete", status_reason=reason)
                cut = functools.partial(self._write, cut_by_harness=True)
                await anyio.to_thread.run_sync(cut, attempt, request, output, runner, started)
                await self._cleanup(server, workdir)
            raise
        except UserError as exc:
            self.state.stop_reason = self.state.stop_reason or f"the run stopped: {_first_line(exc.message)}"
            with anyio.CancelScope(shield=True):
                await self._cleanup(server, workdir)
            raise
        except Exception as exc:  # a runner bug must not sink the other attempts
            output = RunnerOutput(status="error", status_reason=f"the runner failed: {_innermost(exc)}")
        # The attempt is over: its trace is written whatever is cancelled meanwhile. File work (the
        # journal, the trace's fsync, the scratch folder) runs in a worker thread, not on the event loop
        # the other attempts share.
        with anyio.CancelScope(shield=True):
            await _settle(journal, JOURNAL_SETTLE_S if server.transport == "stdio" else 0)
            self.hub.release(server)
            records = await anyio.to_thread.run_sync(read_journal, journal)
            orphan = orphaned_server(records)
            if orphan is not None:  # ended if it still runs
                await anyio.to_thread.run_sync(end_group, orphan)
            start = start_failure(records)
            if start is not None:
                start = self._within_start_allowance(start)
                if len(failed_starts) + 1 < START_TRIES:
                    await self._cleanup(server, workdir)  # tried again: this try leaves no trace
                    return None, start
                output.status = "errored"
                tries = [*failed_starts, start]
                output.status_reason = (
                    f"the agent never had a working server ({len(tries)} tries): {'; '.join(tries)}"
                )
                halt = None
            else:
                failure = server_failure(records)
                if failure is not None and halt is None:
                    output.status = "incomplete"
                    output.status_reason = f"the server failed: {failure}"
                    halt = failure
            written = [*failed_starts, start] if start is not None else failed_starts
            await anyio.to_thread.run_sync(
                functools.partial(self._write, failed_starts=written),
                attempt,
                request,
                output,
                runner,
                started,
                records,
            )
            await self._cleanup(server, workdir)
        if halt is None:
            return None, start
        return (
            f"the server under test failed during task '{task.task_id}' ({attempt.provider}, repetition "
            f"{attempt.repetition}): {_first_line(halt)}\n  journal: {journal}\n  server stderr: "
            f"{self.run_dir.server_stderr_log}"
        ), None

    def _within_start_allowance(self, reason: str) -> str:
        """The start failure's reason, naming the setting that bounds a start when the client gave up."""
        if "answered no request before" not in reason:
            return reason
        allowed = self.config.server.health.timeout_s
        return f"{reason} (server.health.timeout_s allows {allowed:g} s to start: raise it in config.yaml)"

    def _write(
        self,
        attempt: Attempt,
        request: RunRequest,
        output: RunnerOutput,
        runner: Runner | None,
        started: object,
        records: list[JournalRecord] | None = None,
        *,
        failed_starts: Sequence[str] = (),
        cut_by_harness: bool = False,
    ) -> None:
        if records is None:
            records = read_journal(request.journal)
        trace: Trace = assemble_trace(
            request,
            output,
            journal_tool_calls(records),
            runner=runner.name if runner is not None else None,
            redactor=self.redactor,
            started_at=started,  # type: ignore[arg-type]
            ended_at=utc_now(),
        )
        if failed_starts:
            trace.failed_starts = [self.redactor.redact(reason) for reason in failed_starts]
        trace.cut_by_harness = cut_by_harness
        attempt.trace = write_trace(self.run_dir, trace)
        attempt.state = trace.status
        attempt.tokens = trace.totals.total_tokens

    async def _cleanup(self, server: AgentServer, workdir: Path) -> None:
        self.hub.release(server)
        await anyio.to_thread.run_sync(functools.partial(shutil.rmtree, workdir, ignore_errors=True))


def _innermost(exc: BaseException) -> str:
    """`Type: message` of what went wrong, out of the task groups it was raised through."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}"


def _user_error_in(group: BaseExceptionGroup) -> BaseException:
    """What a task group's failure means to the user: a UserError (bad config, no API key) as itself."""
    for exc in group.exceptions:
        found = _user_error_in(exc) if isinstance(exc, BaseExceptionGroup) else exc
        if isinstance(found, UserError):
            return found
    return group


def _first_line(text: str) -> str:
    return (text.strip().splitlines() or [""])[0]


SCRIPTED_ATTEMPT_S = 1.0
"""A first estimate of an attempt's length with the scripted demo model, which answers at once."""
MODEL_ATTEMPT_S = 10.0
"""A first estimate with a real model: a few turns of 1-3 s each."""


def pool_options(config: Config, expected: int, slots: int, stderr_log: Path) -> dict[str, Any]:
    """How a Phase 1 pool of servers started ahead is sized for this server (see `capture.warm`)."""
    profile = start_profile(starts_path(config), config.server)
    return {
        "expected": expected,
        "slots": slots,
        "attempt_s": SCRIPTED_ATTEMPT_S if config.providers.phase1.is_demo else MODEL_ATTEMPT_S,
        "parallel_starts": parallel_starts(config),
        "start_s": profile.wall_s if profile is not None else 0.0,
        "stderr_log": stderr_log,
        "redactor": config.redactor,
        "withheld_env": config.provider_env_from_dotenv(),
    }


@contextlib.asynccontextmanager
async def _closing_in_thread(cm: contextlib.AbstractContextManager[T]) -> AsyncIterator[T]:
    """A blocking context manager (the pool: closing it stops servers) entered here, left in a worker
    thread so that stopping its servers does not hold up the event loop."""
    value = cm.__enter__()
    try:
        yield value
    except BaseException as exc:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(cm.__exit__, type(exc), exc, exc.__traceback__)
        raise
    else:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(cm.__exit__, None, None, None)


def plan_attempts(tasks: Sequence[Task], providers: Sequence[ProviderSpec], repeat: int) -> list[Attempt]:
    """Every attempt of the run, in the order they start: by task, then provider, then repetition."""
    if repeat < 1:
        raise UserError(f"repeat must be >= 1, got {repeat}")
    if not providers:
        raise UserError("no Phase 1 provider: set providers.phase1 or pass --phase1-provider")
    return [
        Attempt(task, provider, repetition)
        for task in tasks
        for provider in providers
        for repetition in range(1, repeat + 1)
    ]


async def run_attempts(
    config: Config,
    run_dir: RunDir | Path,
    attempts: list[Attempt],
    runner_for: RunnerFor,
    *,
    concurrency: int = DEFAULT_CONCURRENCY,
    max_requests: int = DEFAULT_MAX_REQUESTS,
    on_change: Callable[[Phase1State, Attempt | None], None] | None = None,
) -> Phase1State:
    """The async core of `execute.execute_attempts`, for callers that already run an event loop.

    `on_change(state, attempt)` is called when an attempt starts (`attempt`
    None) and when it ends (the attempt). Raises ServerHalt as the module doc
    says; cancellation (Ctrl-C) writes the attempts in flight as `incomplete`.
    """
    if concurrency < 1:
        raise UserError(f"concurrency must be >= 1, got {concurrency}")
    pairs = redaction_pairs(config)
    state = Phase1State(attempts)
    root = run_dir.root if isinstance(run_dir, RunDir) else Path(run_dir)
    notify = (lambda attempt: on_change(state, attempt)) if on_change else (lambda attempt: None)
    pending = iter(attempts)
    stderr_log = root / "server.stderr.log"
    # Agents' clients and the HTTP server's start get as long as a start of this server may take.
    config = config.model_copy(update={"server": with_start_allowance(config)})
    # An HTTP server with a `start` command runs for the whole phase (stdio servers start per attempt,
    # behind each attempt's proxy, from a pool started ahead): `mcpipechekr run` and doit's trace
    # targets both come through here; the loop's Phase 1 opens the pool its targets share.
    pool_cm = open_pool(config.server, **pool_options(config, len(attempts), concurrency, stderr_log))
    async with (
        _closing_in_thread(pool_cm) as pool,
        http_server_started(config.server, stderr_log, config.redactor),
        CaptureHub(
            config.server,
            redactions=pairs,
            stderr_log=stderr_log,
            withheld_env=config.provider_env_from_dotenv(),
            pool=pool,
        ) as hub,
    ):
        engine = _Engine(config, run_dir, runner_for, hub, Redactor(pairs), state, max_requests, notify)
        engine.starts = pool.tally if pool is not None else StartTally()
        try:
            async with anyio.create_task_group() as outer:
                async with anyio.create_task_group() as tg:

                    async def phase_watchdog() -> None:
                        await anyio.sleep(config.timeouts.phase_s)
                        state.stop_reason = (
                            state.stop_reason
                            or f"the phase ran past timeouts.phase_s ({config.timeouts.phase_s:g} s)"
                        )
                        tg.cancel_scope.cancel()

                    outer.start_soon(phase_watchdog)
                    for _ in range(min(concurrency, len(attempts))):
                        tg.start_soon(engine.slot, pending, tg)
                outer.cancel_scope.cancel()  # every attempt is over: the watchdog has nothing left to guard
        except BaseExceptionGroup as group:
            raise _user_error_in(group) from None
        finally:
            await engine.close_runners()
    if state.halt is not None:
        raise state.halt
    return state
