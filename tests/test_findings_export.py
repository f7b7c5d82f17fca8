"""`mcpipechekr export-issues` on real evidence: captured sessions, index, promote, then the CLI."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from findings_sessions import SECRET, SERVER, cli, promoted_lookup_finding, stored_bytes
from terminal import at_terminal

from mcpipechekr.artifacts.findings import Finding
from mcpipechekr.findings.home import Home
from mcpipechekr.findings.lifecycle.states import current_state
from mcpipechekr.findings.lifecycle.store import lifecycle_connection, upsert_finding

MANUAL = "finding-9999999999999999"


def test_without_an_index_the_export_says_evidence_is_unavailable(home: Home, tmp_path: Path) -> None:
    result = cli("export-issues", "--dir", str(tmp_path / "issues"))
    assert result.exit_code == 3
    assert result.output.startswith(f"Error: evidence unavailable: {home.index_db}: no index yet.")
    home.index_db.parent.mkdir(parents=True, exist_ok=True)
    home.index_db.write_bytes(b"not a database at all" * 100)
    corrupt = cli("export-issues", "--dir", str(tmp_path / "issues"))
    assert corrupt.exit_code == 3 and "evidence unavailable" in corrupt.output
    assert not (tmp_path / "issues").exists()


@pytest.mark.subprocess_clock  # findings recorded by `mcpipechekr capture`, promoted here
def test_one_issue_per_finding_not_closed_with_the_commands_that_verify_it(
    home: Home, tmp_path: Path
) -> None:
    finding_id = promoted_lookup_finding(home)
    manual = Finding(
        id=MANUAL,
        origin="bug_report",
        bug_id="DSC-vague-lookup-description",
        server="findings",
        defect_class="other",
        hint="Say in the tool's description which values it accepts.",
        severity="medium",
        probe=False,
        rate=0.5,
        score=0.1,
        occurrences=2,
        sessions=2,
        blast_radius=0,
    )
    with lifecycle_connection(home) as conn, conn:
        upsert_finding(conn, manual)
    out = tmp_path / "issues"
    result = cli("export-issues", "--dir", str(out))
    assert result.exit_code == 0, result.output
    assert result.output.strip() == f"wrote 2 issue file(s) to {out}"
    assert sorted(path.name for path in out.iterdir()) == sorted([f"{finding_id}.md", f"{MANUAL}.md"])

    issue = (out / f"{finding_id}.md").read_text()
    assert issue.splitlines()[0] == "# Critical: unhandled exception in `lookup` on server `findings`"
    assert f"- Finding: `{finding_id}`" in issue and "- State: open" in issue
    assert "## Evidence" in issue and "4 failing call(s) in 2 session(s), failure rate 1.00" in issue
    assert '```json\n{"key": "string"}\n```' in issue
    generate = (
        f"mcpipechekr generate --finding {finding_id} --confirm-read-only --output {finding_id}.case.yaml"
    )
    verify = (
        f"mcpipechekr verify --accept-case --finding {finding_id} --case {finding_id} "
        f"--manifest {finding_id}.case.yaml -- "
    )
    assert generate in issue and verify in issue
    manual_issue = (out / f"{MANUAL}.md").read_text()
    assert f'mcpipechekr verify --finding {MANUAL} --close-manually "what resolved it"' in manual_issue
    assert "capped at medium: no probe" in manual_issue

    # The planted argument value reached the server (its error text repeats it) but no export, and no store.
    assert SECRET.encode() not in stored_bytes(home)
    for path in out.iterdir():
        assert SECRET not in path.read_text()

    # The commands in the issue work as printed, and a closed finding's file goes on the next export.
    assert cli(*generate.split()[1:]).exit_code == 0
    manifest = tmp_path / f"{finding_id}.case.yaml"
    manifest.write_text(manifest.read_text().replace("'<fill: string>'", "k1"))
    first, shown = at_terminal([*verify.split()[1:], sys.executable, str(SERVER)], answer="y", cwd=tmp_path)
    assert first == 0, shown
    assert "accepted: runs of case" in shown and "open -> verifying, streak 1/3" in shown
    for _ in range(2):
        assert (
            cli(*verify.replace("--accept-case ", "").split()[1:], sys.executable, str(SERVER)).exit_code == 0
        )
    assert current_state(home, finding_id) == ("closed", 3)
    again = cli("export-issues", "--dir", str(out))
    assert again.output.strip() == f"wrote 1 issue file(s) to {out}; removed 1 of findings closed since"
    assert [path.name for path in out.iterdir()] == [f"{MANUAL}.md"]
