"""`generate` and `verify` through the CLI against a real server process, on a real lifecycle.db.

The findings are registered in lifecycle.db the way promote registers them;
the server is a copy of tests/servers/findings_server.py in tmp_path, so a
test can edit its bytes, and its defects are switched by environment variables
(which are not part of the credit binding).
"""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from findings_sessions import LOOKUP, cli
from findings_sessions import LOOKUP_HINT as HINT
from findings_sessions import register_lookup as register

from mcpipechekr.errors import UserError
from mcpipechekr.findings.home import Home
from mcpipechekr.findings.lifecycle.states import claim_fix, current_state
from mcpipechekr.findings.verification.acceptance import record_acceptance
from mcpipechekr.findings.verification.case_manifest import load_manifest
from mcpipechekr.findings.verification.generate import find_finding, generate_case_file
from mcpipechekr.findings.verification.reverify import verify_registered_probes
from mcpipechekr.findings.verification.verify import verify_case_file
from mcpipechekr.server.target import resolve_server

SERVERS = Path(__file__).parent / "servers"
SAVE = "finding-5a5a5a5a5a5a5a5a"


@pytest.fixture
def server(tmp_path: Path) -> Path:
    """A private copy of the findings server, executable with this interpreter."""
    path = tmp_path / "server.py"
    path.write_text(f"#!{sys.executable}\n" + (SERVERS / "findings_server.py").read_text())
    path.chmod(0o755)
    return path


def generate(finding_id: str, output: Path, *extra: str) -> Result:
    return cli("generate", "--finding", finding_id, "--confirm-read-only", "--output", str(output), *extra)


def filled(path: Path, **values: str) -> Path:
    text = path.read_text()
    for key, value in values.items():
        text = text.replace(f"{key}: '<fill: string>'", f"{key}: {value}")
    assert "'<fill:" not in text
    path.write_text(text)
    return path


def accepted(home: Home, manifest: Path, finding_id: str = LOOKUP) -> Path:
    """What a person's `verify --accept-case` records, once they have read the case at a terminal."""
    loaded = load_manifest(manifest)
    case = loaded.manifest.case(finding_id)
    assert case is not None
    record_acceptance(home, find_finding(home, finding_id), loaded, case)
    return manifest


def verify(finding_id: str, manifest: Path, *server: str, extra: tuple[str, ...] = ()) -> Result:
    return cli(
        "verify",
        "--finding",
        finding_id,
        "--case",
        finding_id,
        "--manifest",
        str(manifest),
        *extra,
        "--",
        *server,
    )


def verifications(home: Home) -> list[tuple]:
    with sqlite3.connect(home.lifecycle_db) as db:
        return db.execute("SELECT run_id, passed, reason, attempts FROM verifications ORDER BY at").fetchall()


def test_a_generated_case_closes_the_finding_after_three_greens(
    home: Home, server: Path, tmp_path: Path
) -> None:
    register(home)
    manifest = tmp_path / "lookup.case.yaml"
    made = generate(LOOKUP, manifest)
    assert made.exit_code == 0, made.output
    text = manifest.read_text()
    assert (
        f"mcpipechekr verify --accept-case --finding {LOOKUP} --case {LOOKUP} --manifest {manifest}" in text
    )
    assert "key: '<fill: string>'" in text and "outcome: ok" in text

    unfilled = verify(LOOKUP, manifest, str(server))
    assert unfilled.exit_code == 2
    line = next(n for n, row in enumerate(text.splitlines(), 1) if "<fill: string>" in row)
    assert (
        f"lookup.case.yaml:{line}: case '{LOOKUP}' field 'arguments.key': still the placeholder"
        in unfilled.output
    )
    assert not verifications(home)

    filled(manifest, key="k1")
    proposed = verify(LOOKUP, manifest, str(server))
    assert proposed.exit_code == 0
    assert "not counted: no person accepted this case yet" in proposed.output
    assert f"mcpipechekr verify --accept-case --finding {LOOKUP} --case {LOOKUP}" in proposed.output
    assert current_state(home, LOOKUP) == ("open", 0)
    accepted(home, manifest)
    outputs = [verify(LOOKUP, manifest, str(server)) for _ in range(3)]
    assert [result.exit_code for result in outputs] == [0, 0, 0]
    assert outputs[0].output.startswith(
        f"{LOOKUP}: green (3 of 3 attempt(s) passed); open -> verifying, streak 1/3"
    )
    assert "verifying -> verifying, streak 2/3" in outputs[1].output
    assert "verifying -> closed, streak 3/3" in outputs[2].output
    assert current_state(home, LOOKUP) == ("closed", 3)
    assert [row[1:] for row in verifications(home)] == [(1, None, 3)] * 4


def test_a_red_reopens_a_verifying_finding_with_its_reason_and_hint(
    home: Home, server: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    register(home)
    manifest = (
        accepted(home, filled(tmp_path / "m.yaml", key="k1"))
        if generate(LOOKUP, tmp_path / "m.yaml").exit_code == 0
        else None
    )
    assert manifest is not None
    assert verify(LOOKUP, manifest, str(server)).exit_code == 0
    assert verify(LOOKUP, manifest, str(server)).exit_code == 0
    monkeypatch.setenv("FINDINGS_BROKEN", "1")
    red = verify(LOOKUP, manifest, str(server))
    assert red.exit_code == 1
    first, hint, *details = red.output.splitlines()
    assert first == f"{LOOKUP}: red (attempt 1 of 3 failed); verifying -> open reason=error-returned"
    assert hint == f"  hint: {HINT}"
    assert details and details[0].startswith("  outcome: expected ok, got an error")
    assert current_state(home, LOOKUP) == ("open", 0)
    stored = verifications(home)[-1]
    assert stored[1:] == (0, "error-returned", 1)
    monkeypatch.delenv("FINDINGS_BROKEN")
    assert "open -> verifying, streak 1/3" in verify(LOOKUP, manifest, str(server)).output


def test_new_bytes_in_the_server_executable_start_a_fresh_streak(
    home: Home, server: Path, tmp_path: Path
) -> None:
    register(home)
    generate(LOOKUP, tmp_path / "m.yaml")
    manifest = accepted(home, filled(tmp_path / "m.yaml", key="k1"))
    assert "streak 1/3" in verify(LOOKUP, manifest, str(server)).output
    assert "streak 2/3" in verify(LOOKUP, manifest, str(server)).output
    server.write_text(server.read_text() + "# a fix that changes the executable's bytes\n")
    fresh = verify(LOOKUP, manifest, str(server))
    assert "verifying -> verifying, streak 1/3 (new credit binding: the streak started again)" in fresh.output
    assert current_state(home, LOOKUP) == ("verifying", 1)
    # Formatting and key order of the manifest, and an unrelated case, do not touch the binding.
    data = manifest.read_text().replace(
        "cases:\n", "cases:\n- {id: other, tool: save, arguments: {note: x}}\n"
    )
    manifest.write_text("# reformatted\n" + data.replace("version: 1\n", "") + "version: 1\n")
    assert "streak 2/3" in verify(LOOKUP, manifest, str(server)).output


def test_a_server_file_changed_during_the_run_earns_no_credit(
    home: Home, server: Path, tmp_path: Path
) -> None:
    register(home, tool="touch", arg_shapes=[{"text": "string"}])
    scratch = tmp_path / "scratch.txt"
    scratch.write_text("")
    generate(LOOKUP, tmp_path / "m.yaml")
    manifest = filled(tmp_path / "m.yaml", text="hello")
    result = verify(LOOKUP, manifest, str(server), "--scratch", str(scratch))
    assert result.exit_code == 0
    assert f"not recorded: the server's files changed during the run ({scratch})" in result.output
    assert current_state(home, LOOKUP) == ("open", 0)
    assert not verifications(home)


def test_an_unreachable_server_records_no_evidence(home: Home, tmp_path: Path) -> None:
    register(home)
    generate(LOOKUP, tmp_path / "m.yaml")
    manifest = filled(tmp_path / "m.yaml", key="k1")
    result = verify(LOOKUP, manifest, sys.executable, str(SERVERS / "tiny_server.py"), "--exit-at-start", "1")
    assert result.exit_code == 2
    assert "no evidence recorded: the server could not be reached" in result.output
    assert current_state(home, LOOKUP) == ("open", 0)
    assert not verifications(home)


def test_a_replayed_run_id_adds_nothing_and_a_conflicting_result_is_refused(
    home: Home, server: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    register(home)
    generate(LOOKUP, tmp_path / "m.yaml")
    manifest = accepted(home, filled(tmp_path / "m.yaml", key="k1"))
    run = ("--run-id", "ci-build-41")
    assert "streak 1/3" in verify(LOOKUP, manifest, str(server), extra=run).output
    replay = verify(LOOKUP, manifest, str(server), extra=run)
    assert "run ci-build-41 was already recorded, nothing changed (verifying)" in replay.output
    monkeypatch.setenv("FINDINGS_BROKEN", "1")
    conflict = verify(LOOKUP, manifest, str(server), extra=run)
    assert conflict.exit_code == 2
    assert (
        "verification run ci-build-41 of finding-0a0a0a0a0a0a0a0a is already recorded as green"
        in conflict.output
    )
    assert current_state(home, LOOKUP) == ("verifying", 1)
    assert len(verifications(home)) == 1


def test_attempts_sized_from_the_rate_catch_a_flaky_failure(
    home: Home, server: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    register(home, rate=0.3)  # ln(0.05) / ln(0.7) = 8.4: nine attempts
    generate(LOOKUP, tmp_path / "m.yaml")
    manifest = accepted(home, filled(tmp_path / "m.yaml", key="k1"))
    monkeypatch.setenv("FINDINGS_FAIL_EVERY", "5")
    flaky = verify(LOOKUP, manifest, str(server))
    assert flaky.exit_code == 1
    assert f"{LOOKUP}: red (attempt 5 of 9 failed); open -> fix-claimed reason=error-returned" in flaky.output
    monkeypatch.delenv("FINDINGS_FAIL_EVERY")
    steady = verify(LOOKUP, manifest, str(server))
    assert "green (9 of 9 attempt(s) passed); fix-claimed -> verifying" in steady.output
    assert [row[3] for row in verifications(home)] == [5, 9]


def test_a_false_success_needs_a_result_assertion(
    home: Home, server: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    register(home, SAVE, tool="save", defect_class="false_success", arg_shapes=[{"note": "string"}])
    refused = generate(SAVE, tmp_path / "plain.yaml")
    assert refused.exit_code == 2 and "`outcome: ok` alone cannot verify it" in refused.output
    only_ok = tmp_path / "ok.json"
    only_ok.write_text('{"outcome": "ok"}')
    assert generate(SAVE, tmp_path / "plain.yaml", "--expect", str(only_ok)).exit_code == 2
    assert not (tmp_path / "plain.yaml").exists()

    asserting = tmp_path / "expect.json"
    asserting.write_text(json.dumps({"equals_paths": {"/structuredContent/saved": True}}))
    assert generate(SAVE, tmp_path / "m.yaml", "--expect", str(asserting)).exit_code == 0
    manifest = accepted(home, filled(tmp_path / "m.yaml", note="remember"), SAVE)
    monkeypatch.setenv("FINDINGS_BROKEN", "1")
    red = verify(SAVE, manifest, str(server))
    assert red.exit_code == 1 and "reason=expectation-failed" in red.output
    monkeypatch.delenv("FINDINGS_BROKEN")
    assert verify(SAVE, manifest, str(server)).exit_code == 0

    weakened = manifest.read_text().replace("    equals_paths:\n      /structuredContent/saved: true\n", "")
    manifest.write_text(weakened)
    assert "equals_paths" not in weakened
    refused_case = verify(SAVE, manifest, str(server))
    assert refused_case.exit_code == 2 and "field 'expect'" in refused_case.output


def test_generate_refuses_what_it_cannot_verify(home: Home, tmp_path: Path) -> None:
    register(home)
    register(home, SAVE, tool=None, probe=False, severity="medium", defect_class="other")
    out = tmp_path / "m.yaml"
    unknown = generate("finding-ffffffffffffffff", out)
    assert unknown.exit_code == 2 and "no finding finding-ffffffffffffffff" in unknown.output
    no_tool = generate(SAVE, out)
    assert no_tool.exit_code == 2 and f"--finding {SAVE} --close-manually NOTE" in no_tool.output
    unconfirmed = cli("generate", "--finding", LOOKUP, "--output", str(out))
    assert unconfirmed.exit_code == 2 and "pass --confirm-read-only" in unconfirmed.output
    bad = tmp_path / "bad.json"
    bad.write_text('{\n  "outcome": "maybe"\n}')
    rejected = generate(LOOKUP, out, "--expect", str(bad))
    assert rejected.exit_code == 2 and "line 2, field `outcome`" in rejected.output
    assert not out.exists()
    assert generate(LOOKUP, out).exit_code == 0
    again = generate(LOOKUP, out)
    assert again.exit_code == 2 and "already exists" in again.output


def test_a_manifest_for_another_finding_is_refused_with_its_line(
    home: Home, server: Path, tmp_path: Path
) -> None:
    register(home)
    register(home, SAVE)
    generate(LOOKUP, tmp_path / "m.yaml")
    manifest = filled(tmp_path / "m.yaml", key="k1")
    result = cli(
        "verify", "--finding", SAVE, "--case", LOOKUP, "--manifest", str(manifest), "--", str(server)
    )
    assert result.exit_code == 2
    line = next(n for n, row in enumerate(manifest.read_text().splitlines(), 1) if row.startswith("finding:"))
    assert f"m.yaml:{line}: field 'finding': the manifest verifies {LOOKUP}, not {SAVE}" in result.output
    missing = cli(
        "verify", "--finding", LOOKUP, "--case", "nope", "--manifest", str(manifest), "--", str(server)
    )
    assert missing.exit_code == 2 and f"no case 'nope' (cases: {LOOKUP})" in missing.output


def test_a_finding_without_a_probe_is_closed_by_hand(home: Home) -> None:
    register(home, SAVE, tool=None, probe=False, severity="medium", defect_class="other")
    register(home)
    refused = cli("verify", "--finding", LOOKUP, "--close-manually", "fixed upstream")
    assert refused.exit_code == 2 and "closes after 3 consecutive green verifications" in refused.output
    closed = cli("verify", "--finding", SAVE, "--close-manually", "tool descriptions rewritten")
    assert closed.exit_code == 0 and f"{SAVE}: closed by hand (open -> closed)" in closed.output
    assert current_state(home, SAVE) == ("closed", 0)


def test_each_loop_run_reruns_the_recorded_case_and_reports_a_regression(
    home: Home, server: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    register(home)
    register(home, SAVE, tool="save", arg_shapes=[{"note": "string"}])
    generate(LOOKUP, tmp_path / "m.yaml")
    manifest = accepted(home, filled(tmp_path / "m.yaml", key="k1"))
    monkeypatch.setenv("FINDINGS_BROKEN", "1")
    assert verify(LOOKUP, manifest, str(server)).exit_code == 1  # the case is recorded as the probe
    claim_fix(home, LOOKUP, "c0ffee")
    claim_fix(home, SAVE, "c0ffee")
    monkeypatch.delenv("FINDINGS_BROKEN")
    target = resolve_server(None, command=str(server), base_dir=tmp_path)
    for n in range(3):
        outcome = verify_registered_probes(home, target, run_id=f"run-20250601-00{n}")
        assert [(t.finding_id, t.passed, t.streak) for t in outcome.transitions] == [(LOOKUP, True, n + 1)]
        assert outcome.skipped == {
            SAVE: "no verification case recorded yet: run `mcpipechekr generate` and "
            "`mcpipechekr verify --accept-case`"
        }
    assert current_state(home, LOOKUP) == ("closed", 3)
    monkeypatch.setenv("FINDINGS_BROKEN", "1")
    broken = verify_registered_probes(home, target, run_id="run-20250601-009")
    (regression,) = broken.regressions
    assert (regression.finding_id, regression.to_state, regression.reason) == (
        LOOKUP,
        "open",
        "error-returned",
    )
    assert f"  REGRESSION {LOOKUP}: closed, failed again (reason=error-returned)" in broken.summary_lines()
    manifest.unlink()
    claim_fix(home, LOOKUP, "beef00")
    gone = verify_registered_probes(home, target, run_id="run-20250601-010")
    assert gone.skipped[LOOKUP] == f"its manifest {manifest} is gone"


def test_a_case_file_in_the_home_is_followed_by_the_loop_only_once_a_person_accepted_it(
    home: Home, server: Path, tmp_path: Path
) -> None:
    register(home)
    target = resolve_server(None, command=str(server), base_dir=tmp_path)
    made = generate_case_file(home, LOOKUP, confirm_read_only=True, arguments={"key": "k1"})
    assert made.path == home.root / "cases" / f"{LOOKUP}.yaml" and made.case_id == LOOKUP
    assert made.path.read_text() == made.text and "    key: k1\n" in made.text
    assert generate_case_file(home, LOOKUP, confirm_read_only=True, arguments={"key": "k1"}) == made
    with pytest.raises(UserError, match="finding_id must be a finding id"):
        generate_case_file(home, "../" + LOOKUP, confirm_read_only=True)

    advisory = verify_case_file(home, LOOKUP, target, origin="serve")
    assert advisory.passed and advisory.transition is not None and advisory.transition.advisory
    claim_fix(home, LOOKUP, "c0ffee")
    waiting = verify_registered_probes(home, target, run_id="run-20250601-001")
    assert not waiting.transitions
    assert waiting.skipped[LOOKUP].startswith(
        f"no verification case accepted yet: `mcpipechekr serve` drafted {made.path}"
    )
    assert "mcpipechekr verify --accept-case" in waiting.skipped[LOOKUP]

    ran = verify(LOOKUP, made.path, str(server))  # a person runs it without reading it: nothing counts
    assert ran.exit_code == 0 and "not counted: no person accepted this case yet" in ran.output
    unread = verify_registered_probes(home, target, run_id="run-20250601-002")
    assert not unread.transitions and "is proposed, no person accepted it" in unread.skipped[LOOKUP]
    assert current_state(home, LOOKUP) == ("fix-claimed", 0)

    accepted(home, made.path)  # a person read it and accepted it
    assert verify(LOOKUP, made.path, str(server)).exit_code == 0
    with pytest.raises(UserError, match="the loop reruns it: it is not replaced"):
        generate_case_file(home, LOOKUP, confirm_read_only=True, arguments={"key": "anything-green"})
    assert made.path.read_text() == made.text
    assert generate_case_file(home, LOOKUP, confirm_read_only=True, arguments={"key": "k1"}) == made
    followed = verify_registered_probes(home, target, run_id="run-20250601-003")
    assert [(t.finding_id, t.passed, t.streak, t.advisory) for t in followed.transitions] == [
        (LOOKUP, True, 2, False)
    ]


def test_a_loop_pass_reads_who_owns_the_findings_once_not_once_per_finding(
    home: Home, server: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    followed = [LOOKUP, "finding-0b0b0b0b0b0b0b0b", "finding-0c0c0c0c0c0c0c0c"]
    for finding_id in followed:
        register(home, finding_id)
        made = generate_case_file(home, finding_id, confirm_read_only=True, arguments={"key": "k1"})
        accepted(home, made.path, finding_id)
        claim_fix(home, finding_id, "c0ffee")
        assert verify(finding_id, made.path, str(server)).exit_code == 0  # records the case the loop reruns
    target = resolve_server(None, command=str(server), base_dir=tmp_path)
    statements: list[str] = []
    connect = sqlite3.connect

    def traced(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        connection = connect(*args, **kwargs)
        connection.set_trace_callback(statements.append)
        return connection

    monkeypatch.setattr(sqlite3, "connect", traced)
    outcome = verify_registered_probes(home, target, run_id="run-20250601-001")
    assert sorted((t.finding_id, t.passed, t.streak) for t in outcome.transitions) == [
        (finding_id, True, 2) for finding_id in sorted(followed)
    ]
    every_owner = [text for text in statements if "FROM finding_owners" in text and "WHERE" not in text]
    assert len(every_owner) == 1, every_owner
