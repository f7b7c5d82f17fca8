"""`doit loop` end to end on the bundled example, typed at a real pseudo-terminal.

The whole promise in one test: the demo model's traces show the missing date
sort and the `fts.rank` error; at the review a person annotates and approves;
the demo fixer's patches are committed one per bug as `fix: {bug_id}`; the
server restarts healthy; the next run finds the first Ron Chinn email in fewer
calls and no longer reports the fixed bugs; `exit` writes the session summary.
"""

from __future__ import annotations

import sys
from pathlib import Path

import git
import pytest
from project import at_the_review_prompt, copy_project, doit

from mcpipechekr.artifacts import BugReport, ToolsSnapshot, list_runs, read_model, read_trace
from mcpipechekr.artifacts.baseline import Baseline
from mcpipechekr.artifacts.fix_record import FixRecord
from mcpipechekr.artifacts.review import Review
from mcpipechekr.findings.home import Home
from mcpipechekr.findings.lifecycle.store import load_findings
from mcpipechekr.review import bugs_to_fix

pytestmark = pytest.mark.slow

FIXED = ["GAP-no-date-sort-query-email-database", "BUG-no-such-column-fts-rank-query-email-database"]
NOTE = "prefer a sort_order parameter"


def calls(run_root: Path, task_id: str) -> int:
    (path,) = (run_root / "traces").glob(f"{task_id}__*.json")
    return read_trace(path).totals.tool_calls


def test_loop_review_fix_restart_and_a_better_second_run(
    tmp_path: Path, emailindex_env: dict[str, str]
) -> None:
    project = copy_project(tmp_path)
    env = {**emailindex_env, "COLUMNS": "160", "TERM": "dumb", "NO_COLOR": "1"}
    baseline = doit(project, env, "baseline")
    assert baseline.returncode == 0, baseline.stdout + baseline.stderr

    status, transcript = at_the_review_prompt(  # approved, fixed, restarted healthy: iteration 2
        [sys.executable, "-m", "doit", "loop"],
        project,
        env,
        [f"annotate {NOTE}", "approve", "exit"],
        tmp_path / "loop.log",
        timeout=400,
    )
    assert status == 0, transcript[-3000:]

    first, second = list_runs(project / "runs")

    review = read_model(first.review, Review)
    assert review.decision == "approve" and [a.text for a in review.annotations] == [NOTE]

    repo = git.Repo(project / ".mcpipechekr" / "workspace" / "emailindex")
    messages = [commit.message.strip() for commit in repo.iter_commits()]
    fix_commits = [m for m in messages if m.startswith("fix: ")]
    assert sorted(fix_commits) == sorted(f"fix: {bug}" for bug in FIXED)  # one commit per fixed bug
    assert not repo.is_dirty(untracked_files=False)
    record = read_model(first.fix_record, FixRecord)
    committed = {entry.bug_id: entry for entry in record.bugs if entry.status == "committed"}
    assert sorted(committed) == sorted(FIXED)
    for entry in committed.values():
        changed = repo.commit(entry.commit).stats.files
        assert set(changed) == set(entry.files_changed) and "server.py" in changed
    assert record.health is not None and record.health.healthy
    # only what the server can fix reaches the demo fixer: how the model behaved is evidence, not a task
    report = read_model(first.bug_report, BugReport)
    assert [entry.bug_id for entry in record.bugs] == [bug.id for bug in bugs_to_fix(report)]
    assert all(bug.fixable_by == "server" for bug in report.bugs if bug.id in FIXED)

    assert calls(second.root, "find-first-email-ron-chinn") < calls(first.root, "find-first-email-ron-chinn")
    # the fix changed the tools: the second run was judged against entries rebuilt for them, so no
    # task beats its minimum (a call ratio below 1 or an efficiency above 1 would mean a stale baseline)
    rebuilt = read_model(project / "runs" / "baseline.json", Baseline)
    second_tools = read_model(second.tools, ToolsSnapshot).tools_hash
    assert read_model(first.tools, ToolsSnapshot).tools_hash != second_tools
    assert rebuilt.stale_tasks(second_tools) == [] and {e.tools_hash for e in rebuilt.tasks} == {second_tools}
    second_report = read_model(second.bug_report, BugReport)
    assert all(s.call_ratio is None or s.call_ratio >= 1 for s in second_report.tasks), second_report.tasks
    assert all(s.efficiency_ratio is None or s.efficiency_ratio <= 1 for s in second_report.tasks)
    assert not [
        note
        for note in second_report.notes
        if "the baseline is stale" in note or "beat its known minimum" in note
    ]
    before = {bug.id for bug in read_model(first.bug_report, BugReport).bugs}
    after = {bug.id for bug in read_model(second.bug_report, BugReport).bugs}
    assert set(FIXED) <= before and not set(FIXED) & after

    # each fixed bug's finding was claimed by its commit, and the second run's report verified it once
    findings = {f.bug_id: f for f in load_findings(Home.resolve(project / ".mcpipechekr")) if f.bug_id}
    assert all(findings[bug].state == "verifying" and findings[bug].streak == 1 for bug in FIXED)
    assert "Findings verified by this run" in second.phase2_narrative.read_text()

    assert read_model(second.review, Review).decision == "exit"
    summary = second.session_summary.read_text()
    assert first.run_id in summary and second.run_id in summary
    assert all(bug in summary for bug in FIXED)
    assert "regression rate: 0 regression(s) for 2 fix(es) claimed" in summary
