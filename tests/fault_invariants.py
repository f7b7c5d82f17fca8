"""What must hold in a project after any run of the loop was killed and the loop run again to the end.

A kill (SIGKILL, a power cut, an out-of-memory killer) gives the program no
chance to clean up, so what the files say afterwards is all the next
invocation and the user have. Each check below reads a project folder as a
user would find it once the loop finished, and returns the problems it sees,
one line each, naming the file: an empty list means the invariant holds.

- `artifacts_valid`: no half-written artifact. Every JSON file under runs/
  parses and validates against its model (manifest, tools, check and tef
  reports, traces, bug report, review, fix record, baseline); every complete
  line of a JSON Lines journal (the runs' and the findings home's) parses. A
  torn last line of a journal is not damage: `append_jsonl` never committed it.
- `no_temp_files`: no leftover of an atomic write (`.<name>.tmp-<pid>-<hex>`)
  under runs/ or the home folder.
- `run_states_true`: no manifest says `running` while nobody holds the
  project's lock (so nobody is running it), and every `completed` run has the
  trace of each attempt it planned (task × Phase 1 model × repetition).
- `index_rebuilds`: `mcpipechekr index --rebuild` exits 0 on the journals left.
- `attempts_paid_once`: a trace that was complete when the loop was killed is
  still there, byte for byte, after the rerun (it was not traced again), and no
  attempt was traced in two runs of the same identity (a rerun that abandons
  the interrupted run and starts the same run afresh pays for every attempt
  twice).
- `records_handed_once`: the findings home holds every completed attempt's
  call records, once. For each trace of a run, the records its capture journal
  converts to (`phase1.records_from_journal`, matched by event id) are each in
  exactly one line of the home's journals: none lost to a kill between the
  trace and its hand-over, none handed over twice by the resume that repairs it.

Blind spots: the checks read files only. They cannot tell a trace rewritten with
the same bytes from one left alone, nor see money spent on an attempt whose
trace was never written.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path

import orjson
from pydantic import BaseModel

from mcpipechekr.artifacts import (
    Baseline,
    BugReport,
    CheckReport,
    FixRecord,
    Manifest,
    Review,
    RunDir,
    TefReport,
    ToolsSnapshot,
    Trace,
    is_temp_file,
    read_jsonl,
    read_model,
    trace_path,
)
from mcpipechekr.artifacts.runstate import load_manifest
from mcpipechekr.errors import UserError
from mcpipechekr.findings.evidence.phase1 import records_from_journal
from mcpipechekr.findings.home import Home

RUN_ARTIFACTS: dict[str, type[BaseModel]] = {
    "manifest.json": Manifest,
    "tools.json": ToolsSnapshot,
    "check_report.json": CheckReport,
    "tef_report.json": TefReport,
    "bug_report.json": BugReport,
    "review.json": Review,
    "fix.json": FixRecord,
}
"""A run folder's JSON artifacts by file name; traces/*.json are Traces, runs/baseline.json a Baseline."""

HOME = ".mcpipechekr"


def model_for(path: Path, runs: Path) -> type[BaseModel] | None:
    """The model a JSON file under runs/ must validate against, or None for a file of no known format."""
    relative = path.relative_to(runs).parts
    if relative == ("baseline.json",):
        return Baseline
    if len(relative) == 3 and relative[1] == "traces":
        return Trace
    if len(relative) == 2:
        return RUN_ARTIFACTS.get(relative[1])
    return None


def artifacts_valid(project: Path) -> list[str]:
    """Every JSON artifact under runs/ validates; every committed journal line parses."""
    runs = project / "runs"
    problems: list[str] = []
    for path in sorted(runs.rglob("*.json")):
        if is_temp_file(path):
            continue  # `no_temp_files` reports those
        model = model_for(path, runs)
        try:
            if model is None:
                parse_json(path)
            else:
                read_model(path, model, fast=model is Trace)
        except (UserError, ValueError) as exc:
            problems.append(first_line(exc, path, project))
    for path in sorted([*runs.rglob("*.jsonl"), *(project / HOME / "journals").glob("*.jsonl")]):
        try:
            read_jsonl(path)
        except UserError as exc:
            problems.append(first_line(exc, path, project))
    return problems


def first_line(exc: Exception, path: Path, project: Path) -> str:
    """An error's first line, starting with the file's path in the project (once)."""
    relative = str(path.relative_to(project))
    line = str(exc).splitlines()[0].replace(str(path), relative)
    return line if line.startswith(relative) else f"{relative}: {line}"


def parse_json(path: Path) -> None:
    """Parse a JSON file of no known model, so that at least half a file is caught."""
    try:
        orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON ({exc.msg})") from None


def no_temp_files(project: Path) -> list[str]:
    """No leftover of an interrupted atomic write under runs/ or the home folder (git's own files aside)."""
    found = []
    for top in (project / "runs", project / HOME):
        for path in sorted(top.rglob("*")):
            if ".git" not in path.relative_to(project).parts and is_temp_file(path):
                found.append(f"{path.relative_to(project)}: left by an interrupted write")
    return found


def run_states_true(project: Path) -> list[str]:
    """No run `running` once nothing runs; every `completed` run has all its planned traces.

    Each manifest is opened the way every command opens it (`load_manifest`),
    which is where a run whose owner is gone becomes `interrupted`: a run still
    `running` then has a live owner, and none may have one after the rerun.
    """
    problems: list[str] = []
    for manifest_path in sorted((project / "runs").glob("*/manifest.json")):
        run_root = manifest_path.parent
        try:
            manifest = load_manifest(RunDir(run_root))
        except UserError:
            continue  # `artifacts_valid` reports it
        if manifest.status == "running":
            problems.append(f"{run_root.name}: `running`, though nothing runs any more")
        if manifest.status == "completed":
            missing = [path.name for path in planned_traces(run_root, manifest) if not path.exists()]
            if missing:
                problems.append(
                    f"{run_root.name}: `completed` without {len(missing)} planned trace(s): "
                    + ", ".join(missing[:3])
                    + (" ..." if len(missing) > 3 else "")
                )
    return problems


def planned_traces(run_root: Path, manifest: Manifest) -> list[Path]:
    """The trace of every attempt a run planned: each task, by each Phase 1 model, each repetition."""
    models = [m for m in (manifest.providers.phase1 or "").split(",") if m]
    repeat = int(manifest.parameters.get("repeat", 1))
    return [
        trace_path(run_root, task, model, number)
        for task in manifest.task_ids
        for model in models
        for number in range(1, repeat + 1)
    ]


def index_rebuilds(project: Path, env: Mapping[str, str]) -> list[str]:
    """`mcpipechekr index --rebuild`, run in the project as a user would, exits 0."""
    result = subprocess.run(
        [sys.executable, "-m", "mcpipechekr", "index", "--rebuild"],
        cwd=project,
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    if result.returncode == 0:
        return []
    tail = (result.stdout + result.stderr).strip().splitlines()[-3:]
    return [f"`mcpipechekr index --rebuild` exited {result.returncode}: " + " | ".join(tail)]


TraceDigests = dict[str, str]
"""A trace's path relative to the project -> the sha256 of its bytes."""


def trace_digests(project: Path) -> TraceDigests:
    """The complete traces in the project now (those that validate), to compare after a rerun."""
    digests: TraceDigests = {}
    for path in sorted((project / "runs").glob("*/traces/*.json")):
        if is_temp_file(path):
            continue
        try:
            read_model(path, Trace, fast=True)
        except UserError:
            continue
        digests[str(path.relative_to(project))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return digests


def attempts_paid_once(project: Path, at_kill: TraceDigests) -> list[str]:
    """No trace complete at the kill was traced again, and no attempt was traced in two equal runs."""
    problems: list[str] = []
    for name, digest in sorted(at_kill.items()):
        path = project / name
        if not path.exists():
            problems.append(f"{name}: complete when killed, gone after the rerun")
        elif hashlib.sha256(path.read_bytes()).hexdigest() != digest:
            problems.append(f"{name}: complete when killed, traced again by the rerun")
    by_identity: dict[str, dict[str, str]] = {}  # identity -> trace name -> first run that has it
    for manifest_path in sorted((project / "runs").glob("*/manifest.json")):
        try:
            manifest = read_model(manifest_path, Manifest)
        except UserError:
            continue
        if manifest.identity is None:
            continue
        run_id = manifest_path.parent.name
        seen = by_identity.setdefault(manifest.identity, {})
        for trace in sorted((manifest_path.parent / "traces").glob("*.json")):
            if is_temp_file(trace):
                continue
            if trace.name in seen:
                problems.append(
                    f"{run_id}/traces/{trace.name}: traced again, though {seen[trace.name]} "
                    "(the same server, tasks and models) already has it"
                )
            else:
                seen[trace.name] = run_id
    return problems


def records_handed_once(project: Path) -> list[str]:
    """Every traced attempt's call records are in the findings home, each in exactly one journal line.

    The records an attempt should have handed over are computed afresh from its
    capture journal, as the hand-over does (session `<run-id>/<journal stem>`);
    event ids do not depend on the home's salt, so a scratch home computes them
    and the project's is only read. An attempt without a capture journal (it
    never reached the server) has nothing to hand over.
    """
    in_home: Counter[str] = Counter()
    for path in sorted((project / HOME / "journals").glob("*.jsonl")):
        try:
            lines = read_jsonl(path)
        except UserError:
            continue  # `artifacts_valid` reports it
        in_home.update(line.get("event_id") for line in lines if isinstance(line, dict))
    problems: list[str] = []
    with tempfile.TemporaryDirectory(prefix="records-") as scratch:
        home = Home(Path(scratch))
        for trace in sorted((project / "runs").glob("*/traces/*.json")):
            run = trace.parent.parent
            journal = run / "journals" / f"{trace.stem}.jsonl"
            if is_temp_file(trace) or not journal.exists():
                continue
            try:
                records = records_from_journal(journal, "server", f"{run.name}/{journal.stem}", home=home)
            except UserError:
                continue  # `artifacts_valid` reports a damaged journal
            missing = sum(1 for record in records if in_home[record.event_id] == 0)
            repeated = sum(1 for record in records if in_home[record.event_id] > 1)
            name, of = trace.relative_to(project), f"of {len(records)} call record(s)"
            if missing:
                problems.append(f"{name}: {missing} {of} not in the findings home")
            if repeated:
                problems.append(f"{name}: {repeated} {of} in the findings home more than once")
    return problems


INVARIANTS: dict[str, str] = {
    "artifacts_valid": "every artifact parses and validates",
    "no_temp_files": "no temp file left",
    "run_states_true": "every run's status is true",
    "index_rebuilds": "the findings index rebuilds",
    "attempts_paid_once": "no attempt paid twice",
    "records_handed_once": "each attempt's records handed over once",
}
"""Invariant name -> what it says, in the order they are checked and reported."""


def check_invariants(project: Path, env: Mapping[str, str], at_kill: TraceDigests) -> dict[str, list[str]]:
    """Every invariant's problems (empty: it holds), by name, in `INVARIANTS` order."""
    checks: dict[str, Callable[[], list[str]]] = {
        "artifacts_valid": lambda: artifacts_valid(project),
        "no_temp_files": lambda: no_temp_files(project),
        "run_states_true": lambda: run_states_true(project),
        "index_rebuilds": lambda: index_rebuilds(project, env),
        "attempts_paid_once": lambda: attempts_paid_once(project, at_kill),
        "records_handed_once": lambda: records_handed_once(project),
    }
    return {name: checks[name]() for name in INVARIANTS}
