"""runs/{run-id}/: one folder per pipeline run, never reused.

Run ids are `run-YYYYMMDD-NNN`: the local calendar date the run started (the
date the user sees on their clock, so "today's runs" means what they expect)
and a number counting up from 001 within that day. Ids sort in time order as
plain strings.

A run folder is created with a single ``os.mkdir``, which fails if the folder
exists, so two runs starting at the same moment (two terminals, a CI matrix)
can never share one: the loser takes the next number. The next run is one past
the highest existing number of the day, so gaps left by deleted runs stay gaps.

The only file shared across runs is the baseline, at ``runs/baseline.json``
(see ``baseline_path``).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path

from mcpipechekr.errors import UserError

RUN_ID_RE = re.compile(r"^run-(\d{8})-(\d{3})$")
MAX_RUNS_PER_DAY = 999
LATEST = "latest"


def format_run_id(day: date, number: int) -> str:
    """`run-YYYYMMDD-NNN` for a day and a 1-based number."""
    if not 1 <= number <= MAX_RUNS_PER_DAY:
        raise ValueError(f"run numbers go from 1 to {MAX_RUNS_PER_DAY}")
    return f"run-{day:%Y%m%d}-{number:03d}"


def parse_run_id(run_id: str) -> tuple[date, int] | None:
    """The day and number of a run id, or None if it is not one."""
    match = RUN_ID_RE.match(run_id)
    if not match:
        return None
    try:
        day = datetime.strptime(match.group(1), "%Y%m%d").date()
    except ValueError:
        return None
    number = int(match.group(2))
    return (day, number) if number >= 1 else None


def baseline_path(runs_dir: str | Path) -> Path:
    """runs/baseline.json: accepted results shared by every run, so runs compare with one reference."""
    return Path(runs_dir) / "baseline.json"


@dataclass(frozen=True)
class RunDir:
    """A run's folder and the paths of everything the pipeline writes into it."""

    root: Path

    @property
    def run_id(self) -> str:
        return self.root.name

    @property
    def runs_dir(self) -> Path:
        return self.root.parent

    @property
    def manifest(self) -> Path:
        """What the run was: versions, hashes, models, config, status."""
        return self.root / "manifest.json"

    @property
    def tools(self) -> Path:
        """The tool definitions the server offered during the run (tools.json)."""
        return self.root / "tools.json"

    @property
    def check_report(self) -> Path:
        """Phase 0: server checks."""
        return self.root / "check_report.json"

    @property
    def tef_report(self) -> Path:
        """Phase 0.5: tool-description evaluation."""
        return self.root / "tef_report.json"

    @property
    def traces(self) -> Path:
        """Phase 1: one trace file per task, provider and repetition."""
        return self.root / "traces"

    @property
    def bug_report(self) -> Path:
        """Phase 2: evaluated bugs and per-task statistics."""
        return self.root / "bug_report.json"

    @property
    def kpi(self) -> Path:
        """Phase 2: the run's key figures against config.yaml's `kpi:` targets."""
        return self.root / "kpi.json"

    @property
    def phase2_narrative(self) -> Path:
        """Phase 2: the evaluator's narrative, for people."""
        return self.root / "phase2_narrative.md"

    @property
    def description_suggestions(self) -> Path:
        """`mcpipechekr lint --suggest`: new descriptions for the bugs a description caused."""
        return self.root / "description_suggestions.json"

    @property
    def review(self) -> Path:
        """The human's decision on the bug report: approve (with annotations) or exit."""
        return self.root / "review.json"

    @property
    def issues(self) -> Path:
        """The bugs exported at the review, one issue-ready markdown file each (`<bug id>.md`)."""
        return self.root / "issues"

    @property
    def fix_record(self) -> Path:
        """Phase 3: each bug the fix loop worked on, its commit, and the server's health after it."""
        return self.root / "fix.json"

    @property
    def session_summary(self) -> Path:
        """Phase 3: what the fix loop did, for people."""
        return self.root / "session_summary.md"

    @property
    def server_stderr_log(self) -> Path:
        """Everything the server under test wrote to stderr during the run."""
        return self.root / "server.stderr.log"

    @property
    def handovers(self) -> Path:
        """Phase 1: which capture journals went to the findings home (`artifacts/handover.py`)."""
        return self.root / "handovers.jsonl"

    @property
    def baseline(self) -> Path:
        """The shared runs/baseline.json (not inside the run folder)."""
        return baseline_path(self.runs_dir)

    def artifact_paths(self) -> dict[str, Path]:
        """Every per-run artifact by name, for listings and doit targets."""
        names = (
            "manifest",
            "tools",
            "check_report",
            "tef_report",
            "traces",
            "bug_report",
            "kpi",
            "phase2_narrative",
            "description_suggestions",
            "review",
            "issues",
            "fix_record",
            "session_summary",
            "server_stderr_log",
        )
        return {name: getattr(self, name) for name in names}


def existing_run_numbers(runs_dir: Path, day: date) -> list[int]:
    """The run numbers of ``day`` already taken under ``runs_dir``."""
    prefix = f"run-{day:%Y%m%d}-"
    numbers = []
    try:
        names = os.listdir(runs_dir)
    except FileNotFoundError:
        return []
    for name in names:
        if name.startswith(prefix):
            parsed = parse_run_id(name)
            if parsed:
                numbers.append(parsed[1])
    return numbers


def create_run_dir(runs_dir: str | Path, today: date | None = None) -> RunDir:
    """Create a new, empty run folder with the next free id of ``today`` (local date by default).

    Exclusive: ``os.mkdir`` fails on an existing folder, and on that failure the
    next number is tried, so concurrent creators always end up in different
    folders and no existing folder is ever reused.
    """
    root = Path(runs_dir)
    root.mkdir(parents=True, exist_ok=True)
    day = today or date.today()
    number = max(existing_run_numbers(root, day), default=0) + 1
    while number <= MAX_RUNS_PER_DAY:
        candidate = root / format_run_id(day, number)
        try:
            os.mkdir(candidate)
        except FileExistsError:
            number += 1
            continue
        return RunDir(candidate)
    raise UserError(
        f"{root}: all {MAX_RUNS_PER_DAY} run ids of {day:%Y-%m-%d} are taken; "
        "move or delete old runs to start another today."
    )


def list_runs(runs_dir: str | Path) -> list[RunDir]:
    """Every run folder under ``runs_dir``, oldest first; other files and folders are ignored."""
    root = Path(runs_dir)
    if not root.is_dir():
        return []
    runs = [RunDir(path) for path in root.iterdir() if path.is_dir() and parse_run_id(path.name)]
    return sorted(runs, key=lambda run: run.run_id)


def latest_run(runs_dir: str | Path) -> RunDir | None:
    """The most recently created run, or None when there is none."""
    runs = list_runs(runs_dir)
    return runs[-1] if runs else None


def open_run(runs_dir: str | Path, run_id: str) -> RunDir:
    """An existing run by id (or `latest`); an unknown id is a UserError listing the latest runs."""
    runs = list_runs(runs_dir)
    if run_id == LATEST:
        if not runs:
            raise UserError(f"{runs_dir}: there are no runs yet, so there is no `{LATEST}` run.")
        return runs[-1]
    for run in runs:
        if run.run_id == run_id:
            return run
    if not runs:
        raise UserError(f"{runs_dir}: no run `{run_id}`; there are no runs yet.")
    recent = ", ".join(run.run_id for run in reversed(runs[-5:]))
    hint = "" if parse_run_id(run_id) else " Run ids look like run-YYYYMMDD-NNN."
    raise UserError(f"{runs_dir}: no run `{run_id}`. Latest runs: {recent} (or use `{LATEST}`).{hint}")
