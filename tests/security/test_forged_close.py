"""No finding is closed by a forged verification: an agent's case a person did not read, or another server.

Two attacks, each through the real parts: `mcpipechekr serve` over stdio driven
by the MCP SDK's client, the CLI as a person runs it (on a pseudo-terminal
where it asks), the loop's reruns, a real lifecycle.db and real server
processes.

1. Through `serve`, an agent writes the case of a finding so that it expects
   the error the still-broken server gives; the person runs the printed
   `mcpipechekr verify` once without reading the case; the loop reruns it. The
   finding must not move: a case counts only once a person has read and
   accepted it, and the acceptance shows the trap.
2. A finding of `otherserver` in a home shared with `victim`: no run of
   `victim` (the loop's judgement by its bug report, a case rerun, a person's
   `verify`) may count for it.
"""

from __future__ import annotations

import shutil
import sqlite3
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml
from findings_sessions import LOOKUP, cli, register_lookup
from serve_project import FINDINGS_SERVER, bound_project, session
from terminal import at_terminal

from mcpipechekr.artifacts.bug_report import Bug, BugReport, TaskStats
from mcpipechekr.config import load_config
from mcpipechekr.findings.home import Home
from mcpipechekr.findings.lifecycle.states import claim_fix, current_state
from mcpipechekr.findings.lifecycle.trust import owners
from mcpipechekr.findings.promotion.bugs import bug_finding_id, register_bug_report
from mcpipechekr.findings.server_identity import server_key
from mcpipechekr.findings.verification.reverify import (
    claim_bug_fix,
    verify_from_bug_report,
    verify_registered_probes,
)

EXPECTS_THE_ERROR = {"outcome": "error"}


def counted_rows(home: Home, finding_id: str) -> int:
    with sqlite3.connect(home.lifecycle_db) as db:
        return db.execute(
            "SELECT COUNT(*) FROM lifecycle_events WHERE finding_id = ? AND kind = 'verification'",
            (finding_id,),
        ).fetchone()[0]


def test_an_agents_case_that_expects_the_error_never_closes_the_finding(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = bound_project(tmp_path, home, broken=True)
    generated, advisory = session(
        project,
        [
            (
                "generate_case",
                {
                    "finding_id": LOOKUP,
                    "confirm_read_only": True,
                    "arguments": {"key": "k1"},
                    "expect": EXPECTS_THE_ERROR,
                },
            ),
            ("verify_fix", {"finding_id": LOOKUP}),
        ],
    )
    assert not generated.is_error and "outcome: error" in generated.text
    assert f"{LOOKUP}: green (" in advisory.text and "advisory, not credited" in advisory.text
    case_file = home.cases / f"{LOOKUP}.yaml"
    claim_fix(home, LOOKUP, "c0ffee")  # the agent's fix, committed: the server is still broken

    # The person runs the printed command once in the project folder (config.yaml's server), without
    # reading the case: green, and counted for nothing.
    monkeypatch.chdir(project.root)
    broken_server = load_config(project.config).server
    command = ["verify", "--finding", LOOKUP, "--case", LOOKUP, "--manifest", str(case_file)]
    ran = cli(*command)
    assert ran.exit_code == 0, ran.output
    assert "not counted: no person accepted this case yet" in ran.output
    assert f"mcpipechekr verify --accept-case --finding {LOOKUP}" in ran.output

    # Two loop runs rerun nothing they could count.
    for run in ("run-20260101-001", "run-20260101-002"):
        outcome = verify_registered_probes(home, broken_server, run_id=run)
        assert not outcome.transitions
        assert "is proposed, no person accepted it" in outcome.skipped[LOOKUP]
    assert current_state(home, LOOKUP) == ("fix-claimed", 0)
    assert counted_rows(home, LOOKUP) == 0

    # Accepting it is a person's decision: refused without a terminal, and the case is shown with its trap.
    scripted = cli(*command, "--accept-case")
    assert scripted.exit_code == 2 and "run this command at a terminal" in scripted.output
    declined, shown = at_terminal([*command, "--accept-case"], answer="n", cwd=project.root)
    assert declined == 1, shown
    assert "the call of lookup EXPECTS AN ERROR: a server that still fails can pass this case" in shown
    assert "lookup: returns an error" in shown and "key: k1" in shown
    assert "not accepted" in shown
    outcome = verify_registered_probes(home, broken_server, run_id="run-20260101-003")
    assert not outcome.transitions and current_state(home, LOOKUP) == ("fix-claimed", 0)


def test_an_accepted_case_counts_and_closes_on_three_greens(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The honest path still closes: the person accepts a case that expects the fixed answer."""
    project = bound_project(tmp_path, home)
    (generated,) = session(
        project,
        [("generate_case", {"finding_id": LOOKUP, "confirm_read_only": True, "arguments": {"key": "k1"}})],
    )
    assert not generated.is_error
    server = load_config(project.config).server
    case_file = home.cases / f"{LOOKUP}.yaml"
    command = ["verify", "--accept-case", "--finding", LOOKUP, "--manifest", str(case_file)]
    accepted, shown = at_terminal(command, answer="y", cwd=project.root)  # config.yaml's server
    assert accepted == 0, shown
    assert "EXPECTS AN ERROR" not in shown and "lookup: returns a result" in shown
    assert "open -> verifying, streak 1/3" in shown
    monkeypatch.chdir(project.root)  # the loop runs in the project folder
    for n, run in enumerate(("run-20260101-001", "run-20260101-002"), start=2):
        outcome = verify_registered_probes(home, server, run_id=run)
        assert [(t.finding_id, t.streak) for t in outcome.transitions] == [(LOOKUP, n)]
    assert current_state(home, LOOKUP) == ("closed", 3)


def _server_copy(tmp_path: Path, name: str) -> list[str]:
    """A copy of the findings server in a folder of its own: another server's source."""
    folder = tmp_path / name
    folder.mkdir()
    shutil.copy(FINDINGS_SERVER, folder / "server.py")
    return [sys.executable, str(folder / "server.py")]


def _report(run: str, bug_ids: list[str]) -> BugReport:
    bugs = [
        Bug(
            id=bug_id,
            type="efficiency",
            severity="medium",
            source="analyzer",
            tool="lookup",
            trigger="t",
            observed="o",
            expected="e",
            token_cost_observed=10,
            token_cost_optimal=5,
            token_cost_of_gap=5,
            task_ids=["find"],
        )
        for bug_id in bug_ids
    ]
    stats = [
        TaskStats(
            task_id="find",
            runs=2,
            successes=2,
            success_rate=1.0,
            wilson_low=0.34,
            wilson_high=1.0,
            pass_at_k=1.0,
            pass_hat_k=1.0,
        )
    ]
    return BugReport(
        run_id=run,
        phase1_provider="demo",
        evaluated_at=datetime(2026, 1, 1, tzinfo=UTC),
        bugs=bugs,
        tasks=stats,
    )


def _config(tmp_path: Path, name: str, argv: list[str]) -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"server": {"name": name, "command": argv[0], "args": argv[1:]}}))
    return path


def test_runs_of_victim_never_count_for_a_finding_of_otherserver(home: Home, tmp_path: Path) -> None:
    other_argv, victim_argv = _server_copy(tmp_path, "otherserver"), _server_copy(tmp_path, "victim")
    other = load_config(_config(tmp_path, "otherserver", other_argv)).server
    victim = load_config(_config(tmp_path, "victim", victim_argv)).server
    other_key, victim_key = server_key(other), server_key(victim)
    assert other_key.source != victim_key.source

    # A Phase 2 bug of otherserver, its fix claimed; victim's loop runs never show that bug.
    bug = "EFF-no-filter-lookup"
    (finding,) = register_bug_report(home, _report("run-20260101-001", [bug]), server=other_key)
    claim_bug_fix(home, bug, "c0ffee", other_key)
    for n in range(2, 6):
        judged = verify_from_bug_report(home, _report(f"run-20260101-00{n}", []), server=victim_key)
        assert judged.transitions == [] and judged.skipped == {}
    assert current_state(home, finding.id) == ("fix-claimed", 0)
    assert bug_finding_id(bug, victim_key) != finding.id  # the same bug id on victim is its own finding

    # A captured finding of otherserver with an accepted case: victim's runs neither claim nor close it.
    register_lookup(home, server="otherserver")
    manifest = tmp_path / "case.yaml"
    assert (
        cli("generate", "--finding", LOOKUP, "--confirm-read-only", "--output", str(manifest)).exit_code == 0
    )
    manifest.write_text(manifest.read_text().replace("'<fill: string>'", "k1"))
    command = ["verify", "--finding", LOOKUP, "--case", LOOKUP, "--manifest", str(manifest), "--"]
    accepted, shown = at_terminal(["verify", "--accept-case", *command[1:-1]], answer="y", cwd=tmp_path)
    assert accepted == 0 and "accepted: runs of case" in shown and "to run it now" in shown, shown
    unclaimed = cli(*command, *victim_argv)
    assert unclaimed.exit_code == 0 and f"not counted: {LOOKUP} belongs to server" in unclaimed.output
    assert LOOKUP not in owners(home) and current_state(home, LOOKUP) == ("open", 0)

    # Its own server's run claims it; from then on victim is refused before anything runs.
    assert "open -> verifying, streak 1/3" in cli(*command, *other_argv).output
    assert owners(home)[LOOKUP].source == other_key.source
    refused = cli(*command, *victim_argv)
    assert refused.exit_code == 2
    assert f"{LOOKUP} belongs to server 'otherserver'" in refused.output
    for run in ("run-20260101-010", "run-20260101-011", "run-20260101-012"):
        outcome = verify_registered_probes(home, victim, run_id=run)
        assert outcome.transitions == [] and outcome.skipped == {}
    assert current_state(home, LOOKUP) == ("verifying", 1)
