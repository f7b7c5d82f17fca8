"""The quality layer against real servers: response budgets, structural checks, and running alone."""

from __future__ import annotations

import textwrap
from pathlib import Path

from mcpipechekr._util.tokens import estimate_tokens
from mcpipechekr.check.cases import CasesFile, load_cases
from mcpipechekr.check.context import CheckContext
from mcpipechekr.check.functional import run_functional
from mcpipechekr.check.quality import run_quality
from mcpipechekr.config import CheckConfig, Config, ServerConfig
from mcpipechekr.server.lifecycle import ServerUnderTest

ROOT = Path(__file__).resolve().parents[1]
NOTES = str(Path(__file__).parent / "servers" / "notes_server.py")


def make_context(live: ServerUnderTest, **check: object) -> CheckContext:
    config = Config(server=live.server, check=CheckConfig(**check))
    return CheckContext(config=config, server=live, call_timeout_s=10, tools=live.list_tools())


def cases_from(tmp_path: Path, text: str) -> CasesFile:
    path = tmp_path / "cases.yaml"
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return load_cases(path)


QUALITY_CASES = """
cases:
  - {id: big, tool: sized, arguments: {chars: 1000}}
  - {id: small, tool: sized, arguments: {chars: 10}}
  - id: markdown
    tool: render
    arguments: {style: markdown}
    quality: {has_headers: true, list_formatting: false}
  - id: prose
    tool: render
    arguments: {style: prose}
    quality: {has_headers: true, list_formatting: true}
  - id: bullets
    tool: render
    arguments: {style: list}
    quality: {has_headers: false, list_formatting: true}
  - {id: rows, tool: items, quality: {consistent_items: /structuredContent/items}}
  - id: ragged-rows
    tool: items
    arguments: {consistent: false}
    quality: {consistent_items: /structuredContent/items}
  - id: error-rows
    tool: get_note
    arguments: {note_id: nope}
    expect: {outcome: error}
    quality: {consistent_items: /structuredContent/items}
  - id: wrong-pointer
    tool: items
    quality: {consistent_items: /structuredContent/rows}
"""


def test_budgets_sizes_and_structure_of_observed_responses(tmp_path: Path) -> None:
    server = ServerConfig(
        name="notes", command="python", args=[NOTES], env={"NOTES_DIR": str(tmp_path / "n")}
    )
    cases = cases_from(tmp_path, QUALITY_CASES)
    with ServerUnderTest(server, tmp_path / "notes.log") as live:
        ctx = make_context(live, budget_tokens=200, tool_budgets={"sized": 100})
        run_functional(ctx, cases)
        run_functional(ctx, cases)  # the same calls observed twice (as when protocol reuses a case)
        calls = len(ctx.responses)
        sizes = run_quality(ctx, cases)
    assert len(ctx.responses) == calls  # sized what the cases received; called nothing again
    results = {r.id: r for r in ctx.results if r.layer == "quality"}

    # 1000 characters of text, and the same string again as structured content {"result": "..."}.
    big_chars = 1000 + len('{"result":""}') + 1000
    assert (sizes[0].tool, sizes[0].source, sizes[0].chars) == ("sized", "big", big_chars)
    assert sizes[0].tokens_estimated == estimate_tokens("x" * big_chars) == 504
    assert (sizes[0].budget_tokens, sizes[0].over_budget) == (100, True)
    assert [size.tokens_estimated for size in sizes] == sorted(
        (s.tokens_estimated for s in sizes), reverse=True
    )
    # one row per tool and source, not per observation; error-rows answered an error: not sized
    assert len(sizes) == len(cases.cases) - 1
    assert "error-rows" not in {size.source for size in sizes}
    assert (results["QC-01:sized"].status, results["QC-01:sized"].reason) == (
        "WARN",
        "largest response 504 estimated tokens (2,013 chars, case 'big') exceeds the budget of 100 "
        "(check.tool_budgets.sized)",
    )
    assert results["QC-01:render"].status == "PASS"
    assert results["QC-01:render"].reason.endswith("is within the budget of 200 (check.budget_tokens)")

    status = {check_id: r.status for check_id, r in results.items() if not check_id.startswith("QC-01")}
    assert status == {
        "QC-02:markdown": "PASS",
        "QC-03:markdown": "FAIL",
        "QC-02:prose": "FAIL",
        "QC-03:prose": "FAIL",
        "QC-02:bullets": "PASS",
        "QC-03:bullets": "PASS",
        "QC-04:rows": "PASS",
        "QC-04:ragged-rows": "FAIL",
        "QC-04:error-rows": "SKIP",
        "QC-04:wrong-pointer": "FAIL",
    }
    assert results["QC-03:markdown"].reason == (
        "expected text that is not a list, but all 3 non-blank line(s) are list items or headers"
    )
    assert results["QC-02:prose"].reason == (
        "no markdown header (a line starting with '#') in the text (\"Just a sentence.\\nAnd another one.\")"
    )
    assert (
        results["QC-03:prose"].reason == 'no list items in the text ("Just a sentence.\\nAnd another one.")'
    )
    assert results["QC-04:ragged-rows"].reason == (
        "'/structuredContent/items': 1 of 3 item(s) differ from item 0's keys: "
        "item 2 missing name; extra title"
    )
    assert (
        results["QC-04:wrong-pointer"].reason
        == "'/structuredContent/rows': /structuredContent has no key 'rows'"
    )
    assert results["QC-04:error-rows"].reason.startswith("the call answered with an error")


def test_quality_alone_calls_the_tools_itself(
    emailindex_dir: Path, emailindex_db: Path, tmp_path: Path
) -> None:
    server = ServerConfig(
        name="emailindex",
        command="python",
        args=["server.py"],
        cwd=str(emailindex_dir),
        env={"EMAILINDEX_DB": str(emailindex_db)},
    )
    with ServerUnderTest(server, tmp_path / "log") as live:
        # No cases: generated minimal arguments.
        alone = make_context(live, tool_budgets={"query_email_database": 1000})
        sizes = run_quality(alone, None)
        # With the shipped cases: their arguments, and their quality blocks.
        with_cases = make_context(live)
        cases = load_cases(ROOT / "checks" / "emailindex.cases.yaml")
        case_sizes = run_quality(with_cases, cases)

    assert sorted((size.tool, size.source) for size in sizes) == [
        ("count_emails", "generated"),
        ("get_email", "generated"),
        ("query_email_database", "generated"),
    ]
    budgets = {r.id: r for r in alone.results}
    assert budgets["QC-01:query_email_database"].status == "WARN"  # 20 emails with snippets
    assert budgets["QC-01:count_emails"].status == "PASS"
    assert sizes[0].tool == "query_email_database"

    assert [(size.tool, size.source) for size in case_sizes] == [
        ("query_email_database", "find-by-sender"),
        ("get_email", "get-email-by-id"),
        ("count_emails", "count-dana-2019"),
    ]  # keywords-with-fields answers an error (the example's planted defect): nothing to size
    shapes = {r.id: r.status for r in with_cases.results if r.id.startswith("QC-04")}
    assert shapes == {"QC-04:find-by-sender": "PASS", "QC-04:keywords-with-fields": "SKIP"}


def test_quality_alone_does_not_call_destructive_tools(tmp_path: Path) -> None:
    notes_dir = tmp_path / "notes"
    server = ServerConfig(name="notes", command="python", args=[NOTES], env={"NOTES_DIR": str(notes_dir)})
    with ServerUnderTest(server, tmp_path / "log") as live:
        ctx = make_context(live)
        ctx.tools = [tool for tool in ctx.tools if tool.name in ("create_note", "list_notes")]
        sizes = run_quality(ctx, None)
    assert [(size.tool, size.source) for size in sizes] == [("list_notes", "generated")]
    results = {r.id: r for r in ctx.results}
    assert (results["QC-01:create_note"].status, results["QC-01:create_note"].reason) == (
        "SKIP",
        "not called: it is annotated destructiveHint: true, so it may change state; to call it, "
        "list it under opt_in in the cases file (tool: create_note, reason: …), with cases whose "
        "cleanup undoes what it does",
    )
    assert list(notes_dir.glob("*.md")) == []
