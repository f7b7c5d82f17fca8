"""`mcpipechekr serve` cannot be turned against its host: one test per attack, each through a real client.

Each test first makes the attack as a client of the earlier `serve` could (a
`command`, a `manifest` path, an `output` path: arguments the tools no longer
take, which a client may still send), then the attacks left with the tools as
they are. What must hold: nothing runs but the configured server, no file
outside the home is read into an answer or written, no id becomes a path
outside the home's cases folder or follows a link, and no run of `serve`
earns credit toward closing a finding.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from findings_sessions import cli
from serve_project import (
    LOOKUP,
    SECRET,
    SHADOW,
    bound_project,
    files_under,
    filled_manifest,
    python_server,
    session,
    tool_schemas,
)
from terminal import at_terminal

from mcpipechekr.config import load_config
from mcpipechekr.findings.home import Home
from mcpipechekr.findings.lifecycle.states import current_state
from mcpipechekr.findings.verification.reverify import verify_registered_probes

PATH_ARGUMENTS = {"command", "url", "manifest", "output", "path", "run_id", "headers", "cwd"}
TRAVERSALS = ("../../x", "/tmp/x", f"{LOOKUP}/../../../x", "..", f"{LOOKUP}\x00.yaml", "cases/../x")


def verifications(home: Home) -> list[tuple[int, int, str]]:
    """(passed, credited, origin) of every recorded verification, oldest first."""
    with sqlite3.connect(home.lifecycle_db) as db:
        columns = {row[1] for row in db.execute("PRAGMA table_info(verifications)")}
        origin = "origin" if "origin" in columns else "'unrecorded'"
        return db.execute(f"SELECT passed, credited, {origin} FROM verifications ORDER BY at").fetchall()


def test_verify_fix_runs_no_command_a_client_names(tmp_path: Path, home: Home) -> None:
    project = bound_project(tmp_path, home)
    marker = tmp_path / "pwned"
    manifest = filled_manifest(home, tmp_path / "elsewhere.yaml")
    shell = ["sh", "-c", f"touch {marker}"]
    answers = session(
        project,
        [
            (
                "verify_fix",
                {"finding_id": LOOKUP, "case": LOOKUP, "manifest": str(manifest), "command": shell},
            ),
            ("verify_fix", {"finding_id": LOOKUP, "command": shell, "url": "http://127.0.0.1:9/"}),
            ("verify_fix", {"finding_id": LOOKUP, "case": f"$(touch {marker})"}),
            ("generate_case", {"finding_id": LOOKUP, "confirm_read_only": True, "command": shell}),
        ],
    )
    assert not marker.exists(), [answer.text for answer in answers]
    schemas = tool_schemas(project)
    assert set(schemas) == {"list_findings", "get_finding", "generate_case", "verify_fix"}
    for name, schema in schemas.items():
        assert not PATH_ARGUMENTS & set(schema.get("properties", {})), name
    assert set(schemas["verify_fix"]["properties"]) == {"finding_id", "case"}


def test_no_answer_holds_the_contents_of_a_file_outside_the_home(tmp_path: Path, home: Home) -> None:
    project = bound_project(tmp_path, home)
    shadow = tmp_path / "outside" / "shadow"
    shadow.parent.mkdir()
    shadow.write_text(SHADOW)
    answers = session(
        project,
        [
            (
                "verify_fix",
                {
                    "finding_id": LOOKUP,
                    "case": LOOKUP,
                    "manifest": str(shadow),
                    "command": python_server(),
                },
            ),
            ("verify_fix", {"finding_id": str(shadow)}),
            ("verify_fix", {"finding_id": LOOKUP, "case": str(shadow)}),
            ("get_finding", {"finding_id": str(shadow)}),
            ("generate_case", {"finding_id": str(shadow), "confirm_read_only": True}),
            (
                "generate_case",
                {"finding_id": LOOKUP, "confirm_read_only": True, "expect": {"x": str(shadow)}},
            ),
            ("verify_fix", {"finding_id": "../" * 12 + str(shadow).lstrip("/")}),
        ],
    )
    leaked = [answer.text for answer in answers if SECRET in answer.text]
    assert not leaked
    assert all(answer.is_error for answer in answers[1:]), [answer.text for answer in answers]


def test_no_file_is_written_outside_the_home(tmp_path: Path, home: Home) -> None:
    project = bound_project(tmp_path, home)
    before = files_under(tmp_path)
    answers = session(
        project,
        [
            (
                "generate_case",
                {"finding_id": LOOKUP, "output": ".git/hooks/post-checkout", "confirm_read_only": True},
            ),
            ("generate_case", {"finding_id": LOOKUP, "output": "../x", "confirm_read_only": True}),
            (
                "generate_case",
                {"finding_id": LOOKUP, "output": str(tmp_path / "abs.yaml"), "confirm_read_only": True},
            ),
        ],
    )
    after = files_under(tmp_path)
    added = {path for path in after if path not in before}
    changed = {path for path in before if after.get(path) != before[path]}
    outside = {path for path in added | changed if not path.is_relative_to(home.root)}
    assert not outside, [answer.text for answer in answers]
    assert not (project.root / ".git" / "hooks" / "post-checkout").exists()
    assert {path for path in added if path.is_relative_to(home.root / "cases")} == {
        home.root / "cases" / f"{LOOKUP}.yaml"
    }


def test_ids_never_name_a_path_nor_follow_a_link(tmp_path: Path, home: Home) -> None:
    project = bound_project(tmp_path, home)
    outside = tmp_path / "outside"
    outside.mkdir()
    target = outside / "target.yaml"
    target.write_text(SHADOW)
    cases = home.root / "cases"
    cases.mkdir(parents=True)
    (cases / f"{LOOKUP}.yaml").symlink_to(target)
    before = files_under(tmp_path)
    calls: list[tuple[str, dict]] = [
        (
            "generate_case",
            {
                "finding_id": LOOKUP,
                "output": str(cases / ".." / ".." / "escaped.yaml"),
                "confirm_read_only": True,
            },
        ),
        (
            "verify_fix",
            {
                "finding_id": LOOKUP,
                "case": LOOKUP,
                "manifest": str(cases / f"{LOOKUP}.yaml"),
                "command": python_server(),
            },
        ),
        ("generate_case", {"finding_id": LOOKUP, "confirm_read_only": True, "arguments": {"key": "k1"}}),
        ("verify_fix", {"finding_id": LOOKUP}),
    ]
    for bad in TRAVERSALS:
        calls += [
            ("generate_case", {"finding_id": bad, "confirm_read_only": True}),
            ("verify_fix", {"finding_id": bad}),
            ("verify_fix", {"finding_id": LOOKUP, "case": bad}),
            ("get_finding", {"finding_id": bad}),
        ]
    answers = session(project, calls)
    texts = [answer.text for answer in answers]
    assert not [text for text in texts if SECRET in text]
    assert target.read_text() == SHADOW
    after = files_under(tmp_path)
    written = {path for path in after if before.get(path) != after[path]}
    assert not {path for path in written if not path.is_relative_to(home.root) or "cases" in path.parts}, (
        texts
    )
    assert (cases / f"{LOOKUP}.yaml").is_symlink()
    assert all(answer.is_error for answer in answers[2:]), texts
    assert "symbolic link" in texts[2] and "symbolic link" in texts[3]

    # A link in place of the cases folder itself is not followed either.
    (cases / f"{LOOKUP}.yaml").unlink()
    cases.rmdir()
    cases.symlink_to(outside, target_is_directory=True)
    linked = session(
        project,
        [
            ("generate_case", {"finding_id": LOOKUP, "confirm_read_only": True, "arguments": {"key": "k1"}}),
            ("verify_fix", {"finding_id": LOOKUP}),
        ],
    )
    assert all(answer.is_error and "symbolic link" in answer.text for answer in linked), linked
    assert sorted(os.listdir(outside)) == ["target.yaml"]
    assert not [answer.text for answer in linked if SECRET in answer.text]


def test_greens_through_serve_earn_no_credit_while_the_harness_greens_still_close(
    tmp_path: Path, home: Home
) -> None:
    # The configured server still has the defect; the client's own server does not.
    broken = bound_project(tmp_path, home, broken=True, name="broken")
    manifest = filled_manifest(home, tmp_path / "forged.yaml")
    forged = {"finding_id": LOOKUP, "case": LOOKUP, "manifest": str(manifest), "command": python_server()}
    session(broken, [("verify_fix", forged)] * 3)
    assert current_state(home, LOOKUP) == ("open", 0)
    assert not [row for row in verifications(home) if row[1]]

    # Greens through serve on the configured server, now fixed: advisory, recorded with their origin.
    fixed = bound_project(tmp_path, home, name="fixed")
    generated, *verified = session(
        fixed,
        [("generate_case", {"finding_id": LOOKUP, "confirm_read_only": True, "arguments": {"key": "k1"}})]
        + [("verify_fix", {"finding_id": LOOKUP})] * 3,
    )
    assert not generated.is_error, generated.text
    assert all(not answer.is_error and "green" in answer.text for answer in verified), verified
    assert all("advisory" in answer.text for answer in verified), verified
    assert current_state(home, LOOKUP) == ("open", 0)
    assert [row for row in verifications(home) if row[2] == "serve"] == [(1, 0, "serve")] * 3

    # The harness's own runs on the configured server: a person accepts the case at a terminal and runs
    # it (`verify --accept-case`), then the loop's reruns.
    case_file = home.root / "cases" / f"{LOOKUP}.yaml"
    config = load_config(fixed.config)
    accepted, shown = at_terminal(
        ["verify", "--accept-case", "--finding", LOOKUP, "--manifest", str(case_file)], answer="y"
    )
    assert accepted == 0 and "accepted: runs of case" in shown, shown
    person = cli(
        "verify",
        "--finding",
        LOOKUP,
        "--case",
        LOOKUP,
        "--manifest",
        str(case_file),
        "--",
        config.server.command or "",
        *config.server.args,
    )
    assert person.exit_code == 0, person.output
    for run in ("run-1", "run-2"):
        outcome = verify_registered_probes(home, config.server, run_id=run)
        assert not outcome.skipped, outcome.skipped
    assert current_state(home, LOOKUP) == ("closed", 3)
    assert [row[2] for row in verifications(home) if row[1]] == ["cli", "loop", "loop"]
