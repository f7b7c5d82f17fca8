"""The train/holdout split: holdout tasks are traced and evaluated, but never reach the fixer.

Runs are built as the pipeline builds them (a manifest from `runplan.new_manifest`,
traces written with the trace model, the real `evaluate_run`), on a small
bookshop, not the bundled example. One task is held out; its bugs stay in
bug_report.json and out of the review, the approval, the fix agent's prompt,
the findings home and the narrative; the session summary shows both splits and
warns when train improves and holdout does not.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from rich.console import Console
from trace_builder import call, make_trace

from mcpipechekr.artifacts import RunDir, write_model
from mcpipechekr.artifacts.baseline import Baseline, BaselineEntry
from mcpipechekr.artifacts.trace import write_trace
from mcpipechekr.cli import main
from mcpipechekr.config import load_config
from mcpipechekr.errors import UserError
from mcpipechekr.evaluate import evaluate_run
from mcpipechekr.findings.home import Home
from mcpipechekr.findings.lifecycle.store import load_findings
from mcpipechekr.fix.evidence import evidence_lines
from mcpipechekr.fix.prompt import build_fix_prompt
from mcpipechekr.report import write_report
from mcpipechekr.report.compare import compare_runs
from mcpipechekr.report.compare_html import render_comparison_html
from mcpipechekr.report.compare_text import render_comparison_text
from mcpipechekr.review.bugs import approved_bugs, bugs_to_fix, fix_order
from mcpipechekr.review.decision import load_bug_report, record_decision
from mcpipechekr.runplan import new_manifest
from mcpipechekr.session_summary import render_session_summary
from mcpipechekr.steps.handoff import register_and_verify
from mcpipechekr.tasks import load_tasks

T0 = "2026-12-01T09:00:00Z"
TASKS = {
    "tasks": [
        {
            "task_id": "count-scifi",
            "prompt": "How many science-fiction books are in stock?",
            "task_type": "deterministic",
            "expected_tool": "count_books",
            "min_calls": 1,
        },
        {
            "task_id": "count-poetry",
            "prompt": "How many poetry books are in stock?",
            "task_type": "deterministic",
            "expected_tool": "count_books",
            "min_calls": 1,
            "split": "holdout",
        },
        {
            "task_id": "first-edition-year",
            "prompt": "In which year was the oldest first edition printed?",
            "task_type": "deterministic",
            "expected_tool": "search_books",
            "min_calls": 1,
            "split": "holdout",
        },
    ]
}


def entry(task_id: str, value: int) -> BaselineEntry:
    return BaselineEntry(
        task_id=task_id,
        result={"values": [[value]], "match": "all"},
        plausibility_score=1.0,
        evaluator="rules",
        timestamp=T0,
        method="reference_calls",
        calls=1,
        reference_tokens=40,
    )


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "tasks.yaml").write_text(yaml.safe_dump(TASKS, sort_keys=False))
    config = {
        "server": {"name": "bookshop", "command": "python", "args": ["bookshop.py"]},
        "paths": {"runs": "runs", "home": "home"},
    }
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    baseline = Baseline(
        generated_at=T0,
        tasks=[entry("count-scifi", 42), entry("count-poetry", 17), entry("first-edition-year", 1902)],
    )
    write_model(tmp_path / "runs" / "baseline.json", baseline)
    monkeypatch.delenv("MCPIPECHEKR_HOME", raising=False)
    return tmp_path


def counting(task_id: str, genre: str, answer: int, *, broken: bool, repetition: int):
    """Before a fix `count_books` fails on `genre` and the agent counts a search's hits instead."""
    if not broken:
        steps = [call("count_books", {"genre": genre}, {"count": answer})]
        return make_trace(task_id, steps, answer=f"{answer} books.", repetition=repetition)
    steps = [
        call("count_books", {"genre": genre}, error="Error: no such column: genre"),
        call("search_books", {"query": genre, "limit": 50}, {"total": answer - 1, "books": []}),
    ]
    return make_trace(task_id, steps, answer=f"{answer - 1} books.", repetition=repetition)


def first_edition(*, right: bool, repetition: int):
    """Two identical searches: a repeated call, seen in this holdout task alone."""
    search = call("search_books", {"query": "first edition", "sort": "year"}, {"books": [{"year": 1902}]})
    answer = "It was printed in 1902." if right else "It was printed in 1920."
    return make_trace("first-edition-year", [search, search], answer=answer, repetition=repetition)


def make_run(project: Path, run_id: str, traces: list) -> RunDir:
    config = load_config(project / "config.yaml")
    run = RunDir(project / "runs" / run_id)
    run.root.mkdir(parents=True)
    tasks = load_tasks(config.paths.tasks).tasks
    write_model(
        run.manifest, new_manifest(config, run_id, tasks, parameters={"repeat": 4}).finished("completed")
    )
    for trace in traces:
        write_trace(run, trace)
    evaluate_run(config, run)
    return run


def run_of(
    project: Path, run_id: str, *, broken: bool, holdout_right: bool, poetry_broken: bool | None = None
) -> RunDir:
    """Both count tasks meet the `genre` bug while `broken` (the poetry one: `poetry_broken`, when
    given: a fix that only helps the train task)."""
    poetry_broken = broken if poetry_broken is None else poetry_broken
    traces = [
        counting("count-scifi", "science fiction", 42, broken=broken, repetition=r) for r in range(1, 5)
    ]
    traces += [
        counting("count-poetry", "poetry", 17, broken=poetry_broken, repetition=r) for r in range(1, 5)
    ]
    traces += [first_edition(right=holdout_right, repetition=r) for r in range(1, 5)]
    return make_run(project, run_id, traces)


HOLDOUT_ONLY = {"EFF-repeated-calls-search-books", "COR-wrong-answer-count-poetry"}
SHARED = "BUG-no-such-column-genre-count-books"


def test_bugs_seen_only_in_holdout_tasks_never_reach_the_review_or_the_fixer(project: Path) -> None:
    run = run_of(project, "run-20261201-001", broken=True, holdout_right=True)
    report, digest = load_bug_report(run)
    # holdout tasks are evaluated like the others: their bugs are in the report, their split recorded
    assert HOLDOUT_ONLY | {SHARED, "COR-wrong-answer-count-scifi"} == {bug.id for bug in report.bugs}
    assert {stats.task_id: stats.split for stats in report.tasks} == {
        "count-scifi": "train",
        "count-poetry": "holdout",
        "first-edition-year": "holdout",
    }

    shown = {bug.id for bug in fix_order(report)}
    assert shown == {SHARED, "COR-wrong-answer-count-scifi"}
    assert [bug.id for bug in bugs_to_fix(report)] == [SHARED]
    shared = next(bug for bug in fix_order(report) if bug.id == SHARED)
    assert shared.task_ids == ["count-scifi"] and shared.task_id == "count-scifi"
    assert {item.task_id for item in shared.evidence} == {"count-scifi"}
    assert shared.details == {}  # facts of its first occurrence, which was a holdout task

    with pytest.raises(UserError, match="seen only in holdout tasks"):
        record_decision(run, "approve", bug_report_hash=digest, bug_ids=["COR-wrong-answer-count-poetry"])
    review = record_decision(run, "approve", bug_report_hash=digest)
    (approved,) = approved_bugs(review, report)
    prompt = build_fix_prompt(approved, [], server_name="bookshop", evidence=evidence_lines(approved, run))
    assert "count-scifi" in prompt
    for holdout in ("count-poetry", "first-edition-year", "poetry books", "first edition"):
        assert holdout not in prompt, holdout

    narrative = run.phase2_narrative.read_text()
    assert not any(bug_id in narrative for bug_id in HOLDOUT_ONLY)
    assert "2 more bug(s) were seen only in holdout tasks" in narrative
    assert "| count-poetry (holdout) |" in narrative

    config = load_config(project / "config.yaml")
    register_and_verify(config, run, report, out=Console(file=None, quiet=True))
    findings = load_findings(Home.resolve(config.paths.home))
    assert findings and not any(bug_id in finding.id for finding in findings for bug_id in HOLDOUT_ONLY), [
        finding.id for finding in findings
    ]


def test_the_summary_shows_both_splits_and_warns_when_only_train_improves(project: Path) -> None:
    before = run_of(project, "run-20261201-001", broken=True, holdout_right=True)
    after = run_of(project, "run-20261201-002", broken=False, holdout_right=True, poetry_broken=True)
    text = render_session_summary([before, after])
    section = text.split("## Train and holdout", 1)[1].split("\n## ", 1)[0]
    assert "| run-20261201-001 | 0/4 (0%), 2.0 calls | 4/8 (50%), 2.0 calls |" in section
    assert "| run-20261201-002 | 4/4 (100%), 1.0 calls | 4/8 (50%), 2.0 calls |" in section
    assert (
        "**Warning: overfitting?** Train tasks improved from run-20261201-001 to run-20261201-002" in section
    )
    assert "Warning: holdout got worse" not in section


def test_the_summary_warns_when_holdout_gets_worse_and_not_when_both_improve(project: Path) -> None:
    first = run_of(project, "run-20261201-001", broken=False, holdout_right=True)
    worse = run_of(project, "run-20261201-002", broken=False, holdout_right=False)
    text = render_session_summary([first, worse])
    assert "**Warning: holdout got worse** from run-20261201-001 to run-20261201-002 (8/8 (100%)" in text
    assert "Warning: overfitting?" not in text

    fixed = run_of(project, "run-20261201-003", broken=False, holdout_right=True)
    both = render_session_summary([worse, fixed])
    assert "Warning" not in both
    assert "Train same, holdout better from run-20261201-002 to run-20261201-003." in both


def test_without_holdout_tasks_nothing_changes(project: Path) -> None:
    data = yaml.safe_load((project / "tasks.yaml").read_text())
    for task in data["tasks"]:
        task.pop("split", None)
    (project / "tasks.yaml").write_text(yaml.safe_dump(data))
    run = run_of(project, "run-20261201-001", broken=True, holdout_right=True)
    report, _ = load_bug_report(run)
    assert report.train_view() is report
    assert {bug.id for bug in fix_order(report)} == {bug.id for bug in report.bugs}
    assert "## Train and holdout" not in render_session_summary([run])


def test_compare_shows_both_splits_and_the_summarys_overfitting_warning(project: Path) -> None:
    before = run_of(project, "run-20261201-001", broken=True, holdout_right=True)
    after = run_of(project, "run-20261201-002", broken=False, holdout_right=True, poetry_broken=True)
    comparison = compare_runs(before, after)
    splits = {side.split: side for side in comparison.splits}
    assert set(splits) == {"train", "holdout"}
    train, holdout = splits["train"], splits["holdout"]
    train_counts = (train.tasks_compared, train.tasks_better, train.tasks_worse, train.tasks_unchanged)
    assert train_counts == (1, 1, 0, 0)
    assert (train.successes_a, train.decided_a, train.successes_b, train.decided_b) == (0, 4, 4, 4)
    assert (train.mean_calls_a, train.mean_calls_b, train.trend) == (2.0, 1.0, "better")
    assert train.mean_tokens_a is not None and train.mean_tokens_b is not None
    assert train.mean_tokens_b < train.mean_tokens_a
    assert (holdout.tasks_compared, holdout.tasks_better, holdout.tasks_unchanged) == (2, 0, 2)
    assert (holdout.rate_a, holdout.rate_b, holdout.trend) == (0.5, 0.5, "same")
    assert {task.task_id: task.split for task in comparison.tasks} == {
        "count-scifi": "train",
        "count-poetry": "holdout",
        "first-edition-year": "holdout",
    }
    # the session summary's rule, word for word
    (warning,) = comparison.split_warnings
    summary = render_session_summary([before, after])
    assert warning.startswith("overfitting? Train tasks improved from run-20261201-001 to run-20261201-002")
    assert f"**Warning: overfitting?** {warning.removeprefix('overfitting? ')}" in summary

    text = render_comparison_text(comparison)
    section = text.split("Train and holdout", 1)[1]
    assert "train    1      1       0      0          0/4 (0%) → 4/4 (100%)  2.0 → 1.0" in section
    assert "holdout  2      0       0      2          4/8 (50%) → 4/8 (50%)  2.0 → 2.0" in section
    assert f"  Warning: {warning}" in section
    assert re.search(r"^  count-poetry +holdout +0/4 +0/4", text, re.MULTILINE)

    page = render_comparison_html(comparison)
    assert '<table class="mcpc-splits">' in page
    assert "<td>holdout</td><td>2</td><td>0</td><td>0</td><td>2</td>" in page
    assert '<p class="mcpc-split-warning">Warning: overfitting? Train tasks improved' in page

    # `--format json` puts the warning on stderr too, as the comparison's other warnings
    result = CliRunner().invoke(main, ["compare", str(before.root), str(after.root), "--format", "json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["split_warnings"] == [warning]
    assert f"warning: {warning[:60]}" in result.stderr

    # the HTML report's comparison of the first and last iteration holds the same section
    report = write_report([before, after], project / "report.html").read_text()
    assert '<table class="mcpc-splits">' in report
    assert "Warning: overfitting? Train tasks improved" in report
    # and its changes between iterations mark the holdout tasks' rows
    assert "<td>count-poetry (holdout)</td>" in report and "<td>count-scifi</td>" in report


def test_compare_warns_when_holdout_gets_worse_and_not_when_both_improve(project: Path) -> None:
    first = run_of(project, "run-20261201-001", broken=False, holdout_right=True)
    worse = run_of(project, "run-20261201-002", broken=False, holdout_right=False)
    comparison = compare_runs(first, worse)
    assert [warning.split(" from ")[0] for warning in comparison.split_warnings] == ["holdout got worse"]
    assert {side.split: side.tasks_worse for side in comparison.splits} == {"train": 0, "holdout": 1}

    both = compare_runs(
        run_of(project, "run-20261201-003", broken=True, holdout_right=False),
        run_of(project, "run-20261201-004", broken=False, holdout_right=True),
    )
    assert both.split_warnings == []
    assert {side.split: side.trend for side in both.splits} == {"train": "better", "holdout": "better"}
    assert "Warning" not in render_comparison_text(both).split("Train and holdout", 1)[1].split("Bugs")[0]


def test_compare_without_holdout_tasks_has_no_split_section(project: Path) -> None:
    data = yaml.safe_load((project / "tasks.yaml").read_text())
    for task in data["tasks"]:
        task.pop("split", None)
    (project / "tasks.yaml").write_text(yaml.safe_dump(data))
    comparison = compare_runs(
        run_of(project, "run-20261201-001", broken=True, holdout_right=True),
        run_of(project, "run-20261201-002", broken=False, holdout_right=True),
    )
    assert comparison.splits == [] and comparison.split_warnings == []
    assert "Train and holdout" not in render_comparison_text(comparison)
    assert "mcpc-splits" not in render_comparison_html(comparison)
