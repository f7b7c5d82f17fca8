"""What a report shows, read from run folders: each run's manifest, bug report, traces and tools.

A report is a reader of finished artifacts and never a writer of them: manifests
are read as recorded (a run still `running` is shown so), and nothing in a run
folder changes, so `mcpipechekr report` needs no project lock and can be run
while a loop waits at its review. An artifact that is missing is shown as
missing; one that cannot be read is named in the run's problems and left out,
so a report never makes a run look more complete than it is.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from mcpipechekr.artifacts import (
    BugReport,
    CheckReport,
    FixRecord,
    Manifest,
    Review,
    RunDir,
    TefReport,
    ToolsSnapshot,
    Trace,
    list_traces,
    read_model,
    read_trace,
)
from mcpipechekr.errors import UserError

M = TypeVar("M", bound=BaseModel)


@dataclass
class TraceData:
    """One attempt's trace and where it lives in its run (`traces/<stem>.json`)."""

    stem: str
    trace: Trace

    @property
    def relative(self) -> str:
        """The path a bug's evidence names it by: `traces/<stem>.json`."""
        return f"traces/{self.stem}.json"


@dataclass
class RunData:
    """One run folder's artifacts, each None when missing or unreadable (`problems` says which)."""

    run: RunDir
    iteration: int
    manifest: Manifest | None = None
    bug_report: BugReport | None = None
    tools: ToolsSnapshot | None = None
    check_report: CheckReport | None = None
    tef_report: TefReport | None = None
    review: Review | None = None
    fix: FixRecord | None = None
    traces: list[TraceData] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def run_id(self) -> str:
        return self.run.run_id

    def trace_by_path(self, relative: str) -> TraceData | None:
        """The trace a bug's evidence names (`traces/<file>.json`), if this run has it."""
        stem = Path(relative).stem
        return next((data for data in self.traces if data.stem == stem), None)

    def wasted_steps(self) -> dict[tuple[str, int], list[str]]:
        """(trace stem, step index) → the ids of the bugs whose evidence names that step."""
        wasted: dict[tuple[str, int], list[str]] = {}
        for bug in self.bug_report.bugs if self.bug_report else []:
            for evidence in bug.evidence:
                for step in evidence.steps:
                    ids = wasted.setdefault((Path(evidence.trace).stem, step), [])
                    if bug.id not in ids:
                        ids.append(bug.id)
        return wasted


@dataclass
class ReportData:
    """The runs a report covers, oldest first; a run's position is its iteration."""

    runs: list[RunData]

    @property
    def evaluated(self) -> list[RunData]:
        """The runs with a readable bug report: the points of the charts."""
        return [run for run in self.runs if run.bug_report is not None]

    @property
    def task_ids(self) -> list[str]:
        """Every task of the covered runs, in first-seen order (manifest, then statistics, then traces)."""
        seen: dict[str, None] = {}
        for run in self.runs:
            for task in run.manifest.task_ids if run.manifest else []:
                seen.setdefault(task, None)
            for stats in run.bug_report.tasks if run.bug_report else []:
                seen.setdefault(stats.task_id, None)
            for data in run.traces:
                seen.setdefault(data.trace.task_id, None)
        return list(seen)


def load_report_data(runs: Sequence[RunDir]) -> ReportData:
    """Read every artifact the report shows from `runs` (oldest first; a run given twice counts once)."""
    unique = list({run.root.resolve(): RunDir(run.root.resolve()) for run in runs}.values())
    return ReportData([load_run(run, iteration) for iteration, run in enumerate(unique, start=1)])


def load_run(run: RunDir, iteration: int) -> RunData:
    """One run folder's artifacts; a missing file is None, an unreadable one a problem line too."""
    data = RunData(run=run, iteration=iteration)
    data.manifest = _read(data, run.manifest, Manifest)
    data.bug_report = _read(data, run.bug_report, BugReport)
    data.tools = _read(data, run.tools, ToolsSnapshot)
    data.check_report = _read(data, run.check_report, CheckReport)
    data.tef_report = _read(data, run.tef_report, TefReport)
    data.review = _read(data, run.review, Review)
    data.fix = _read(data, run.fix_record, FixRecord)
    for path in list_traces(run):
        trace = _read(data, path, Trace, read_trace)
        if trace is not None:
            data.traces.append(TraceData(stem=path.stem, trace=trace))
    return data


def _read(data: RunData, path: Path, model: type[M], reader: Callable[[Path], Any] | None = None) -> M | None:
    if not path.exists():
        return None
    try:
        return reader(path) if reader else read_model(path, model)
    except UserError as exc:
        data.problems.append(exc.message.splitlines()[0])
        return None
