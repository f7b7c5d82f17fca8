"""The functional layer against real servers: emailindex over stdio, and a notes server that writes files."""

from __future__ import annotations

import shutil
import subprocess
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcpipechekr.artifacts.check_report import CheckResult
from mcpipechekr.check.cases import CasesFile, load_cases
from mcpipechekr.check.context import CheckContext
from mcpipechekr.check.expected import apply_expected_failures, load_expected_failures
from mcpipechekr.check.functional import run_functional
from mcpipechekr.config import CheckConfig, Config, ServerConfig
from mcpipechekr.server.lifecycle import ServerUnderTest

# Its module fixtures are costly: under pytest-xdist one worker runs the whole module, building them once.
pytestmark = pytest.mark.xdist_group("test_check_functional")

ROOT = Path(__file__).resolve().parents[1]
SHIPPED_CASES = ROOT / "checks" / "emailindex.cases.yaml"
SHIPPED_EXPECTED = ROOT / "checks" / "emailindex.expected-failures.yaml"
NOTES = str(Path(__file__).parent / "servers" / "notes_server.py")
DEFECT_CASES = {"FC:ron-chinn-first-by-date", "FC:keywords-with-fields"}


def emailindex_config(folder: Path, db: Path) -> ServerConfig:
    return ServerConfig(
        name="emailindex",
        command="python",
        args=["server.py"],
        cwd=str(folder),
        env={"EMAILINDEX_DB": str(db)},
    )


def notes_config(notes_dir: Path, **env: str) -> ServerConfig:
    return ServerConfig(
        name="notes", command="python", args=[NOTES], env={"NOTES_DIR": str(notes_dir), **env}
    )


def make_context(live: ServerUnderTest, **check: object) -> CheckContext:
    config = Config(server=live.server, check=CheckConfig(**check))
    return CheckContext(config=config, server=live, call_timeout_s=10, tools=live.list_tools())


def cases_from(tmp_path: Path, text: str) -> CasesFile:
    path = tmp_path / "cases.yaml"
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return load_cases(path)


def by_id(results: list[CheckResult]) -> dict[str, CheckResult]:
    return {result.id: result for result in results}


@pytest.fixture(scope="module")
def emailindex(
    emailindex_dir: Path, emailindex_db: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerUnderTest]:
    log = tmp_path_factory.mktemp("fc-emailindex") / "server.stderr.log"
    with ServerUnderTest(emailindex_config(emailindex_dir, emailindex_db), log) as live:
        yield live


def test_shipped_cases_pass_except_the_planted_defects(emailindex: ServerUnderTest) -> None:
    ctx = make_context(emailindex)
    cases = load_cases(SHIPPED_CASES)
    run_functional(ctx, cases)
    stale = apply_expected_failures(ctx.results, load_expected_failures(SHIPPED_EXPECTED))
    results = by_id(ctx.results)
    assert list(results) == [f"FC:{case.id}" for case in cases.cases]
    assert {check_id for check_id, r in results.items() if r.status != "PASS"} == DEFECT_CASES
    assert all(results[check_id].expected_failure for check_id in DEFECT_CASES)
    assert stale == []
    assert all(r.layer == "functional" and r.group != "" for r in ctx.results)
    assert results["FC:find-by-sender"].group == "Search"
    assert results["FC:find-by-sender"].tool == "query_email_database"
    assert results["FC:open-first-search-hit"].tool is None

    sort_reason = results["FC:ron-chinn-first-by-date"].reason
    assert sort_reason.startswith("equals_paths '/structuredContent/emails/0/id': expected 4089, got 3642; ")
    assert (
        "sorted_by '/structuredContent/emails' by '/date' asc: item 1 (\"2022-10-11T14:27:57\") comes "
        in (sort_reason)
    )
    assert results["FC:keywords-with-fields"].reason.startswith(
        'outcome: expected ok, got an error: "Error executing tool query_email_database: database error: '
        'no such column: fts.rank"'
    )
    # The workflow fed the search's first id into get_email.
    steps = results["FC:open-first-search-hit"].details["steps"]
    assert steps[1]["arguments"] == {"email_id": 916}
    # Every result reached the quality layer, named by case (or case/step).
    sources = [response.source for response in ctx.responses]
    assert "open-first-search-hit/open" in sources and "unknown-email-is-an-error" in sources
    assert len(sources) == 10


def test_fix_patches_make_the_defect_cases_pass_and_the_list_stale(
    emailindex_dir: Path, emailindex_db: Path, tmp_path: Path
) -> None:
    fixed = tmp_path / "emailindex"
    shutil.copytree(emailindex_dir, fixed, ignore=shutil.ignore_patterns("archive.db", "__pycache__"))
    for patch in sorted((fixed / "fixes").glob("*.patch")):
        subprocess.run(["git", "apply", str(patch)], cwd=fixed, check=True, capture_output=True)
    with ServerUnderTest(emailindex_config(fixed, emailindex_db), tmp_path / "log") as live:
        ctx = make_context(live)
        run_functional(ctx, load_cases(SHIPPED_CASES))
    stale = apply_expected_failures(ctx.results, load_expected_failures(SHIPPED_EXPECTED))
    assert [r.id for r in ctx.results if r.status != "PASS"] == []
    assert sorted(stale) == sorted(DEFECT_CASES)


EXPECTATIONS = """
cases:
  - id: fields-ok
    tool: get_email
    arguments: {email_id: 2722}
    expect:
      required_result_fields: [id, subject]
      equals: {id: 2722, thread_id: th-alpha-kickoff}
      required_result_paths: [/content/0/text, /structuredContent/body]
      equals_paths: {/isError: false, /structuredContent/sender_name: Priya Raman}
      contains: [Project Alpha kickoff, Weekly status meeting]
  - id: fields-bad
    tool: get_email
    arguments: {email_id: 2722}
    expect:
      required_result_fields: [id, attachments, labels]
      equals: {id: 2723, thread_id: th-alpha-kickoff, folder: inbox}
      required_result_paths: [/structuredContent/cc]
      equals_paths: {/isError: true, /structuredContent/id: "2722"}
      contains: [Project Beta]
  - id: lists-ok
    tool: query_email_database
    arguments: {keywords: Project Alpha kickoff, limit: 10}
    expect:
      min_items: {/structuredContent/emails: 3}
      max_items: {/structuredContent/emails: 3}
      top_k_contains: {path: /structuredContent/emails, k: 1, key: /id, values: [2722]}
  - id: lists-bad
    tool: query_email_database
    arguments: {keywords: Project Alpha kickoff, limit: 10}
    expect:
      min_items: {/structuredContent/emails: 4, /structuredContent/total: 1}
      max_items: {/structuredContent/emails: 2}
      top_k_contains:
        {path: /structuredContent/emails, k: 2, key: /subject, values: [kickoff, budget], match: contains}
  - id: sorted-ok
    tool: query_email_database
    arguments: {sender: Dana Whitfield, limit: 5}
    expect:
      sorted_by: {path: /structuredContent/emails, key: /id, order: asc}
  - id: sorted-bad
    tool: query_email_database
    arguments: {sender: Dana Whitfield, limit: 5}
    expect:
      sorted_by: {path: /structuredContent/emails, key: /id, order: desc}
  - id: error-ok
    tool: get_email
    arguments: {email_id: 999999}
    expect: {outcome: error, contains: "no email with id 999999"}
  - id: error-bad
    tool: get_email
    arguments: {email_id: 2722}
    expect: {outcome: error}
  - id: ok-bad
    tool: get_email
    arguments: {email_id: 999999}
  - id: workflow-bad-reference
    steps:
      - {id: count, tool: count_emails, arguments: {sender: nobody-at-all}, expect: {equals: {count: 0}}}
      - {id: open, tool: get_email, arguments: {email_id: "${steps.count.structuredContent.emails.0.id}"}}
"""


def test_every_expectation_passes_or_fails_with_the_value_seen(
    emailindex: ServerUnderTest, tmp_path: Path
) -> None:
    ctx = make_context(emailindex)
    run_functional(ctx, cases_from(tmp_path, EXPECTATIONS))
    results = by_id(ctx.results)
    for check_id in ("FC:fields-ok", "FC:lists-ok", "FC:sorted-ok", "FC:error-ok"):
        assert (results[check_id].status, results[check_id].reason) == ("PASS", "")
    fields = results["FC:fields-bad"]
    assert fields.status == "FAIL"
    assert fields.details["failures"][:-1] == [
        "required_result_fields: missing 'attachments', 'labels' "
        "(has: id, thread_id, date, sender, sender_name, recipients, subject, body)",
        "equals 'id': expected 2723, got 2722",
        "equals 'folder': missing from the structured result",
        "required_result_paths '/structuredContent/cc': /structuredContent has no key 'cc'",
        "equals_paths '/isError': expected true, got false",
        "equals_paths '/structuredContent/id': expected \"2722\", got 2722",
    ]
    assert fields.details["failures"][-1].startswith(
        'contains "Project Beta": not in the text ("{\\n  \\"id\\": 2722'
    )
    assert fields.reason == "; ".join(fields.details["failures"])
    assert results["FC:lists-bad"].details["failures"] == [
        "min_items '/structuredContent/emails': expected at least 4 item(s), got 3",
        "min_items '/structuredContent/total': expected a list, got 3",
        "max_items '/structuredContent/emails': expected at most 2 item(s), got 3",
        "top_k_contains '/structuredContent/emails' k=2 by '/subject': missing \"budget\" "
        '(top 2: "Re: Project Alpha kickoff", "Project Alpha kickoff")',
    ]
    assert results["FC:sorted-bad"].reason == (
        "sorted_by '/structuredContent/emails' by '/id' desc: item 0 (17) comes before item 1 (19); "
        "4 of 4 neighbouring pair(s) out of order"
    )
    assert results["FC:error-bad"].reason.startswith('outcome: expected error, got ok: "{\\n  \\"id\\": 2722')
    assert results["FC:ok-bad"].reason == (
        'outcome: expected ok, got an error: "Error executing tool get_email: no email with id 999999"'
    )
    assert results["FC:workflow-bad-reference"].reason == (
        "step 'open': cannot resolve a reference: step 'count': structuredContent has no 'emails'"
    )


NOTES_CASES = """
opt_in:
  - {tool: create_note, reason: every case deletes what it creates}
  - {tool: delete_note, reason: only deletes notes the case created}
cases:
  - id: create-read-delete
    group: Notes
    steps:
      - id: create
        tool: create_note
        arguments: {title: Shopping List, text: "- milk"}
        expect: {equals_paths: {/structuredContent/id: shopping-list}}
      - id: read
        tool: get_note
        arguments: {note_id: "${steps.create.structuredContent.id}"}
        expect: {equals_paths: {/structuredContent/text: "- milk"}}
    cleanup:
      - {id: delete, tool: delete_note, arguments: {note_id: "${steps.create.structuredContent.id}"}}
  - id: failing-step-still-cleans-up
    steps:
      - {id: create, tool: create_note, arguments: {title: Left Behind}}
      - id: read
        tool: get_note
        arguments: {note_id: "${steps.create.structuredContent.id}"}
        expect: {contains: never there}
      - {id: never, tool: list_notes}
    cleanup:
      - {id: delete, tool: delete_note, arguments: {note_id: "${steps.create.structuredContent.id}"}}
  - id: crash-still-cleans-up
    steps:
      - {id: create, tool: create_note, arguments: {title: Crash Survivor}}
      - {id: boom, tool: crash}
    cleanup:
      - {id: delete, tool: delete_note, arguments: {note_id: "${steps.create.structuredContent.id}"}}
  - id: hung-call
    tool: hang
    arguments: {seconds: 30}
    timeout_s: 0.5
  - id: suite-goes-on
    tool: list_notes
    expect: {max_items: {/structuredContent/notes: 0}}
  - id: rpc-error-code
    tool: reject
    arguments: {code: -32602}
    expect:
      outcome: error
      error_code: -32602
      contains: rejected with -32602
      equals_paths: {/error/code: -32602}
  - id: rpc-error-code-bad
    tool: reject
    arguments: {code: -32001}
    expect: {outcome: error, error_code: -32602}
  - id: tool-error-is-not-an-rpc-error
    tool: get_note
    arguments: {note_id: nope}
    expect: {outcome: error, error_code: -32602}
  - id: cleanup-failure-fails-the-case
    steps:
      - {id: create, tool: create_note, arguments: {title: Twice}}
    cleanup:
      - {id: delete, tool: delete_note, arguments: {note_id: "${steps.create.structuredContent.id}"}}
      - {id: delete-again, tool: delete_note, arguments: {note_id: "${steps.create.structuredContent.id}"}}
"""


def test_workflows_cleanup_after_failure_crash_and_hang(tmp_path: Path) -> None:
    notes_dir = tmp_path / "notes"
    with ServerUnderTest(notes_config(notes_dir), tmp_path / "notes.log") as live:
        ctx = make_context(live)
        run_functional(ctx, cases_from(tmp_path, NOTES_CASES))
    results = by_id(ctx.results)
    assert {check_id: r.status for check_id, r in results.items()} == {
        "FC:create-read-delete": "PASS",
        "FC:failing-step-still-cleans-up": "FAIL",
        "FC:crash-still-cleans-up": "FAIL",
        "FC:hung-call": "FAIL",
        "FC:suite-goes-on": "PASS",
        "FC:rpc-error-code": "PASS",
        "FC:rpc-error-code-bad": "FAIL",
        "FC:tool-error-is-not-an-rpc-error": "FAIL",
        "FC:cleanup-failure-fails-the-case": "FAIL",
    }
    # Nothing was left behind, although two cases failed before their cleanup step's turn.
    assert sorted(path.name for path in notes_dir.glob("*.md")) == []
    assert results["FC:create-read-delete"].group == "Notes"
    failing = results["FC:failing-step-still-cleans-up"]
    assert failing.reason.startswith("step 'read': contains \"never there\": not in the text")
    assert [(s["id"], s["outcome"]) for s in failing.details["steps"]] == [
        ("create", "ok"),
        ("read", "ok"),
        ("delete", "ok"),
    ]
    crashed = results["FC:crash-still-cleans-up"]
    assert crashed.reason.startswith(
        "step 'boom': server 'notes' exited with code 3 during tools/call 'crash'"
    )
    assert [(s["id"], s["outcome"]) for s in crashed.details["steps"]] == [
        ("create", "ok"),
        ("boom", "server halted"),
        ("delete", "ok"),
    ]
    assert results["FC:hung-call"].reason.startswith(
        "server 'notes' did not answer within 0.5s during tools/call 'hang'"
    )
    assert results["FC:rpc-error-code-bad"].reason == "error_code: expected -32602, got JSON-RPC error -32001"
    assert results["FC:tool-error-is-not-an-rpc-error"].reason == (
        "error_code: expected -32602, got a tool result with isError: true"
    )
    assert results["FC:cleanup-failure-fails-the-case"].reason == (
        "cleanup 'delete-again': outcome: expected ok, got an error: "
        "\"Error executing tool delete_note: no note 'twice'\""
    )


def test_opt_in_unknown_tools_and_a_server_that_cannot_restart(tmp_path: Path) -> None:
    notes_dir = tmp_path / "notes"
    text = """
    cases:
      - id: not-opted-in
        steps:
          - {id: create, tool: create_note, arguments: {title: Should Not Exist}}
      - id: unknown-tool
        tool: no_such_tool
      - id: crash
        tool: crash
      - id: never-runs
        tool: list_notes
    """
    with ServerUnderTest(notes_config(notes_dir, NOTES_START_ONCE="1"), tmp_path / "notes.log") as live:
        ctx = make_context(live)
        run_functional(ctx, cases_from(tmp_path, text))
    results = by_id(ctx.results)
    assert (results["FC:not-opted-in"].status, results["FC:not-opted-in"].reason) == (
        "SKIP",
        "tool 'create_note' is not called: it is annotated destructiveHint: true, so it may change state; "
        "to call it, list it under opt_in in the cases file (tool: create_note, reason: …), with cases "
        "whose cleanup undoes what it does",
    )
    assert not (notes_dir / "should-not-exist.md").exists()
    assert results["FC:unknown-tool"].status == "FAIL"
    assert results["FC:unknown-tool"].reason.startswith("the server lists no tool 'no_such_tool' (it lists: ")
    assert results["FC:crash"].status == "FAIL"
    assert "server could not be restarted" in results["FC:crash"].reason
    assert results["FC:never-runs"].status == "SKIP"
    assert results["FC:never-runs"].reason.startswith("not run: server could not be restarted: ")
