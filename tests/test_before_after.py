"""Before and after a fix: the run chain through fix commits, the per-task statements, the session summary.

Run folders are written as the steps leave them (manifest.json, bug_report.json,
fix.json, through the artifact models) with task names and figures of a server
of its own, so nothing here leans on the bundled example; the example's own
figures are checked on a real loop in test_loop_e2e.py.
"""

from __future__ import annotations

import io
import re
from datetime import UTC, datetime
from pathlib import Path

from rich.console import Console

from mcpipechekr.artifacts import BugReport, FixRecord, Manifest, RunDir, write_model
from mcpipechekr.artifacts.bug_report import TaskStats
from mcpipechekr.artifacts.fix_record import BugFix
from mcpipechekr.artifacts.manifest import PhaseProviders, ServerRef
from mcpipechekr.before_after import compare_runs, previous_run, run_chain
from mcpipechekr.report import REPORT_FILE
from mcpipechekr.steps.report import session_report_step
from mcpipechekr.steps.summary import summary_step

T0 = datetime(2026, 3, 4, 5, 6, tzinfo=UTC)
FIRST_SHA = "a" * 40
FIX_ONE, FIX_TWO = "b" * 40, "c" * 40
OTHER_SHA = "d" * 40


def stats(task_id: str, calls: float, tokens: float, *, successes: int = 2, runs: int = 2) -> TaskStats:
    return TaskStats(
        task_id=task_id,
        runs=runs,
        successes=successes,
        success_rate=successes / runs,
        wilson_low=0.0,
        wilson_high=1.0,
        pass_at_k=1.0,
        pass_hat_k=1.0,
        provider="demo",
        mean_calls=calls,
        mean_tokens_observed=tokens,
        tokens_source="estimated",
    )


def write_run(
    runs: Path,
    run_id: str,
    sha: str,
    tasks: list[TaskStats],
    *,
    committed: dict[str, str] | None = None,
    dirty: bool = False,
) -> RunDir:
    """A run folder: its manifest (traced on `sha`), its bug report and, with `committed`, its fix.json."""
    run = RunDir(runs / run_id)
    run.root.mkdir(parents=True)
    write_model(
        run.manifest,
        Manifest(
            run_id=run_id,
            started_at=T0,
            harness_version="0.1.0",
            mcp_server_sha=sha,
            mcp_server_dirty=dirty,
            task_file_hash="sha256:" + "0" * 64,
            providers=PhaseProviders(phase1="demo", phase2="demo", phase3="demo"),
            config_hash="sha256:" + "1" * 64,
            server=ServerRef(name="tickets", transport="stdio", command="python tickets.py"),
            task_ids=[one.task_id for one in tasks],
        ).finished("completed", at=T0),
    )
    report = BugReport(run_id=run_id, phase1_provider="demo", evaluated_at=T0, tasks=tasks)
    write_model(run.bug_report, report)
    if committed is not None:
        write_model(
            run.fix_record,
            FixRecord(
                run_id=run_id,
                bug_report_hash="sha256:" + "2" * 64,
                agent="demo",
                repo=str(runs.parent / "server"),
                base_commit=sha,
                started_at=T0,
                finished_at=T0,
                bugs=[
                    BugFix(bug_id=bug, status="committed", iterations=1, commit=commit)
                    for bug, commit in committed.items()
                ]
                + [BugFix(bug_id="EFF-left-alone", status="unresolved", iterations=5, reason="no promise")],
            ),
        )
    return run


def two_runs(tmp_path: Path) -> tuple[RunDir, RunDir]:
    runs = tmp_path / "runs"
    first = write_run(
        runs,
        "run-20260304-001",
        FIRST_SHA,
        [
            stats("oldest-open-ticket", 6, 2_400),
            stats("count-closed", 1, 150),
            stats("flaky", 2, 500, successes=0),
        ],
        committed={"GAP-no-sort-list-tickets": FIX_ONE, "BUG-crash-on-empty-filter": FIX_TWO},
    )
    second = write_run(
        runs,
        "run-20260304-002",
        FIX_TWO,
        [stats("oldest-open-ticket", 1, 420.4), stats("count-closed", 1, 150), stats("flaky", 2, 500)],
    )
    return first, second


def test_the_run_before_is_the_one_whose_last_fix_commit_this_run_was_traced_on(tmp_path: Path) -> None:
    first, second = two_runs(tmp_path)
    unrelated = write_run(tmp_path / "runs", "run-20260304-003", OTHER_SHA, [stats("count-closed", 1, 150)])
    assert previous_run(second) == first
    assert previous_run(first) is None
    assert previous_run(unrelated) is None  # a commit made by hand between runs breaks the chain
    assert run_chain([second]) == [first, second]
    assert run_chain([first, second]) == [first, second]


def test_a_run_on_a_dirty_tree_is_not_compared(tmp_path: Path) -> None:
    first, _ = two_runs(tmp_path)
    dirty = write_run(tmp_path / "runs", "run-20260304-003", FIX_TWO, [stats("flaky", 2, 500)], dirty=True)
    assert previous_run(dirty) is None
    assert run_chain([dirty]) == [dirty]
    assert first.run_id not in [run.run_id for run in run_chain([dirty])]


def test_each_changed_task_is_one_statement_naming_the_fixes_between(tmp_path: Path) -> None:
    first, second = two_runs(tmp_path)
    comparison = compare_runs(first, second)
    assert comparison is not None
    assert comparison.fixes == ["GAP-no-sort-list-tickets", "BUG-crash-on-empty-filter"]
    assert comparison.unchanged == 1  # count-closed: same calls, tokens and success
    statements = [change.statement for change in comparison.changes]
    assert statements == [
        "oldest-open-ticket: 6 → 1 calls, 2,400 → 420 tokens, "
        "after fix: GAP-no-sort-list-tickets, BUG-crash-on-empty-filter",
        "flaky: success 0% → 100%, after fix: GAP-no-sort-list-tickets, BUG-crash-on-empty-filter",
    ]
    oldest = comparison.changes[0]
    assert (oldest.calls_before, oldest.calls_after, oldest.tokens_after) == (6, 1, 420.4)
    assert comparison.lines()[0] == "before/after run-20260304-001 → run-20260304-002; 1 task(s) unchanged:"
    assert comparison.model_dump()["changes"][0]["task_id"] == "oldest-open-ticket"  # a model for any view


def test_no_change_and_no_report_say_so(tmp_path: Path) -> None:
    first, second = two_runs(tmp_path)
    assert compare_runs(first, first) is not None
    assert compare_runs(first, first).lines() == [  # type: ignore[union-attr]
        "before/after run-20260304-001 → run-20260304-001: no task changed its calls, tokens or success"
    ]
    second.bug_report.unlink()
    assert compare_runs(first, second) is None


def test_the_summary_of_a_later_invocation_keeps_the_earlier_runs_fixes(tmp_path: Path) -> None:
    """What a second `doit loop` that only ends the session writes: both runs, both fixes, before/after."""
    first, second = two_runs(tmp_path)
    quiet = Console(file=open(tmp_path / "out.txt", "w"))  # noqa: SIM115
    path = summary_step(None, [second], out=quiet)
    text = path.read_text()
    assert f"covering 2 run(s): {first.run_id}, {second.run_id}." in text
    assert "Nothing: no run of this session has a fix record" not in text
    assert "2 of 3 bug(s) committed" in text
    assert "| `GAP-no-sort-list-tickets` | committed |" in text
    assert "## Before and after" in text
    assert "- oldest-open-ticket: 6 → 1 calls, 2,400 → 420 tokens, after fix: GAP-no-sort-list-" in text


def test_the_loop_writes_its_sessions_report_only_when_the_chain_leaves_a_run_out(tmp_path: Path) -> None:
    """The evaluation's report.html follows the fix commits; a session the chain breaks gets its own."""
    first, second = two_runs(tmp_path)
    out = io.StringIO()
    quiet = Console(file=out, width=200)
    assert session_report_step([first, second], out=quiet) is None  # the evaluation's report covers both
    assert out.getvalue() == ""
    dirty = write_run(tmp_path / "runs", "run-20260304-003", FIX_TWO, [stats("flaky", 2, 500)], dirty=True)
    path = session_report_step([first, dirty], out=quiet)
    assert path == dirty.root / REPORT_FILE
    page = path.read_text()
    assert re.findall(r'<section class="run" id="run-[^"]+" data-run="([^"]+)"', page) == [
        first.run_id,
        dirty.run_id,
    ]
    assert out.getvalue().startswith("report → ") and f"{dirty.run_id}/{REPORT_FILE}" in out.getvalue()
