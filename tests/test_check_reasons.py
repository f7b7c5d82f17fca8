"""A check reason quotes a server's text whole: JSON compact on one line, cut only past a stated length."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcpipechekr.artifacts.check_report import CheckReport
from mcpipechekr.check.answers import REASON_MAX_CHARS, one_line
from mcpipechekr.cli import main

CATALOG = Path(__file__).resolve().parent / "servers" / "catalog_server.py"


def test_pretty_printed_json_becomes_one_compact_line() -> None:
    text = json.dumps({"error": {"code": "BAD_FILTER", "message": "cannot parse"}}, indent=2)
    assert text.splitlines()[0] == "{"
    assert one_line(text) == '{"error": {"code": "BAD_FILTER", "message": "cannot parse"}}'
    assert one_line(f"Error executing tool q: {text}") == (
        'Error executing tool q: {"error": {"code": "BAD_FILTER", "message": "cannot parse"}}'
    )


def test_lines_are_joined_and_a_long_text_says_how_much_was_cut() -> None:
    assert (
        one_line("no such repository\n  hint: clone it first\n") == "no such repository hint: clone it first"
    )
    long = "x" * (REASON_MAX_CHARS + 42)
    assert one_line(long) == "x" * REASON_MAX_CHARS + "… (42 more characters)"
    assert one_line("not json {") == "not json {"
    assert one_line("") == ""


def test_a_servers_json_error_is_shown_whole_in_the_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CATALOG_CALLS", str(tmp_path / "calls.txt"))
    command = shlex.join([sys.executable, str(CATALOG)])
    result = CliRunner().invoke(
        main,
        [
            "check",
            "--command",
            command,
            "--layer",
            "protocol",
            "--trust-read-only",
            "query_items",
            "--format",
            "json",
        ],
        catch_exceptions=False,
    )
    report = CheckReport.model_validate_json(result.output)
    reason = next(check.reason for check in report.checks if check.id == "PC-10:query_items")
    assert reason.startswith(
        'not reached: Error executing tool query_items: {"error": {"code": "BAD_FILTER", '
        '"message": "cannot parse filter '
    ), reason
    assert '"at": 0}}' in reason and "\n" not in reason
