"""A check reason quotes a server's text whole: JSON compact on one line, cut only past a stated length."""

from __future__ import annotations

import json

from mcpipechekr.check.answers import REASON_MAX_CHARS, one_line


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
