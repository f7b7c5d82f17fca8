"""A run's true state: its manifest as read by everyone, and how many of its planned attempts are traced.

`load_manifest` is the one way the library reads a run's manifest. A
manifest that says `running` while the process that ran it is gone (see
`run_owner`) is rewritten `interrupted` there, atomically and with the reason,
so no reader ever takes a dead run for a live one.

`trace_coverage` compares the attempts a run planned — the manifest's
`task_ids` × its Phase 1 models × its repetitions (`parameters.repeat`, 1 when
absent) — with the traces on disk. An attempt counts as traced when its trace
file reads and the attempt ended on its own: `completed`, `error`, `timeout`,
or `incomplete` by the agent's own limits (it reached `max_requests`, its
session ended without an answer). A trace the harness cut short (Ctrl-C, a
server halt, the phase timeout: `CUT_SHORT_REASONS`) or a missing one is not,
so a resumed run does it again. Traces beyond the plan (imported sessions of other tasks) do not count
against it. A shard of a run (the manifest's `shard`) plans only its own attempts; asked for the
`whole` run, its coverage is the run's, which one shard never completes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from mcpipechekr.artifacts.atomic import read_model, write_model
from mcpipechekr.artifacts.manifest import Manifest
from mcpipechekr.artifacts.run_owner import gone_owner, try_take_run
from mcpipechekr.artifacts.rundir import RunDir
from mcpipechekr.artifacts.trace import Trace, trace_path
from mcpipechekr.errors import UserError

FINAL_TRACE_STATUSES = frozenset({"completed", "error", "timeout", "errored"})
CUT_SHORT_REASONS = (
    "interrupted by the user",
    "the run halted:",
    "the run stopped:",
    "the phase ran past timeouts.phase_s",
    "the server failed:",
)
"""How the Phase 1 engine (runners/engine.py) begins the reason of an `incomplete` attempt it cut short."""


def load_manifest(run_dir: RunDir) -> Manifest:
    """The run's manifest; a `running` one whose owner is gone comes back (and is written) `interrupted`."""
    manifest = read_model(run_dir.manifest, Manifest)
    if manifest.status != "running":
        return manifest
    lock = try_take_run(run_dir)
    try:
        gone = gone_owner(run_dir, lock_free=lock is not None)
        if gone is None:
            return manifest
        manifest = read_model(run_dir.manifest, Manifest)  # as it is now that nobody can start
        if manifest.status != "running":
            return manifest
        ended = manifest.finished("interrupted", gone.describe(), at=max(gone.last_seen, manifest.started_at))
        write_model(run_dir.manifest, ended)
        return ended
    finally:
        if lock is not None:
            lock.release()


def planned_traces(run_dir: RunDir, manifest: Manifest, *, whole: bool = False) -> list[Path]:
    """The trace file of every attempt the run planned, in plan order (task, model, repetition).

    A shard's are its own attempts, unless `whole`.
    """
    models = [name.strip() for name in (manifest.providers.phase1 or "").split(",") if name.strip()]
    repeat = manifest.parameters.get("repeat", 1)
    repeat = repeat if isinstance(repeat, int) and repeat >= 1 else 1
    planned = [
        trace_path(run_dir, task_id, model, repetition)
        for task_id in manifest.task_ids
        for model in models
        for repetition in range(1, repeat + 1)
    ]
    if manifest.shard is None or whole:
        return planned
    mine = set(manifest.shard.attempts)
    return [path for path in planned if path.stem in mine]


def is_traced(path: Path) -> bool:
    """True when the attempt's trace is there, readable, and the attempt ended on its own."""
    if not path.exists():
        return False
    try:
        trace = read_model(path, Trace, fast=True)
    except UserError:
        return False
    if trace.status in FINAL_TRACE_STATUSES:
        return True
    reason = trace.status_reason or ""
    return bool(reason) and not reason.startswith(CUT_SHORT_REASONS)


@dataclass(frozen=True)
class TraceCoverage:
    """Which of a run's planned attempts have a trace with a final status."""

    planned: list[Path]
    traced: list[Path] = field(default_factory=list)

    @property
    def missing(self) -> list[Path]:
        done = set(self.traced)
        return [path for path in self.planned if path not in done]

    @property
    def complete(self) -> bool:
        return not self.missing

    def counts(self) -> str:
        """`4 of 8 planned attempts traced`."""
        return f"{len(self.traced)} of {len(self.planned)} planned attempts traced"

    def not_traced(self, limit: int = 5) -> str:
        """The missing attempts by trace name, the first `limit` of them: `not traced: a__demo__r001, …`."""
        names = [path.stem for path in self.missing]
        more = f" and {len(names) - limit} more" if len(names) > limit else ""
        return f"not traced: {', '.join(names[:limit])}{more}"

    def describe(self, limit: int = 5) -> str:
        """The counts and the missing attempts."""
        return f"{self.counts()}; {self.not_traced(limit)}"


def trace_coverage(run_dir: RunDir, manifest: Manifest, *, whole: bool = False) -> TraceCoverage:
    """The run's planned attempts and those of them traced (see the module docstring)."""
    planned = planned_traces(run_dir, manifest, whole=whole)
    return TraceCoverage(planned, [path for path in planned if is_traced(path)])


def resume_line(run_dir: RunDir) -> str | None:
    """`resuming run-…: 4 of 8 attempts already traced` for a run that lacks some traces and has some.

    Read from the run's files alone, so doit can tell while it lists its targets.
    """
    found = _traced_so_far(run_dir)
    if found is None or found[1].complete or not found[1].traced:
        return None
    counts = f"{len(found[1].traced)} of {len(found[1].planned)}"
    return f"resuming {run_dir.run_id}: {counts} attempts already traced"


def keeps_traces(run_dir: RunDir) -> bool:
    """Whether tracing this existing run again keeps the attempts it has traced: it has some, and it lacks
    others or never completed (a process killed outright after its last trace, before doit recorded
    them, would otherwise pay for every attempt twice). A completed run is traced again as doit asks: it
    reruns a trace target only when what the trace depends on changed.
    """
    found = _traced_so_far(run_dir)
    if found is None:
        return False
    manifest, coverage = found
    return bool(coverage.traced) and (not coverage.complete or manifest.status != "completed")


def _traced_so_far(run_dir: RunDir) -> tuple[Manifest, TraceCoverage] | None:
    """An existing run's manifest and trace coverage; None for a run not yet begun."""
    if not run_dir.manifest.exists():
        return None
    manifest = load_manifest(run_dir)
    return manifest, trace_coverage(run_dir, manifest)
