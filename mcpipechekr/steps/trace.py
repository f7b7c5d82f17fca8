"""Phase 1, `trace`: agents run tasks blind against the server; each attempt becomes a trace.

One code path for every front end and every runner: doit's `trace:<task>__<model>__rNNN`
target runs its one attempt, `mcpipechekr run` all of them (tasks x providers x
repetitions, `--concurrency` at once), both through the Phase 1 engine
(`runners.execute.execute_attempts`). Each attempt's capture journal is handed to
the findings home as soon as that attempt is finished, so the evidence of a
long run is there before the run ends; attempts cut short by a server halt or
Ctrl-C are handed over when the step ends, whichever way it ends.

An interrupted run is resumed, not redone: with `resume`, an attempt whose
trace is on disk and ended on its own, for the task's prompt as it is now, is
not run again (`already_traced`), so a run killed half-way pays the model
only for the attempts it lacks. doit needs this: a process killed outright
never saved which targets it built. The journals of the attempts kept are
handed over then, unless they were already (`handoff.record_call_evidence`
hands each journal over once): a process killed after an attempt's trace was
written and before its hand-over would otherwise lose that attempt's records
for good.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from rich.console import Console

from mcpipechekr._util.console import console
from mcpipechekr._util.yamlsrc import display_path
from mcpipechekr.artifacts import RunDir
from mcpipechekr.artifacts.journal import journal_path
from mcpipechekr.artifacts.runstate import is_traced
from mcpipechekr.artifacts.trace import read_trace, trace_path
from mcpipechekr.config import Config
from mcpipechekr.runners.engine import DEFAULT_CONCURRENCY, Attempt
from mcpipechekr.runners.execute import execute_attempts
from mcpipechekr.runners.kept import kept_runner_for
from mcpipechekr.runners.registry import DEFAULT_OPENCODE_MODE, DEFAULT_RUNNER
from mcpipechekr.steps.handoff import record_call_evidence
from mcpipechekr.steps.stage import run_stage


def attempt_journal(run_dir: RunDir, attempt: Attempt) -> Path:
    """Where the capture proxy journals one attempt's MCP messages."""
    return journal_path(run_dir, attempt.task.task_id, str(attempt.provider), attempt.repetition)


def attempt_trace(run_dir: RunDir, attempt: Attempt) -> Path:
    """Where one attempt's trace goes."""
    return trace_path(run_dir, attempt.task.task_id, str(attempt.provider), attempt.repetition)


def already_traced(run_dir: RunDir, attempt: Attempt) -> bool:
    """True when the attempt's trace is on disk and ended on its own, for the task's prompt as it is now.

    The prompt is compared so that a task edited since (which doit re-traces) is traced again.
    """
    path = attempt_trace(run_dir, attempt)
    return is_traced(path) and read_trace(path).prompt == attempt.task.prompt


def pending_attempts(run_dir: RunDir, attempts: Sequence[Attempt]) -> int:
    """How many of `attempts` lack a finished trace: those a resumed Phase 1 will run."""
    return sum(1 for attempt in attempts if not already_traced(run_dir, attempt))


@contextmanager
def phase1_pool(config: Config, run_dir: RunDir, expected: int, concurrency: int) -> Iterator[None]:
    """Servers started ahead for the block's Phase 1 (`capture.warm`), shared by every trace in this process:
    doit's trace targets each run one attempt, in threads, and find the pool the loop opened here."""
    from mcpipechekr.capture.warm import open_pool
    from mcpipechekr.runners.engine import pool_options
    from mcpipechekr.server.starts import with_start_allowance

    server = with_start_allowance(config)
    config = config.model_copy(update={"server": server})
    with open_pool(server, **pool_options(config, expected, concurrency, run_dir.server_stderr_log)):
        yield


def trace_step(
    config: Config,
    run_dir: RunDir,
    attempts: Sequence[Attempt],
    *,
    concurrency: int = DEFAULT_CONCURRENCY,
    runner: str = DEFAULT_RUNNER,
    keep_builtin_tools: bool = False,
    opencode_mode: str = DEFAULT_OPENCODE_MODE,
    max_requests: int | None = None,
    progress: bool = False,
    resume: bool = False,
    keep_runners: bool = False,
    out: Console = console,
) -> list[Path]:
    """Run `attempts` → traces/ and journals/ of `run_dir`; returns the traces written, in plan order.

    `progress` shows the engine's display on stderr (a line per finished
    attempt, and a status line on a terminal); without it, each finished
    attempt's line goes to `out`. Raises ServerHalt when the server fails and
    KeyboardInterrupt on Ctrl-C, with the run's manifest recording either.
    `resume` leaves out the attempts already traced (see the module docstring).
    `keep_runners` keeps a runner that holds an agent server (opencode's)
    for the next call in this process (`runners/kept.py`): doit's targets.
    """
    if resume:
        done = [one for one in attempts if already_traced(run_dir, one)]
        for attempt in done:
            out.print(
                f"trace {attempt.label}: already traced → {display_path(attempt_trace(run_dir, attempt))}",
                markup=False,
            )
        # A process killed between an attempt's trace and its hand-over left records the home lacks.
        record_call_evidence(config, run_dir, [attempt_journal(run_dir, one) for one in done])
        attempts = [one for one in attempts if one not in done]
    if not attempts:  # all traced already, or a shard the hash gave no attempt
        return []
    handed: set[Path] = set()

    def finished(attempt: Attempt) -> None:
        journal = attempt_journal(run_dir, attempt)
        record_call_evidence(config, run_dir, [journal])
        handed.add(journal)
        if not progress:
            where = display_path(attempt.trace) if attempt.trace else "no trace"
            out.print(
                f"trace {attempt.label}: {attempt.state}, {attempt.tokens:,} tokens → {where}", markup=False
            )

    flags = {"keep_builtin_tools": keep_builtin_tools, "opencode_mode": opencode_mode}
    runner_for = kept_runner_for(config, runner, **flags) if keep_runners else None
    step = f"trace {attempts[0].label}" if len(attempts) == 1 else "trace"
    with run_stage(config, run_dir, step):
        try:
            return execute_attempts(
                config,
                run_dir,
                attempts,
                concurrency=concurrency,
                runner_for=runner_for,
                runner=runner,
                **flags,
                max_requests=max_requests,
                progress=progress,
                on_attempt=finished,
            )
        finally:  # attempts cancelled by a halt or Ctrl-C still journaled what they did
            started = [attempt_journal(run_dir, one) for one in attempts if one.state != "pending"]
            record_call_evidence(config, run_dir, [journal for journal in started if journal not in handed])
