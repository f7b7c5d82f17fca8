"""findings and annotate: the three formats, exit codes 0/3, and that nothing secret gets out."""

from __future__ import annotations

import contextlib
import sqlite3
import sys
from datetime import timedelta
from pathlib import Path

import anyio
import orjson
import pytest
from findings_journal import T0, Session, write_journal
from findings_sessions import run
from mcp import Client, StdioServerParameters

from mcpipechekr.findings.classes import SEVERITY_ORDER
from mcpipechekr.findings.evidence.index import refresh_index
from mcpipechekr.findings.home import Home
from mcpipechekr.findings.lifecycle.states import claim_fix
from mcpipechekr.findings.lifecycle.store import load_findings
from mcpipechekr.findings.promotion.promote import promote

SERVERS = Path(__file__).parent / "servers"
SECRET = "tok-51f0c2e9-SECRET"
ACCOUNT = "acct-7734-PRIVATE"
NOW = T0 + timedelta(hours=1)


def two_findings(home: Home) -> None:
    """A retryable timeout in `search` and a non-retryable crash in `read`, each in three sessions."""
    sessions = []
    for number in range(3):
        session = Session(home, f"s{number}", start=T0 + timedelta(minutes=number))
        session.error("search", "search timed out after 30 s", code="timeout", retryable=True, query="string")
        session.ok("search", query="string")
        session.error("read", "Error executing tool read", code="exception", retryable=False, id="string")
        session.error("read", "Error executing tool read", code="exception", id="string")
        session.ok("read", id="string")
        sessions.append(session)
    write_journal(home, "20250601T120000-a", *sessions)
    refresh_index(home)
    promote(home, threshold=0, now=NOW)


# --- exit codes ------------------------------------------------------------------------------------


def test_missing_index_is_exit_3(home: Home) -> None:
    code, out, err = run("findings")
    assert code == 3 and out == ""
    assert "evidence unavailable" in err and "no index yet" in err


def test_corrupt_index_is_exit_3(home: Home) -> None:
    home.root.mkdir(parents=True)
    home.index_db.write_bytes(b"this is not a database" * 100)
    code, _, err = run("findings", "--format", "json")
    assert code == 3 and "evidence unavailable" in err


def test_incomplete_index_is_exit_3(home: Home) -> None:
    two_findings(home)
    with sqlite3.connect(home.index_db) as conn:
        conn.execute("UPDATE meta SET value = '0' WHERE key = 'complete'")
    code, _, err = run("findings")
    assert code == 3 and "incomplete" in err


def test_no_findings_on_a_valid_index_is_one_line_on_stderr_and_exit_0(home: Home) -> None:
    session = Session(home, "calm")
    session.ok("search", query="string")
    write_journal(home, "20250601T120000-a", session)
    refresh_index(home)
    code, out, err = run("findings", "--format", "md")
    assert code == 0 and out == ""
    assert len(err.strip().splitlines()) == 1 and err.startswith("no findings:")


# --- formats ---------------------------------------------------------------------------------------


def test_json_has_every_field_and_retryable(home: Home) -> None:
    two_findings(home)
    code, out, _ = run("findings", "--format", "json")
    assert code == 0
    document = orjson.loads(out)
    assert document["version"] == 1
    by_tool = {f["tool"]: f for f in document["findings"]}
    assert by_tool["search"]["retryable"] is True
    assert by_tool["search"]["defect_class"] == "timeout"
    assert by_tool["read"]["retryable"] is None  # one failure said not retryable, one said nothing
    assert by_tool["read"]["defect_class"] == "unhandled_exception"
    assert by_tool["read"]["err_codes"] == ["exception"] and by_tool["read"]["occurrences"] == 6
    assert [f["state"] for f in document["findings"]] == ["open", "open"]
    # open first, then by severity, then by score
    ranks = [(SEVERITY_ORDER.index(f["severity"]), f["score"]) for f in document["findings"]]
    assert ranks == sorted(ranks, reverse=True)
    assert set(by_tool["read"]) >= {"id", "err_code", "err_codes", "hint", "severity", "rate", "sessions"}


def test_agent_and_markdown_formats(home: Home) -> None:
    two_findings(home)
    code, agent, _ = run("findings")
    assert code == 0
    blocks = agent.strip().split("\n\n")
    assert len(blocks) == 2
    read = next(block for block in blocks if "unhandled_exception at notes/read" in block)
    assert "[open]" in read
    assert "6 failing call(s), rate 0.67, 3 session(s)" in read
    assert "arguments: {id: string}" in read
    assert "fix: Catch the exception" in read

    code, md, _ = run("findings", "--format", "md")
    assert code == 0
    assert md.startswith("# Findings\n")
    assert "| Finding | State | Severity | Class | Where | Rate | Sessions | Score |" in md
    assert md.count("\n## `finding-") == 2
    assert "- Arguments: `{query: string}`" in md


def test_lifecycle_state_is_merged_and_filters(home: Home) -> None:
    two_findings(home)
    assert run("findings", "--state", "open")[1].count("[open]") == 2
    claimed = load_findings(home)[0].id
    claim_fix(home, claimed, "0123abc")
    code, out, _ = run("findings", "--state", "fix-claimed")
    assert code == 0 and out.startswith(f"{claimed} [fix-claimed]") and out.count("\n\n") == 0
    assert "verification streak: 0" in out
    assert [f["state"] for f in orjson.loads(run("findings", "--format", "json")[1])["findings"]] == [
        "open",
        "fix-claimed",
    ]
    code, out, err = run("findings", "--state", "closed")
    assert code == 0 and out == "" and err.strip() == "no findings in state closed."


# --- annotate input --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--event-id", "not-a-uuid", "--kind", "workaround", "--note", "x"],
            "--event-id: `not-a-uuid` is not a UUID",
        ),
        (["--kind", "workaround", "--note", "x" * 241], "--note: 241 characters; at most 240"),
        (
            ["--kind", "workaround", "--note", "two\nlines"],
            "--note: character 4 is a control character (U+000A)",
        ),
        (["--kind", "workaround", "--note", "bell\x07"], "control character (U+0007)"),
        (["--kind", "workaround", "--note", "   "], "--note: must not be empty"),
        (["--kind", "nonsense", "--note", "x"], "'nonsense' is not one of"),
    ],
)
def test_annotate_rejects_bad_input(home: Home, args: list[str], message: str) -> None:
    if "--event-id" not in args:
        args = ["--event-id", "3f2b8a8e-9c1d-4e7a-b0a4-1d2c3e4f5a6b", *args]
    code, _, err = run("annotate", *args)
    assert code == 2
    assert message in err
    assert not home.lifecycle_db.exists() or b"x" * 241 not in home.lifecycle_db.read_bytes()


def test_annotate_accepts_240_characters_and_stores_unlinked(home: Home) -> None:
    code, out, _ = run(
        "annotate",
        "--event-id",
        "3F2B8A8E-9C1D-4E7A-B0A4-1D2C3E4F5A6B",
        "--kind",
        "workaround",
        "--note",
        "n" * 240,
    )
    assert code == 0
    assert out.startswith("stored annotation 1: workaround on 3f2b8a8e-9c1d-4e7a-b0a4-1d2c3e4f5a6b")
    with sqlite3.connect(home.lifecycle_db) as conn:
        assert conn.execute("SELECT status, length(note) FROM annotations").fetchall() == [("unknown", 240)]


# --- sanitization, with a real server --------------------------------------------------------------


def capture_sessions(home: Home, count: int) -> None:
    """Client sessions against findings_vault behind `mcpipechekr capture`, run side by side.

    The proxy is the command a user puts in their MCP client's config in place of the server's.
    """
    server = [sys.executable, str(SERVERS / "findings_vault.py")]
    proxy = ["-m", "mcpipechekr", "capture", "--home", str(home.root), "--", *server]

    async def session() -> None:
        async with Client(StdioServerParameters(command=sys.executable, args=proxy)) as client:
            for _ in range(2):
                result = await client.call_tool("unlock", {"account": ACCOUNT, "token": SECRET})
                assert result.is_error and SECRET in result.content[0].text  # the client sees it
            assert (await client.call_tool("balance", {"account": ACCOUNT})).is_error
            assert not (await client.call_tool("ping", {})).is_error

    async def sessions() -> None:
        async with anyio.create_task_group() as group:
            for _ in range(count):
                group.start_soon(session)

    anyio.run(sessions)


def test_a_planted_secret_never_reaches_findings(home: Home) -> None:
    capture_sessions(home, 2)
    assert run("index")[0] == 0
    with contextlib.closing(sqlite3.connect(home.index_db)) as conn:
        rows = conn.execute("SELECT event_id, tool, outcome FROM calls ORDER BY session, seq").fetchall()
        sessions = {session for (session,) in conn.execute("SELECT session FROM calls")}
    assert [(tool, outcome) for _, tool, outcome in rows] == 2 * [
        ("unlock", "error"),
        ("unlock", "error"),
        ("balance", "error"),
        ("ping", "ok"),
    ]
    first_error = rows[0][0]
    assert (
        run("annotate", "--event-id", first_error, "--kind", "workaround", "--note", f"used {SECRET}")[0] == 0
    )
    code, promoted, _ = run("promote", "--threshold", "0")
    assert code == 0 and promoted.startswith("promoted 2 of 2 issues")

    outputs = [promoted] + [run("findings", "--format", fmt)[1] for fmt in ("agent", "md", "json")]
    document = orjson.loads(outputs[-1])
    classes = {f["tool"]: f["defect_class"] for f in document["findings"]}
    assert classes == {"unlock": "permission", "balance": "unhandled_exception"}
    unlock = next(f for f in document["findings"] if f["tool"] == "unlock")
    assert unlock["arg_shapes"] == [{"account": "string", "token": "string"}]
    assert unlock["server"] == "vault" and unlock["sessions"] == 2
    salt = home.salt().decode()
    for text in outputs:
        for forbidden in (SECRET, ACCOUNT, "is not valid for account", salt, *sessions):
            assert forbidden not in text
    for stored in [*home.journals.glob("*.jsonl"), home.index_db]:
        assert SECRET.encode() not in stored.read_bytes() and ACCOUNT.encode() not in stored.read_bytes()
