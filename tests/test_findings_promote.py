"""promote: scoring, the two-session rule, thresholds, classes, annotations, bug reports, calibration."""

from __future__ import annotations

import hashlib
import math
import shutil
import sqlite3
from datetime import datetime, timedelta
from pathlib import Path

import orjson
import pytest
from findings_journal import T0, Session, write_journal
from findings_sessions import run

from mcpipechekr.artifacts.bug_report import Bug, BugReport, Evidence, TaskStats
from mcpipechekr.findings.evidence.index import refresh_index
from mcpipechekr.findings.evidence.index_db import open_index
from mcpipechekr.findings.home import Home
from mcpipechekr.findings.lifecycle.store import load_findings
from mcpipechekr.findings.promotion.bugs import register_bug_report
from mcpipechekr.findings.promotion.groups import collect_groups
from mcpipechekr.findings.promotion.promote import promote, score_groups
from mcpipechekr.findings.promotion.scoring import (
    DEFAULT_THRESHOLD,
    calibrate_threshold,
    f1_at,
    recency,
    score,
    wilson_low,
)
from mcpipechekr.findings.server_identity import ServerKey

CORPUS = Path(__file__).parent / "fixtures" / "findings_corpus"
NOW = T0 + timedelta(hours=1)


def failing_sessions(
    home: Home, count: int, *, tool: str = "search", failures: int = 2, oks: int = 2
) -> None:
    """`count` sessions, each with `failures` crashes of `tool` and `oks` good calls."""
    sessions = []
    for number in range(count):
        session = Session(home, f"s{number}", start=T0 + timedelta(minutes=number))
        for _ in range(failures):
            session.error(tool, f"Error executing tool {tool}", code="exception", query="string")
        for _ in range(oks):
            session.ok(tool, query="string")
        sessions.append(session)
    write_journal(home, "20250601T120000-a", *sessions)
    refresh_index(home)


# --- scoring ---------------------------------------------------------------------------------------


def test_wilson_lower_bound_matches_hand_computed_values() -> None:
    # p = 0.3, n = 10, z = 1.96: (p + z²/2n - z·sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n)
    assert wilson_low(3, 10) == pytest.approx(0.107791, abs=1e-6)
    # all failures: n / (n + z²)
    assert wilson_low(1, 1) == pytest.approx(0.206549, abs=1e-6)
    assert wilson_low(10, 10) == pytest.approx(0.722467, abs=1e-6)
    assert wilson_low(0, 50) == 0.0
    assert wilson_low(0, 0) == 0.0


def test_score_combines_wilson_recency_turns_and_blast_radius() -> None:
    value = score(
        failures=3, calls=10, last_seen=NOW - timedelta(days=14), now=NOW, turns=[1, 3, 5], blast_radius=2
    )
    # 0.107791 · 2^-1 · (1 + ln 4) · (1 + ln 2)
    assert value == pytest.approx(0.107791 * 0.5 * (1 + math.log(4)) * (1 + math.log(2)), abs=1e-5)
    assert value == pytest.approx(0.217757, abs=1e-6)
    assert recency(NOW - timedelta(days=28), NOW) == pytest.approx(0.25)
    assert recency(NOW + timedelta(days=1), NOW) == 1.0  # clock skew counts as now
    assert score(failures=0, calls=10, last_seen=NOW, now=NOW, turns=[], blast_radius=1) == 0.0


def test_calibration_prefers_the_higher_of_equally_good_cuts() -> None:
    scored = [(0.01, False), (0.02, False), (0.30, True), (0.50, True)]
    assert calibrate_threshold(scored) == pytest.approx(0.2)  # midpoint of 0.02 and 0.30, one digit
    assert f1_at(scored, 0.2) == 1.0
    with pytest.raises(ValueError):
        calibrate_threshold([(0.1, False)])


def test_default_threshold_is_recomputed_from_the_corpus(tmp_path: Path) -> None:
    home = Home(tmp_path / "corpus-home")
    shutil.copytree(CORPUS / "journals", home.journals)
    shutil.copy(CORPUS / "salt", home.salt_file)
    refresh_index(home)
    labels = orjson.loads((CORPUS / "labels.json").read_bytes())
    truth = {(g["server"], g["tool"], g["template_id"]): g["defect"] for g in labels["groups"]}
    index = open_index(home)
    try:
        scored = score_groups(collect_groups(index), threshold=DEFAULT_THRESHOLD, now=_time(labels["as_of"]))
    finally:
        index.close()
    candidates = [
        (
            item.score,
            truth.get((item.group.key.server, item.group.key.tool, item.group.key.template_id), False),
        )
        for item in scored
        if item.group.sessions >= 2
    ]
    assert sum(label for _, label in candidates) == sum(truth.values())  # every planted defect is a group
    assert calibrate_threshold(candidates) == DEFAULT_THRESHOLD
    assert f1_at(candidates, DEFAULT_THRESHOLD) == 1.0
    promoted = {(i.group.key.server, i.group.key.tool) for i in scored if i.promoted}
    assert ("mail", "read") not in promoted  # the one-session burst scores high but never promotes
    assert ("mail", "list_folders") not in promoted  # fixed a month ago


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text)


# --- the promotion rule ----------------------------------------------------------------------------


def test_one_session_never_promotes_even_at_threshold_zero(home: Home) -> None:
    one = Session(home, "only")
    for _ in range(10):
        one.error("search", "Error executing tool search", code="exception")
    write_journal(home, "20250601T120000-a", one)
    refresh_index(home)
    code, out, _ = run("promote", "--threshold", "0", "--as-of", NOW.isoformat())
    assert code == 0
    assert out.splitlines()[0] == (
        "promoted 0 of 1 issues (0 new, 1 seen in one session only, 0 scored below the threshold 0)"
    )
    assert load_findings(home) == []

    two = Session(home, "second", start=T0 + timedelta(minutes=5))
    two.error("search", "Error executing tool search", code="exception")
    write_journal(home, "20250601T130000-b", two)
    refresh_index(home)
    code, out, _ = run("promote", "--threshold", "0", "--as-of", NOW.isoformat())
    assert code == 0
    assert out.splitlines()[0].startswith("promoted 1 of 1 issues (1 new, 0 seen in one session only")
    (finding,) = load_findings(home)
    assert finding.sessions == 2 and finding.occurrences == 11


def test_threshold_from_flag_then_config_then_default(home: Home) -> None:
    failing_sessions(home, 3)
    code, out, _ = run("promote", "--threshold", "5", "--as-of", NOW.isoformat())
    assert code == 0
    assert "promoted 0 of 1 issues (0 new, 0 seen in one session only, 1 scored below the threshold 5)" in out
    home.config_file.write_text('{\n  "promotion_threshold": 5\n}\n')
    assert "1 scored below the threshold 5" in run("promote", "--as-of", NOW.isoformat())[1]
    home.config_file.write_text('{\n  "promotion_threshold": 0.1\n}\n')
    assert run("promote", "--as-of", NOW.isoformat())[1].startswith("promoted 1 of 1 issues")


@pytest.mark.parametrize("value", ["nan", "inf", "-0.5"])
def test_threshold_must_be_finite_and_non_negative(home: Home, value: str) -> None:
    failing_sessions(home, 2)
    code, _, err = run("promote", "--threshold", value)
    assert code == 2
    assert "--threshold must be a finite number >= 0" in err


def test_config_threshold_error_names_file_line_and_field(home: Home) -> None:
    failing_sessions(home, 2)
    home.config_file.write_text('{\n  "promotion_threshold": -1\n}\n')
    code, _, err = run("promote")
    assert code == 2
    assert str(home.config_file) in err
    assert "line 2, field `promotion_threshold`" in err


def test_promote_without_index_is_evidence_unavailable(home: Home) -> None:
    code, _, err = run("promote")
    assert code == 3
    assert "evidence unavailable" in err


def test_probe_calls_are_never_evidence(home: Home) -> None:
    sessions = []
    for number in range(3):
        session = Session(home, f"p{number}")
        for _ in range(5):
            session.probe_error("search", "Error executing tool search")
        sessions.append(session)
    write_journal(home, "20250601T120000-a", *sessions)
    refresh_index(home)
    result = promote(home, threshold=0, now=NOW)
    assert result.issues == 0 and result.promoted == []


# --- what a finding says ---------------------------------------------------------------------------


def test_finding_fields_codes_class_precedence_and_blast_radius(home: Home) -> None:
    sessions = []
    for number in range(4):
        session = Session(home, f"s{number}", start=T0 + timedelta(minutes=number))
        # one template, several codes: the crash wins over the validation code by precedence
        session.error("search", "Error executing tool search", code="-32602", retryable=True, query="string")
        session.error(
            "search", "Error executing tool search", code="exception", retryable=True, limit="integer"
        )
        session.error(
            "search", "Error executing tool search", code="exception", retryable=True, query="string"
        )
        session.ok("read", id="string")
        session.ok("search", query="string")
        # the same template on a second tool: blast radius 2
        session.error("read", "Error executing tool read", code="exception", retryable=False)
        session.ok("read", id="string")
        sessions.append(session)
    write_journal(home, "20250601T120000-a", *sessions)
    refresh_index(home)
    result = promote(home, threshold=0, now=NOW)
    by_tool = {finding.tool: finding for finding in result.promoted}
    search = by_tool["search"]
    expected_id = hashlib.sha256(f"captured:notes\0search\0{search.template_id}".encode()).hexdigest()[:16]
    assert search.id == f"finding-{expected_id}"
    assert search.err_codes == ["-32602", "exception"]
    assert search.err_code == "exception"
    assert search.defect_class == "unhandled_exception"
    assert search.hint.startswith("Catch the exception")
    assert search.blast_radius == 2 and by_tool["read"].blast_radius == 2
    assert search.occurrences == 12 and search.sessions == 4
    assert search.rate == pytest.approx(12 / 16)
    assert search.retryable is True and by_tool["read"].retryable is False
    assert search.arg_shapes == [{"query": "string"}, {"limit": "integer"}]
    assert search.severity == "critical"  # high base, raised: Wilson bound of 12 in 16 is 0.505
    assert by_tool["read"].severity == "high"
    assert search.state == "open" and search.probe


def test_rebuilt_index_restores_the_same_findings(home: Home) -> None:
    failing_sessions(home, 3)
    promote(home, now=NOW)
    before = run("findings", "--format", "json")[1]
    home.index_db.unlink()
    refresh_index(home)
    again = promote(home, now=NOW)
    assert again.new == []  # already registered
    assert run("findings", "--format", "json")[1] == before


def test_registered_finding_keeps_its_row_when_it_no_longer_qualifies(home: Home) -> None:
    failing_sessions(home, 3)
    (finding,) = promote(home, now=NOW).promoted
    result = promote(home, threshold=100, now=NOW)
    assert result.promoted == [] and result.below_threshold == 1
    assert [f.id for f in load_findings(home)] == [finding.id]


# --- annotations -----------------------------------------------------------------------------------


def test_false_success_annotations_form_their_own_group(home: Home) -> None:
    a, b = Session(home, "a"), Session(home, "b", start=T0 + timedelta(minutes=3))
    quiet = [a.ok("delete", id="string"), b.ok("delete", id="string")]
    a.ok("delete", id="string")
    failed = a.error("delete", "note 7 not found", code="NOT_FOUND")
    write_journal(home, "20250601T120000-a", a, b)
    refresh_index(home)
    for event in quiet:
        assert (
            run(
                "annotate", "--event-id", event, "--kind", "false-success", "--note", "said deleted, was not"
            )[0]
            == 0
        )
    # a false success claimed on a failed call is ambiguous and changes nothing
    run("annotate", "--event-id", failed, "--kind", "false-success", "--note", "wrong target")
    # an event nobody indexed yet: stored, unlinked
    pending = "9b0c86f4-52f5-4a4e-8a3c-0f52c6a1d0e7"
    assert run("annotate", "--event-id", pending, "--kind", "false-success", "--note", "later")[0] == 0
    code, out, _ = run("promote", "--threshold", "0", "--as-of", NOW.isoformat())
    assert code == 0
    assert "annotations: 2 linked, 1 unknown, 1 ambiguous" in out
    false_success = [f for f in load_findings(home) if f.defect_class == "false_success"]
    (finding,) = false_success
    assert finding.tool == "delete" and finding.occurrences == 2 and finding.sessions == 2
    assert finding.err_codes == [] and finding.retryable is None
    with sqlite3.connect(home.lifecycle_db) as conn:
        statuses = dict(conn.execute("SELECT event_id, status FROM annotations").fetchall())
    assert statuses[failed] == "ambiguous" and statuses[pending] == "unknown"


def test_unknown_annotation_links_after_its_journal_is_indexed(home: Home) -> None:
    a, b = Session(home, "a"), Session(home, "b")
    first = a.ok("delete")
    write_journal(home, "20250601T120000-a", a)
    refresh_index(home)
    later = b.ok("delete")
    run("annotate", "--event-id", first, "--kind", "false-success", "--note", "nothing deleted")
    run("annotate", "--event-id", later.upper(), "--kind", "false-success", "--note", "nothing deleted")
    result = promote(home, threshold=0, now=NOW)
    assert result.annotations == {"linked": 1, "unknown": 1} and result.promoted == []
    write_journal(home, "20250601T130000-b", b)
    refresh_index(home)
    result = promote(home, threshold=0, now=NOW)
    assert result.annotations == {"linked": 2}
    assert [f.defect_class for f in result.promoted] == ["false_success"]


def test_expected_annotation_takes_a_call_out_of_its_group(home: Home) -> None:
    a, b = Session(home, "a"), Session(home, "b")
    first = a.error("read", "note 12 not found", code="NOT_FOUND")
    second = b.error("read", "note 40 not found", code="NOT_FOUND")
    write_journal(home, "20250601T120000-a", a, b)
    refresh_index(home)
    run("annotate", "--event-id", second, "--kind", "expected", "--note", "asked for a deleted note")
    result = promote(home, threshold=0, now=NOW)
    assert result.promoted == [] and result.single_session == 1
    run("annotate", "--event-id", first, "--kind", "workaround", "--note", "listed notes first")
    assert promote(home, threshold=0, now=NOW).annotations == {"linked": 2}
    # expected and workaround on the same call contradict each other: neither counts
    run("annotate", "--event-id", second, "--kind", "workaround", "--note", "retried")
    result = promote(home, threshold=0, now=NOW)
    assert result.annotations == {"linked": 1, "ambiguous": 2}
    assert len(result.promoted) == 1 and result.promoted[0].occurrences == 2


# --- Phase 2 bug reports ---------------------------------------------------------------------------


def _report(run_id: str, *, occurrences: int = 2, secret: str = "hunter2-secret") -> BugReport:
    return BugReport(
        run_id=run_id,
        phase1_provider="demo",
        evaluated_at=T0,
        bugs=[
            Bug(
                id="BUG-search-crash",
                type="bug",
                severity="high",
                source="analyzer",
                tool="search",
                trigger=f"calling `search` with {{'query': '{secret}'}}",
                observed="error: Error executing tool search",
                expected="an answer",
                token_cost_observed=10,
                token_cost_optimal=5,
                token_cost_of_gap=5,
                occurrences=occurrences,
                task_ids=["t1"],
                evidence=[
                    Evidence(task_id="t1", trace="traces/a.json"),
                    Evidence(task_id="t1", trace="traces/b.json"),
                ],
                details={"error_text": "Error executing tool search", "arguments": {"query": secret}},
            ),
            Bug(
                id="COR-totals-wrong",
                type="correctness",
                severity="high",
                source="llm",
                trigger="summing",
                observed="wrong",
                expected="right",
                token_cost_observed=1,
                token_cost_optimal=1,
                token_cost_of_gap=0,
            ),
        ],
        tasks=[
            TaskStats(
                task_id="t1",
                runs=4,
                successes=2,
                success_rate=0.5,
                wilson_low=0.15,
                wilson_high=0.85,
                pass_at_k=0.5,
                pass_hat_k=0.5,
            )
        ],
    )


NOTES = ServerKey("notes", "script:/srv/notes.py")


def test_bug_report_entries_become_findings_keyed_by_bug_id_and_server(home: Home) -> None:
    found = register_bug_report(home, _report("run-20250601-001"), server=NOTES)
    crash, totals = found
    key = b"bug:notes\0script:/srv/notes.py\0BUG-search-crash"
    assert crash.id == "finding-" + hashlib.sha256(key).hexdigest()[:16]
    assert crash.origin == "bug_report" and crash.bug_id == "BUG-search-crash"
    assert crash.defect_class == "unhandled_exception"  # read from the error text, which is not kept
    assert crash.arg_shapes == [{"query": "string"}]
    assert (crash.occurrences, crash.sessions, crash.rate) == (2, 2, 0.5)
    assert crash.severity == "high" and crash.probe
    # no tool: nothing can probe a fix, so severity is capped and closure is manual
    assert totals.defect_class == "correctness" and totals.severity == "medium" and not totals.probe

    register_bug_report(home, _report("run-20250601-001"), server=NOTES)  # the same run again
    assert {f.id: f.occurrences for f in load_findings(home)}[crash.id] == 2
    register_bug_report(home, _report("run-20250602-001", occurrences=1), server=NOTES)
    stored = {f.id: f for f in load_findings(home)}[crash.id]
    assert (stored.occurrences, stored.sessions) == (3, 4)
    assert b"hunter2-secret" not in home.lifecycle_db.read_bytes()
    other = register_bug_report(home, _report("run-20250602-002"), server=ServerKey("notes", "script:/x.py"))
    assert crash.id not in {finding.id for finding in other}  # the same bug id on another server
