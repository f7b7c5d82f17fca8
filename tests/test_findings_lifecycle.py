"""The lifecycle state machine on a real lifecycle.db: closure, reopening, replays, claims, sizing."""

from __future__ import annotations

import sqlite3
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from mcpipechekr.artifacts.bug_report import Bug, BugReport, TaskStats
from mcpipechekr.artifacts.findings import Finding
from mcpipechekr.check.cases import Case, Expect
from mcpipechekr.config import ServerConfig
from mcpipechekr.errors import UserError
from mcpipechekr.findings.home import Home
from mcpipechekr.findings.lifecycle.states import (
    Transition,
    VerificationConflict,
    VerificationOrigin,
    claim_fix,
    close_manually,
    current_state,
    last_probe,
    probe_followed,
    record_verification,
    regression_stats,
    standings,
)
from mcpipechekr.findings.promotion.bugs import bug_finding_id, register_bug_report
from mcpipechekr.findings.server_identity import ServerKey
from mcpipechekr.findings.verification.credit import changed_files, credit_binding
from mcpipechekr.findings.verification.probes import attempts_for, detection_chance, probe_kind
from mcpipechekr.findings.verification.reverify import claim_bug_fix, verify_from_bug_report

FID = "finding-00112233445566aa"
SERVER = ServerKey("notes", "script:/srv/notes/server.py")


def verify(
    home: Home, run: str, passed: bool, binding: str = "bind-a", origin: VerificationOrigin = "cli"
) -> Transition:
    return record_verification(
        home, FID, run_id=run, passed=passed, binding=binding, probe="m.yaml#c", origin=origin, server=SERVER
    )


def test_a_finding_without_history_is_open_and_nothing_is_created(home: Home) -> None:
    assert current_state(home, FID) == ("open", 0)
    assert not home.lifecycle_db.exists()


def test_three_consecutive_greens_close_and_each_step_is_recorded(home: Home) -> None:
    claim_fix(home, FID, "abc123")
    assert current_state(home, FID) == ("fix-claimed", 0)
    moves = [verify(home, f"run-{n}", True) for n in range(3)]
    assert [(m.from_state, m.to_state, m.streak) for m in moves] == [
        ("fix-claimed", "verifying", 1),
        ("verifying", "verifying", 2),
        ("verifying", "closed", 3),
    ]
    assert current_state(home, FID) == ("closed", 3)
    with sqlite3.connect(home.lifecycle_db) as db:
        kinds = [row[0] for row in db.execute("SELECT kind FROM lifecycle_events ORDER BY seq")]
        rows = db.execute("SELECT COUNT(*), SUM(credited) FROM verifications").fetchone()
    assert kinds == ["claim", "verification", "verification", "verification"]
    assert rows == (3, 3)


def test_red_on_open_or_claimed_leaves_it_fix_claimed_without_a_streak(home: Home) -> None:
    first = verify(home, "r1", False)
    assert (first.from_state, first.to_state, first.streak, first.reopened) == (
        "open",
        "fix-claimed",
        0,
        False,
    )
    second = verify(home, "r2", False)
    assert (second.from_state, second.to_state) == ("fix-claimed", "fix-claimed")


def test_red_resets_the_streak_and_reopens_a_verifying_finding(home: Home) -> None:
    verify(home, "g1", True)
    verify(home, "g2", True)
    red = verify(home, "r1", False)
    assert (red.from_state, red.to_state, red.streak, red.reopened, red.regression) == (
        "verifying",
        "open",
        0,
        True,
        False,
    )
    again = verify(home, "g3", True)
    assert (again.to_state, again.streak) == ("verifying", 1)


def test_red_on_a_closed_finding_is_a_regression_and_counts_in_the_rate(home: Home) -> None:
    claim_fix(home, FID, "c1")
    for n in range(3):
        verify(home, f"g{n}", True)
    green_on_closed = verify(home, "g-extra", True)
    assert (green_on_closed.to_state, green_on_closed.streak) == ("closed", 4)
    red = verify(home, "r1", False)
    assert (red.from_state, red.to_state, red.regression) == ("closed", "open", True)
    claim_fix(home, "finding-ffffffffffffffff", "c2")
    stats = regression_stats(home)
    assert (stats.fixes, stats.regressions, stats.rate) == (2, 1, 0.5)
    later = regression_stats(home, since=datetime.now(UTC) + timedelta(hours=1))
    assert (later.fixes, later.regressions, later.rate) == (0, 0, None)


def test_a_green_under_another_binding_starts_a_fresh_streak(home: Home) -> None:
    verify(home, "g1", True, "bind-a")
    verify(home, "g2", True, "bind-a")
    fresh = verify(home, "g3", True, "bind-b")
    assert (fresh.to_state, fresh.streak, fresh.fresh_streak) == ("verifying", 1, True)
    verify(home, "g4", True, "bind-b")
    assert verify(home, "g5", True, "bind-b").to_state == "closed"


def test_replaying_a_run_adds_no_credit_and_a_conflicting_result_is_refused(home: Home) -> None:
    verify(home, "run-1", True)
    replay = verify(home, "run-1", True)
    assert replay.replayed and (replay.to_state, replay.streak) == ("verifying", 1)
    assert current_state(home, FID) == ("verifying", 1)
    with pytest.raises(VerificationConflict, match="already recorded as green"):
        verify(home, "run-1", False)
    with pytest.raises(VerificationConflict, match="another credit binding"):
        verify(home, "run-1", True, "bind-b")
    assert current_state(home, FID) == ("verifying", 1)


def test_runs_started_through_serve_are_recorded_and_move_nothing(home: Home) -> None:
    greens = [verify(home, f"serve-{n}", True, origin="serve") for n in range(4)]
    assert all(g.advisory and (g.from_state, g.to_state, g.streak) == ("open", "open", 0) for g in greens)
    assert current_state(home, FID) == ("open", 0)
    verify(home, "cli-1", True)
    verify(home, "loop-1", True, origin="loop")
    red = verify(home, "serve-red", False, origin="serve")
    assert (red.to_state, red.streak, red.regression, red.reopened) == ("verifying", 2, False, False)
    assert verify(home, "serve-5", True, origin="serve").to_state == "verifying"  # not a third green
    assert verify(home, "loop-2", True, origin="loop").to_state == "closed"
    red_on_closed = verify(home, "serve-red-2", False, origin="serve")
    assert (red_on_closed.to_state, red_on_closed.regression) == ("closed", False)
    assert current_state(home, FID) == ("closed", 3)
    assert regression_stats(home).regressions == 0
    with sqlite3.connect(home.lifecycle_db) as db:
        rows = db.execute("SELECT origin, passed, credited FROM verifications ORDER BY rowid").fetchall()
        events = db.execute("SELECT detail FROM lifecycle_events WHERE kind = 'verification'").fetchall()
    assert rows == [("serve", 1, 0)] * 4 + [
        ("cli", 1, 1),
        ("loop", 1, 1),
        ("serve", 0, 0),
        ("serve", 1, 0),
        ("loop", 1, 1),
        ("serve", 0, 0),
    ]
    assert events == [("cli-1",), ("loop-1",), ("loop-2",)]
    replay = verify(home, "serve-0", True, origin="serve")
    assert replay.replayed and replay.advisory


def test_the_loop_follows_only_a_case_a_credited_run_used(home: Home) -> None:
    record_verification(
        home,
        FID,
        run_id="s1",
        passed=True,
        binding="b",
        probe="/h/cases/x.yaml#c",
        origin="serve",
        server=SERVER,
    )
    assert last_probe(home, FID) is None and not probe_followed(home, "/h/cases/x.yaml#c")
    record_verification(
        home, FID, run_id="p1", passed=True, binding="b", probe="/p/m.yaml#c", origin="cli", server=SERVER
    )
    record_verification(
        home,
        FID,
        run_id="s2",
        passed=True,
        binding="b",
        probe="/h/cases/x.yaml#c",
        origin="serve",
        server=SERVER,
    )
    assert last_probe(home, FID) == "/p/m.yaml#c"
    assert probe_followed(home, "/p/m.yaml#c") and not probe_followed(home, "/h/cases/x.yaml#c")


def test_claiming_the_same_commit_twice_changes_nothing(home: Home) -> None:
    verify(home, "g1", True)
    claim_fix(home, FID, "abc")
    again = claim_fix(home, FID, "abc")
    assert again.replayed
    assert standings(home)[FID].state == "fix-claimed"


def _finding(probe: bool, tool: str | None = "lookup") -> Finding:
    return Finding(
        id=FID,
        origin="captured",
        server="notes",
        tool=tool,
        defect_class="other",
        hint="Fix it.",
        severity="medium",
        probe=probe,
        rate=0.5,
        score=0.2,
        occurrences=4,
        sessions=2,
        blast_radius=1,
    )


def test_only_a_finding_without_a_probe_closes_by_hand(home: Home) -> None:
    with pytest.raises(UserError, match="has a probe"):
        close_manually(home, _finding(probe=True), "fixed in 1.2")
    with pytest.raises(UserError, match="needs a note"):
        close_manually(home, _finding(probe=False, tool=None), "  ")
    moved = close_manually(home, _finding(probe=False, tool=None), "docs rewritten")
    assert (moved.from_state, moved.to_state) == ("open", "closed")
    with sqlite3.connect(home.lifecycle_db) as db:
        assert db.execute("SELECT kind, detail FROM lifecycle_events").fetchall() == [
            ("manual-close", "docs rewritten")
        ]


@pytest.mark.parametrize(
    ("rate", "kind", "expected"),
    [
        (1.0, "degradation", 3),  # certain failure: the minimum
        (0.5, "degradation", 5),  # ln 0.05 / ln 0.5 = 4.32
        (0.3, "degradation", 9),  # ln 0.05 / ln 0.7 = 8.40
        (0.1, "degradation", 29),  # ln 0.05 / ln 0.9 = 28.43
        (0.01, "degradation", 100),  # 298.07, capped
        (0.1, "error_honesty", 20),  # 28.43, capped lower
        (0.0, "degradation", 100),  # unknown rarity: the cap
        (None, "error_honesty", 20),
    ],
)
def test_attempts_reach_95_percent_between_the_minimum_and_the_cap(rate, kind, expected) -> None:
    assert attempts_for(rate, kind) == expected


def test_sized_attempts_see_a_failure_with_95_percent_unless_capped() -> None:
    assert detection_chance(0.3, attempts_for(0.3, "degradation")) >= 0.95
    assert detection_chance(0.3, 8) < 0.95
    assert detection_chance(0.01, 100) == pytest.approx(1 - 0.99**100)
    assert probe_kind("false_success") == "error_honesty"
    assert probe_kind("unhandled_exception") == "degradation"


def test_the_binding_follows_server_bytes_not_case_formatting(tmp_path: Path) -> None:
    script = tmp_path / "server.py"
    script.write_text("print('v1')\n")
    server = ServerConfig(name="s", command=sys.executable, args=[str(script), "--flag"], cwd=str(tmp_path))
    case = Case(id="c", tool="lookup", arguments={"a": 1, "b": 2}, expect=Expect())
    reordered = Case.model_validate(
        {"expect": {"outcome": "ok"}, "arguments": {"b": 2, "a": 1}, "tool": "lookup", "id": "c"}
    )
    first = credit_binding(case, manifest_version=1, timeout_s=5, server=server)
    assert (
        credit_binding(reordered, manifest_version=1, timeout_s=5, server=server).fingerprint
        == first.fingerprint
    )
    assert str(script.resolve()) in first.files
    script.write_text("print('v2')\n")
    edited = credit_binding(case, manifest_version=1, timeout_s=5, server=server)
    assert edited.fingerprint != first.fingerprint
    assert changed_files(first, edited) == [str(script.resolve())]
    for other in (
        credit_binding(case, manifest_version=1, timeout_s=6, server=server),
        credit_binding(
            case.model_copy(update={"arguments": {"a": 1}}), manifest_version=1, timeout_s=5, server=server
        ),
        credit_binding(case, manifest_version=2, timeout_s=5, server=server),
    ):
        assert other.fingerprint != edited.fingerprint
    http = ServerConfig(name="h", url="http://127.0.0.1:9/mcp", headers={"Authorization": "Bearer s3cret"})
    remote = credit_binding(case, manifest_version=1, timeout_s=5, server=http)
    assert remote.files == {} and "s3cret" not in remote.model_dump_json()


def _report(run: str, bug_ids: list[str], tasks: tuple[str, ...] = ("find-mail", "count-mail")) -> BugReport:
    bugs = [
        Bug(
            id=bug_id,
            type="efficiency",
            severity="high",
            source="analyzer",
            tool="search",
            trigger="searching by date",
            observed="paged through every window",
            expected="one call with a date filter",
            token_cost_observed=900,
            token_cost_optimal=100,
            token_cost_of_gap=800,
            task_ids=[tasks[0]],
        )
        for bug_id in bug_ids
    ]
    stats = [
        TaskStats(
            task_id=task,
            runs=2,
            successes=2,
            success_rate=1.0,
            wilson_low=0.34,
            wilson_high=1.0,
            pass_at_k=1.0,
            pass_hat_k=1.0,
        )
        for task in tasks
    ]
    return BugReport(
        run_id=run, phase1_provider="demo", evaluated_at=datetime.now(UTC), bugs=bugs, tasks=stats
    )


def test_the_loop_claims_a_bug_fix_and_later_runs_close_it_or_report_a_regression(home: Home) -> None:
    bug = "EFF-no-date-filter-search"
    register_bug_report(home, _report("run-20250601-001", [bug]), server=SERVER)
    finding_id = bug_finding_id(bug, SERVER)
    assert current_state(home, finding_id) == ("open", 0)
    untouched = verify_from_bug_report(home, _report("run-20250601-002", [bug]), server=SERVER)
    assert untouched.transitions == [] and untouched.summary_lines() == []  # open: not followed yet

    assert claim_bug_fix(home, bug, "c0ffee", SERVER).to_state == "fix-claimed"
    first = verify_from_bug_report(
        home, _report("run-20250601-003", []), server=SERVER, server_revision="c0ffee"
    )
    assert [(t.finding_id, t.to_state, t.streak) for t in first.transitions] == [(finding_id, "verifying", 1)]
    assert first.summary_lines() == [
        "findings verified: 1 (1 green, 0 red)",
        f"  {finding_id}: fix-claimed -> verifying",
    ]
    replay = verify_from_bug_report(
        home, _report("run-20250601-003", []), server=SERVER, server_revision="c0ffee"
    )
    assert replay.transitions[0].replayed and current_state(home, finding_id) == ("verifying", 1)
    other_tasks = verify_from_bug_report(
        home, _report("run-20250601-004", [], tasks=("find-mail",)), server=SERVER, server_revision="c0ffee"
    )
    assert other_tasks.transitions[0].fresh_streak and current_state(home, finding_id) == ("verifying", 1)
    streaks = [
        verify_from_bug_report(home, _report(run, []), server=SERVER, server_revision="c0ffee")
        .transitions[0]
        .streak
        for run in ("run-20250601-005", "run-20250601-006", "run-20250601-007")
    ]
    assert streaks == [1, 2, 3]  # back on the full task set: a streak of its own
    assert current_state(home, finding_id) == ("closed", 3)

    back = verify_from_bug_report(
        home, _report("run-20250601-008", [bug]), server=SERVER, server_revision="beef00"
    )
    (regression,) = back.regressions
    assert (regression.from_state, regression.to_state, regression.reason) == (
        "closed",
        "open",
        "bug-reported-again",
    )
    assert (
        back.summary_lines()[1]
        == f"  REGRESSION {finding_id}: closed, failed again (reason=bug-reported-again)"
    )
    assert regression_stats(home).rate == 1.0
    claim_bug_fix(home, bug, "f00d", SERVER)
    idle = verify_from_bug_report(home, _report("run-20250601-009", [], tasks=()), server=SERVER)
    assert idle.transitions == [] and idle.skipped == {finding_id: "the run evaluated no task"}
    assert current_state(home, finding_id) == ("fix-claimed", 0)
