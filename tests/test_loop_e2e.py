"""`doit loop` end to end on the bundled example, typed at a real pseudo-terminal.

The whole promise in one test: the demo model's traces show the missing date
sort and the `fts.rank` error; at the review a person annotates and approves;
the demo fixer's patches are committed one per bug as `fix: {bug_id}`; the
server restarts healthy; the next run finds the first Ron Chinn email in fewer
calls and no longer reports the fixed bugs; `exit` writes the session summary.
Then what the person sees on the way: the live progress line while the traces
and the fix agent run, no doit repr anywhere, the improvement stated per task;
and a second `doit loop` with nothing changed, which asks nothing and keeps
the session summary whole. The loop runs once per module (`looped`).
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

import git
import pytest
import yaml
from project import at_the_review_prompt, copy_project, doit

from mcpipechekr.artifacts import BugReport, ToolsSnapshot, list_runs, read_model, read_trace
from mcpipechekr.artifacts.baseline import Baseline
from mcpipechekr.artifacts.fix_record import FixRecord
from mcpipechekr.artifacts.review import Review
from mcpipechekr.before_after import compare_runs, previous_run
from mcpipechekr.findings.home import Home
from mcpipechekr.findings.lifecycle.store import load_findings
from mcpipechekr.review.bugs import bugs_to_fix

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("test_loop_e2e")]

FIXED = ["GAP-no-date-sort-query-email-database", "BUG-no-such-column-fts-rank-query-email-database"]
NOTE = "prefer a sort_order parameter"


def calls(run_root: Path, task_id: str) -> int:
    (path,) = (run_root / "traces").glob(f"{task_id}__*.json")
    return read_trace(path).totals.tool_calls


@dataclass(frozen=True)
class Looped:
    """The project after `doit baseline`, one `doit loop` (annotate, approve, exit) and a second one."""

    project: Path
    status: int | None
    transcript: str
    again_status: int | None
    again: str
    summary_before_again: str


@pytest.fixture(scope="module")
def looped(tmp_path_factory: pytest.TempPathFactory, emailindex_env: dict[str, str]) -> Looped:
    """Built once for the tests below: the slow part is the loop, not what they read from it."""
    root = tmp_path_factory.mktemp("loop")
    project = copy_project(root)
    # A capable terminal (not TERM=dumb), so the live progress line is drawn as a person sees it.
    env = {**emailindex_env, "COLUMNS": "160", "TERM": "xterm", "NO_COLOR": "1"}
    baseline = doit(project, env, "baseline")
    assert baseline.returncode == 0, baseline.stdout + baseline.stderr
    status, transcript = at_the_review_prompt(  # approved, fixed, restarted healthy: iteration 2
        [sys.executable, "-m", "doit", "loop"],
        project,
        env,
        [f"annotate {NOTE}", "approve", "exit"],
        root / "loop.log",
        timeout=400,
    )
    (_, second) = list_runs(project / "runs")
    summary = second.session_summary.read_text() if second.session_summary.exists() else ""
    again_status, again = at_the_review_prompt(  # nothing changed: no question expected
        [sys.executable, "-m", "doit", "loop"], project, env, [], root / "again.log", timeout=200
    )
    return Looped(project, status, transcript, again_status, again, summary)


def test_loop_review_fix_restart_and_a_better_second_run(looped: Looped) -> None:
    project, status, transcript = looped.project, looped.status, looped.transcript
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


def plain(transcript: str) -> str:
    """The transcript as lines: escape sequences out, each carriage return a line break (the live line)."""
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", transcript).replace("\r", "\n")


def test_what_the_person_sees_progress_no_repr_and_the_improvement_stated(looped: Looped) -> None:
    text = plain(looped.transcript)
    # the Phase 1 line, drawn while the traces ran: counts, elapsed time
    assert re.search(r"^phase 1: \d+/8 done, \d+ running, \d+ failed · \d+:\d\d", text, re.M), text[-3000:]
    # the fix step's line, and each restart after a change as a line of its own
    assert re.search(r"^fix: \d+:\d\d", text, re.M)
    assert "server restarted: healthy, 3 tool(s)" in text
    for both in (looped.transcript, looped.again):
        assert "TaskFailed" not in both and "<function" not in both and "Traceback" not in both
    # one line per task and iteration: the first iteration's lint is listed once
    first_iteration = text.split("iteration 2:", 1)[0]
    assert len(re.findall(r"^(?:\.  |-- )lint$", first_iteration, re.M)) == 1
    # the improvement, stated: the first Ron Chinn email in fewer calls and tokens, after the fixes
    (statement,) = re.findall(r"^  find-first-email-ron-chinn: .*$", text, re.M)
    assert re.match(r"  find-first-email-ron-chinn: 5 → 1 calls, 1,908 → 389 tokens, after fix: ", statement)
    assert all(bug in statement for bug in FIXED)


def test_a_second_loop_with_nothing_changed_asks_nothing_and_erases_nothing(looped: Looped) -> None:
    assert looped.again_status == 0, looped.again[-3000:]
    again = plain(looped.again)
    assert "review> " not in again and "-- review" in again
    assert "loop finished: you ended the loop at the review of" in again
    first, second = list_runs(looped.project / "runs")
    summary = second.session_summary.read_text()
    assert first.run_id in summary and second.run_id in summary
    assert "Nothing: no run of this session has a fix record" not in summary
    assert all(f"| `{bug}` | committed |" in summary for bug in FIXED)
    assert "## Before and after" in summary and "- find-first-email-ron-chinn: 5 → 1 calls" in summary
    # the same summary as the first invocation wrote, but for the time it was written
    assert summary.split("\n", 3)[3] == looped.summary_before_again.split("\n", 3)[3]


def test_before_after_on_the_loops_own_run_folders(looped: Looped) -> None:
    first, second = list_runs(looped.project / "runs")
    assert previous_run(second) == first and previous_run(first) is None
    comparison = compare_runs(first, second)
    assert comparison is not None and sorted(comparison.fixes) == sorted(FIXED)
    changed = {change.task_id: change for change in comparison.changes}
    first_email = changed["find-first-email-ron-chinn"]
    assert (first_email.calls_before, first_email.calls_after) == (5, 1)
    assert first_email.tokens_after is not None and first_email.tokens_before is not None
    assert first_email.tokens_after < first_email.tokens_before
    assert "ron-chinn-history" not in changed  # the same calls and tokens: not listed


# --- evaluation only ----------------------------------------------------------------------------

ONLY_TASKS = ["find-first-email-ron-chinn", "list-office-move-emails-2024"]


@dataclass(frozen=True)
class Evaluated:
    """A project of a server installed without its source (no server.repo) after `doit baseline`, one
    `doit loop` answered at a terminal (`approve`, refused; an annotation; `export`) and a second one."""

    project: Path
    status: int | None
    transcript: str
    again_status: int | None
    again: str


@pytest.fixture(scope="module")
def evaluation_only(tmp_path_factory: pytest.TempPathFactory, emailindex_env: dict[str, str]) -> Evaluated:
    root = tmp_path_factory.mktemp("evaluation-only")
    project = copy_project(root)
    config_path = project / "config.yaml"
    config = yaml.safe_load(config_path.read_text())
    server = config["server"]
    server.pop("repo"), server.pop("repo_template")
    server["cwd"] = "examples/emailindex"  # run where it is installed: nothing to commit fixes in
    config_path.write_text(yaml.safe_dump(config))
    env = {**emailindex_env, "COLUMNS": "160", "TERM": "xterm", "NO_COLOR": "1"}
    select = [arg for task in ONLY_TASKS for arg in ("--task", task)]
    baseline = doit(project, env, "baseline", *select)
    assert baseline.returncode == 0, baseline.stdout + baseline.stderr
    loop = [sys.executable, "-m", "doit", "loop", *select]
    status, transcript = at_the_review_prompt(
        loop,
        project,
        env,
        ["approve", f"annotate {NOTE}", "export"],
        root / "loop.log",
        approve_iterates=False,
    )
    again_status, again = at_the_review_prompt(loop, project, env, [], root / "again.log", timeout=200)
    return Evaluated(project, status, transcript, again_status, again)


def test_a_loop_that_only_evaluates_ends_with_the_bugs_exported_as_issues(evaluation_only: Evaluated) -> None:
    assert evaluation_only.status == 0, evaluation_only.transcript[-3000:]
    text = plain(evaluation_only.transcript)
    (run,) = list_runs(evaluation_only.project / "runs")
    assert "evaluation only: server.repo is not set" in text
    assert f"report → runs/{run.run_id}/report.html" in text and (run.root / "report.html").is_file()
    # the prompt offers what fits: annotate, export, exit; `approve` is refused, saying what to type
    assert "Fixing is off: server.repo is not set" in text
    assert "Commands: `annotate <text>`" in text and "`export`" in text
    assert f"{run.run_id}: not approved, because fixing is off" in text
    assert "type `export` at the prompt" in text
    exported = bugs_to_fix(read_model(run.bug_report, BugReport))
    assert exported and f"exported {len(exported)} bug(s) as issues for the server's authors" in text
    assert f"issues → runs/{run.run_id}/issues/" in text
    review = read_model(run.review, Review)
    assert review.decision == "export" and review.bug_ids == [bug.id for bug in exported]
    assert sorted(path.stem for path in run.issues.iterdir()) == sorted(review.bug_ids)
    assert all(NOTE in path.read_text() for path in run.issues.iterdir())
    assert f"loop finished: you exported {len(exported)} bug(s) as issues → runs/{run.run_id}/issues/" in text
    assert not run.fix_record.exists() and "Traceback" not in text
    assert "review: export by" in run.session_summary.read_text()


def test_a_second_loop_after_an_export_asks_nothing(evaluation_only: Evaluated) -> None:
    assert evaluation_only.again_status == 0, evaluation_only.again[-3000:]
    again = plain(evaluation_only.again)
    assert "review> " not in again and "-- review" in again
    assert "loop finished: you exported" in again and "to decide again: `" in again
