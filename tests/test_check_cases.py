"""The cases file and the expected-failures file: loading, file:line errors, references, matching."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from mcpipechekr._util.yamlsrc import ConfigFileError
from mcpipechekr.artifacts.check_report import CheckResult
from mcpipechekr.check.cases import load_cases
from mcpipechekr.check.expected import apply_expected_failures, load_expected_failures
from mcpipechekr.check.pointer import PointerError, resolve_pointer, substitute

ROOT = Path(__file__).resolve().parents[1]
SHIPPED_CASES = ROOT / "checks" / "emailindex.cases.yaml"
SHIPPED_EXPECTED = ROOT / "checks" / "emailindex.expected-failures.yaml"


def write(tmp_path: Path, text: str, name: str = "cases.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Messages name files relative to the current folder, so tests run in their tmp folder."""
    monkeypatch.chdir(tmp_path)


def problems(path: Path, loader=load_cases) -> list[str]:
    with pytest.raises(ConfigFileError) as caught:
        loader(path)
    return str(caught.value).splitlines()


def test_shipped_cases_file_loads_and_answers_case_lookups() -> None:
    cases = load_cases(SHIPPED_CASES)
    ids = [case.id for case in cases.cases]
    assert len(ids) == len(set(ids)) >= 9
    assert cases.opt_in_tools == set()
    # A probe reuses the first successful single call, never the expected-error case.
    assert cases.case_for_tool("query_email_database").id == "find-by-sender"
    assert cases.case_for_tool("get_email").id == "get-email-by-id"
    assert cases.case_for_tool("count_emails").id == "count-dana-2019"
    assert cases.case_for_tool("no_such_tool") is None
    workflow = next(case for case in cases.cases if case.steps)
    assert [step.id for step in workflow.calls()] == ["search", "open"]
    assert workflow.source_for(workflow.steps[1]) == "open-first-search-hit/open"
    assert cases.quality_for("find-by-sender").consistent_items == "/structuredContent/emails"
    assert cases.quality_for("count-dana-2019") is None
    assert load_expected_failures(SHIPPED_EXPECTED).keys() == {
        "FC:ron-chinn-first-by-date",
        "FC:keywords-with-fields",
    }


def test_opt_in_and_case_for_tool_skip_references(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        opt_in:
          - {tool: create_note, reason: the cleanup deletes it}
        cases:
          - id: uses-ref
            steps:
              - {id: a, tool: create_note, arguments: {title: x}}
              - {id: b, tool: get_note, arguments: {note_id: "${steps.a.structuredContent.id}"}}
            cleanup:
              - {id: c, tool: delete_note, arguments: {note_id: "${steps.a.structuredContent.id}"}}
          - id: plain
            tool: get_note
            arguments: {note_id: x}
        """,
    )
    cases = load_cases(path)
    assert cases.opt_in_tools == {"create_note"}
    assert cases.case_for_tool("get_note").id == "plain"
    assert cases.case_for_tool("create_note") is None  # only used inside a workflow
    assert cases.cases[0].tools() == ["create_note", "get_note", "delete_note"]


def test_bad_cases_file_reports_every_problem_with_its_line(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        opt_in:
          - tool: create_note
        cases:
          - id: one
            tool: get_note
            expect:
              outcome: maybe
              equals_paths: {structuredContent/id: 1}
          - id: one
            tool: get_note
            expcet: {}
          - id: both
            tool: get_note
            steps:
              - {id: a, tool: get_note}
          - id: forward-ref
            steps:
              - {id: a, tool: get_note, arguments: {note_id: "${steps.b.structuredContent.id}"}}
              - {id: b, tool: get_note}
              - {id: b, tool: get_note, arguments: {x: "${env.HOME}"}}
          - id: Bad_Id
            tool: get_note
            timeout_s: 0
            expect:
              error_code: -32602
              sorted_by: {path: /structuredContent/items, order: up}
              top_k_contains: {path: /x, k: 0, values: []}
          - id: code-without-error
            tool: get_note
            expect: {error_code: -32602}
        """,
    )
    assert problems(path) == [
        "cases.yaml:2: opt_in #1 field 'reason': is required",
        "cases.yaml:7: case 'one' field 'expect.outcome': must be ok or error",
        "cases.yaml:8: case 'one' field 'expect.equals_paths.structuredContent/id': "
        "JSON Pointer 'structuredContent/id' must start with '/' (e.g. /structuredContent/total)",
        "cases.yaml:9: case 'one' field 'id': duplicate id (first used at line 4)",
        "cases.yaml:11: case 'one' field 'expcet': unknown field (known: id, description, group, tool, "
        "arguments, expect, quality, steps, cleanup, timeout_s)",
        "cases.yaml:12: case 'both': give either `tool` (a single call) or `steps` (a workflow), not both",
        "cases.yaml:18: case 'forward-ref' field 'steps[0].arguments.note_id': reference "
        "'${steps.b.structuredContent.id}' names no earlier step 'b' (no earlier step to refer to)",
        "cases.yaml:20: case 'forward-ref' field 'steps[2].id': duplicate step id 'b' "
        "(first used at line 19)",
        "cases.yaml:20: case 'forward-ref' field 'steps[2].arguments.x': reference '${env.HOME}' is not of "
        "the form ${steps.STEP_ID.path.to.value} (write $${ for a literal '${')",
        "cases.yaml:21: case 'Bad_Id' field 'id': must be a slug: lowercase letters, digits, '-' and '_', "
        "starting with a letter or digit, e.g. find-by-sender",
        "cases.yaml:23: case 'Bad_Id' field 'timeout_s': must be greater than 0",
        "cases.yaml:26: case 'Bad_Id' field 'expect.sorted_by.order': must be asc or desc",
        "cases.yaml:27: case 'Bad_Id' field 'expect.top_k_contains.k': must be at least 1",
        "cases.yaml:27: case 'Bad_Id' field 'expect.top_k_contains.values': must have at least 1 item(s)",
        "cases.yaml:30: case 'code-without-error' field 'expect': error_code needs outcome: error",
    ]


def test_yaml_syntax_error_and_empty_cases(tmp_path: Path) -> None:
    broken = write(tmp_path, "cases:\n  - id: x\n    tool: [unclosed\n", name="broken.yaml")
    assert problems(broken)[0].startswith("broken.yaml:4:")
    assert "YAML syntax error" in problems(broken)[0]
    empty = write(tmp_path, "cases: []\n", name="empty.yaml")
    assert problems(empty) == ["empty.yaml:1: field 'cases': must have at least 1 item(s)"]
    neither = write(tmp_path, "cases:\n  - id: x\n    arguments: {a: 1}\n", name="neither.yaml")
    assert problems(neither) == [
        "neither.yaml:2: case 'x': give `tool` (a single call) or `steps` (a workflow)"
    ]


def test_pointers_and_step_references() -> None:
    document = {"structuredContent": {"a/b": [10, {"~k": "v"}]}, "isError": False}
    assert resolve_pointer(document, "/structuredContent/a~1b/1/~0k") == "v"
    assert resolve_pointer(document, "") is document
    with pytest.raises(PointerError, match="has 2 item"):
        resolve_pointer(document, "/structuredContent/a~1b/2")
    with pytest.raises(PointerError, match="'x' is not an index"):
        resolve_pointer(document, "/structuredContent/a~1b/x")
    with pytest.raises(PointerError, match="/isError is false, not an object or list"):
        resolve_pointer(document, "/isError/deeper")
    documents = {"create": {"structuredContent": {"id": 7, "tags": ["a", "b"]}}}
    # A whole-string reference keeps the JSON type; inside text it is written in.
    assert substitute({"id": "${steps.create.structuredContent.id}"}, documents) == {"id": 7}
    assert substitute("${steps.create.structuredContent.tags}", documents) == ["a", "b"]
    assert substitute("note-${steps.create.structuredContent.id}", documents) == "note-7"
    assert substitute("literal $${x} and ${steps.create.structuredContent.tags.1}", documents) == (
        "literal ${x} and b"
    )
    with pytest.raises(PointerError, match="step 'other' has no result"):
        substitute("${steps.other.x}", documents)
    with pytest.raises(PointerError, match="structuredContent has no 'missing'"):
        substitute("${steps.create.structuredContent.missing}", documents)


def test_expected_failures_file_errors(tmp_path: Path) -> None:
    bad = write(
        tmp_path,
        """
        - id: FC:one
          reason: known
        - id: FC:one
          reason: again
        - id: FC:two
        - id: FC:three
          reason: "  "
          ticket: 12
        - id: has space
          reason: x
        """,
        name="expected.yaml",
    )
    assert problems(bad, load_expected_failures) == [
        "expected.yaml:3: entry 'FC:one' field 'id': duplicate id (first listed at line 1)",
        "expected.yaml:5: entry 'FC:two' field 'reason': is required",
        "expected.yaml:7: entry 'FC:three' field 'reason': must not be empty: say why it fails and what "
        "would fix it",
        "expected.yaml:8: entry 'FC:three' field 'ticket': unknown field (known: id, reason)",
        "expected.yaml:9: entry 'has space' field 'id': must not contain spaces "
        "(e.g. FC:find-by-sender or PC-07)",
    ]
    mapping = write(tmp_path, "expected_failures: []\n", name="mapping.yaml")
    assert problems(mapping, load_expected_failures) == [
        "mapping.yaml:1: the top level must be a list of {id, reason} entries, not a mapping"
    ]
    assert load_expected_failures(write(tmp_path, "# nothing yet\n", name="empty.yaml")) == {}


def result(check_id: str, status: str) -> CheckResult:
    return CheckResult(id=check_id, name="n", layer="protocol", group="g", status=status)


def test_apply_expected_failures_matches_ids_and_prefixes_and_finds_stale() -> None:
    results = [
        result("FC:broken", "FAIL"),
        result("FC:fixed", "PASS"),
        result("PC-07:a", "FAIL"),
        result("PC-07:b", "PASS"),
        result("PC-08:a", "PASS"),
        result("PC-08:b", "PASS"),
        result("PC-09:a", "FAIL"),
    ]
    expected = {
        "FC:broken": "known bug",
        "FC:fixed": "was a bug",
        "PC-07": "two tools",
        "PC-08": "all fixed",
        "PC-09:a": "exact",
        "PC-09": "prefix",
        "FC:not-run": "layer skipped",
    }
    stale = apply_expected_failures(results, expected)
    assert stale == ["FC:fixed", "PC-08"]
    assert [r.expected_failure for r in results] == [
        "known bug",
        "was a bug",
        "two tools",
        "two tools",
        "all fixed",
        "all fixed",
        "exact",  # an exact id wins over its prefix
    ]
    untouched = [result("PC-10:a", "FAIL")]
    assert apply_expected_failures(untouched, expected) == []
    assert untouched[0].expected_failure is None
