"""`doit loop` on the bundled example with holdout tasks: what the fix agent never sees, and what it says.

Two loops (baseline, loop, `approve`, `exit`), each on its own copy of the
example with one task marked `split: holdout` in tasks.yaml:

- `latest-email-from-ron-chinn` held out: the date-sort fix, found through a
  train task, also lets the agent find his latest email in one call; the
  session summary's holdout row shows it and warns of nothing;
- `list-office-move-emails-2024` held out: the `fts.rank` error is seen in
  that task alone, so its bug never reaches the review or the fix record; the
  train tasks improve, the holdout task does not, and the session summary,
  `mcpipechekr compare` and the HTML report all say "overfitting?".
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from project import at_the_review_prompt, copy_project, doit, mcpipechekr

from mcpipechekr.artifacts import BugReport, list_runs, read_model
from mcpipechekr.artifacts.fix_record import FixRecord
from mcpipechekr.artifacts.review import Review
from mcpipechekr.artifacts.rundir import RunDir

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("test_split_loop")]

DATE_SORT = "GAP-no-date-sort-query-email-database"
FTS_RANK = "BUG-no-such-column-fts-rank-query-email-database"


@dataclass(frozen=True)
class Looped:
    """A project after `doit baseline` and one `doit loop` answered `approve`, then `exit`."""

    project: Path
    env: dict[str, str]
    status: int | None
    transcript: str
    first: RunDir
    second: RunDir


def hold_out(tasks_yaml: Path, task_id: str) -> None:
    """Mark one task of the example's tasks.yaml `split: holdout` (its other lines as they are)."""
    text = tasks_yaml.read_text()
    line = f"  - task_id: {task_id}\n"
    assert text.count(line) == 1, task_id
    tasks_yaml.write_text(text.replace(line, f"{line}    split: holdout\n"))


def loop_with_holdout(root: Path, env: dict[str, str], task_id: str) -> Looped:
    project = copy_project(root)
    hold_out(project / "tasks.yaml", task_id)
    baseline = doit(project, env, "baseline")
    assert baseline.returncode == 0, baseline.stdout + baseline.stderr
    status, transcript = at_the_review_prompt(
        [sys.executable, "-m", "doit", "loop"],
        project,
        env,
        ["approve", "exit"],
        root / "loop.log",
        timeout=400,
    )
    runs = list_runs(project / "runs")
    assert len(runs) == 2, transcript[-3000:]
    return Looped(project, env, status, transcript, runs[0], runs[1])


@pytest.fixture(scope="module")
def env(emailindex_env: dict[str, str]) -> dict[str, str]:
    return {**emailindex_env, "COLUMNS": "160", "TERM": "xterm", "NO_COLOR": "1"}


@pytest.fixture(scope="module")
def holdout_helped(tmp_path_factory: pytest.TempPathFactory, env: dict[str, str]) -> Looped:
    return loop_with_holdout(tmp_path_factory.mktemp("helped"), env, "latest-email-from-ron-chinn")


@pytest.fixture(scope="module")
def holdout_untouched(tmp_path_factory: pytest.TempPathFactory, env: dict[str, str]) -> Looped:
    return loop_with_holdout(tmp_path_factory.mktemp("untouched"), env, "list-office-move-emails-2024")


def split_section(summary: str) -> str:
    return summary.split("## Train and holdout", 1)[1].split("\n## ", 1)[0]


def test_a_fix_that_also_helps_the_holdout_task_is_reported_without_warning(holdout_helped: Looped) -> None:
    looped = holdout_helped
    assert looped.status == 0, looped.transcript[-3000:]
    report = read_model(looped.first.bug_report, BugReport)
    assert {s.task_id for s in report.tasks if s.split == "holdout"} == {"latest-email-from-ron-chinn"}
    record = read_model(looped.first.fix_record, FixRecord)
    assert DATE_SORT in {entry.bug_id for entry in record.bugs if entry.status == "committed"}

    section = split_section(looped.second.session_summary.read_text())
    first, second = looped.first.run_id, looped.second.run_id
    # the holdout task: 2 calls before the date-sort fix, 1 after; train improved too
    assert re.search(rf"\| {first} \| [^|]+ \| 1/1 \(100%\), 2\.0 calls \|", section)
    assert re.search(rf"\| {second} \| [^|]+ \| 1/1 \(100%\), 1\.0 calls \|", section), section
    assert f"Train better, holdout better from {first} to {second}." in section
    assert "Warning" not in section


def test_only_train_improves_and_overfitting_is_warned_everywhere(holdout_untouched: Looped) -> None:
    looped = holdout_untouched
    assert looped.status == 0, looped.transcript[-3000:]
    first, second = looped.first.run_id, looped.second.run_id

    # the holdout task's bug is in the report, never in the review or the fix record
    report = read_model(looped.first.bug_report, BugReport)
    bug = next(bug for bug in report.bugs if bug.id == FTS_RANK)
    assert bug.task_ids == ["list-office-move-emails-2024"]
    assert read_model(looped.first.review, Review).decision == "approve"
    record = read_model(looped.first.fix_record, FixRecord)
    fixed = {entry.bug_id for entry in record.bugs}
    assert DATE_SORT in fixed and FTS_RANK not in fixed, fixed
    assert FTS_RANK in {bug.id for bug in read_model(looped.second.bug_report, BugReport).bugs}

    warning = f"Train tasks improved from {first} to {second}"
    section = split_section(looped.second.session_summary.read_text())
    assert re.search(rf"\| {first} \| [^|]+ \| 1/1 \(100%\), 2\.0 calls \|", section), section
    assert re.search(rf"\| {second} \| [^|]+ \| 1/1 \(100%\), 2\.0 calls \|", section), section
    assert f"**Warning: overfitting?** {warning}" in section

    compared = mcpipechekr(looped.project, looped.env, "compare", first, second)
    assert compared.returncode == 0, compared.stdout + compared.stderr
    assert re.search(r"^  list-office-move-emails-2024 +holdout ", compared.stdout, re.MULTILINE)
    assert re.search(
        r"^  holdout +1 +0 +0 +1 +1/1 \(100%\) → 1/1 \(100%\) +2\.0 → 2\.0", compared.stdout, re.M
    )
    assert f"  Warning: overfitting? {warning}" in compared.stdout

    page = looped.second.root.joinpath("report.html").read_text()
    assert '<table class="mcpc-splits">' in page and f"Warning: overfitting? {warning}" in page
