"""Call records: the passive `mcpipechekr capture` proxy, Phase 1 journal conversion, sanitizing, locks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner
from findings_sessions import converse, rpc, tool_call
from mcp import Client, StdioServerParameters

from mcpipechekr.cli import main
from mcpipechekr.findings.evidence.index import refresh_index
from mcpipechekr.findings.evidence.passive import CallRecordWriter, default_server_name
from mcpipechekr.findings.evidence.phase1 import records_from_journal
from mcpipechekr.findings.evidence.records import (
    CallRecord,
    append_records,
    arg_shape,
    normalize_message,
    template_id,
)
from mcpipechekr.findings.home import HOME_ENV, Home
from mcpipechekr.findings.locking import JournalLock

pytestmark = pytest.mark.xdist_group("test_findings_capture")

SERVERS = Path(__file__).parent / "servers"
RAW = [sys.executable, str(SERVERS / "findings_raw.py")]
SECRET = "hunter2-9f31c7"
ACCOUNT = "acct-771c-PRIVATE"


INIT = rpc(
    0, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t"}}
)
CALLS = [
    tool_call(1, "lookup", id="1"),
    tool_call(2, "lookup", id=ACCOUNT, verbose=True),
    tool_call(3, "lookup", id="other-id", verbose=False),
    tool_call(4, "locked"),
    tool_call(5, "login", password=SECRET, user={"name": "ann"}, tags=["a"], limit=3, ratio=0.5, x=None),
    tool_call(6, "bad_result"),
    tool_call(7, "bad_flag"),
]


def capture(home: Path, *server: str) -> list[str]:
    """The passive proxy as its own process, through its light entry point (the same code as
    `mcpipechekr capture`, without loading the whole command line; one test below uses that)."""
    return [sys.executable, "-m", "mcpipechekr.findings.evidence.passive", "--home", str(home), "--", *server]


def journal_records(home: Home) -> list[CallRecord]:
    (journal,) = sorted(home.journals.glob("*.jsonl"))
    return [CallRecord.model_validate_json(line) for line in journal.read_bytes().splitlines()]


@pytest.fixture(scope="module")
def captured(tmp_path_factory: pytest.TempPathFactory) -> tuple[Home, list[bytes], list[bytes], int]:
    """One passive capture of every kind of call, beside the same conversation held directly."""
    home = Home(tmp_path_factory.mktemp("home"))
    proxied, code = converse(capture(home.root, *RAW), [INIT, *CALLS])
    direct, _ = converse(RAW, [INIT, *CALLS])
    return home, proxied, direct, code


def test_capture_forwards_every_line_unchanged(captured: tuple) -> None:
    _, proxied, direct, code = captured
    assert proxied == direct and all(line.endswith(b"\n") for line in proxied)
    assert code == 0  # the client closed the connection: a clean end


def test_capture_records_one_sanitized_record_per_call(captured: tuple) -> None:
    home, proxied, _, _ = captured
    records = journal_records(home)
    assert [(r.seq, r.tool, r.outcome) for r in records] == [
        (0, "lookup", "ok"),
        (1, "lookup", "error"),
        (2, "lookup", "error"),
        (3, "locked", "error"),
        (4, "login", "error"),
        (5, "bad_result", "unknown"),
        (6, "bad_flag", "unknown"),
    ]
    assert {r.server for r in records} == {"findings-raw"}  # learned from initialize
    assert len({r.session for r in records}) == 1 and len({r.event_id for r in records}) == 7
    ok, missing_a, missing_b, locked, login, *_ = records
    assert ok.template_id is None and ok.err_code is None and ok.retryable is None
    assert missing_a.err_code == "NOT_FOUND" and missing_a.retryable is False
    assert missing_a.template_id == missing_b.template_id  # ids differ, the template does not
    assert missing_a.arg_shape == {"id": "string", "verbose": "boolean"}
    assert locked.err_code == "-32603" and locked.retryable is True
    assert login.err_code is None and login.retryable is None
    assert login.arg_shape == {
        "limit": "integer",
        "password": "string",
        "ratio": "number",
        "tags": "array",
        "user": "object",
        "x": "null",
    }
    assert len({missing_a.template_id, locked.template_id, login.template_id}) == 3
    assert [r.request_bytes for r in records] == [len(line) for line in CALLS]
    assert [r.response_bytes for r in records] == [len(line) for line in proxied[1:]]
    assert all(r.latency_ms is not None and r.latency_ms >= 0 for r in records)


def test_malformed_results_are_unknown_with_no_invented_error_metadata(captured: tuple) -> None:
    home, proxied, _, _ = captured
    for record in journal_records(home)[5:]:
        assert record.outcome == "unknown"
        assert (record.template_id, record.err_code, record.retryable) == (None, None, None)
    assert json.loads(proxied[6])["result"] == "oops"  # forwarded as it came
    assert json.loads(proxied[7])["result"]["isError"] == "yes"


def test_no_raw_value_or_error_text_reaches_the_journal_or_the_index(captured: tuple) -> None:
    home, proxied, _, _ = captured
    (journal,) = home.journals.glob("*.jsonl")
    stored = journal.read_bytes()
    assert SECRET.encode() in proxied[5]  # the client got the real answer
    assert ACCOUNT.encode() in proxied[2]
    refresh_index(home)
    indexed = home.index_db.read_bytes()
    for raw in (SECRET, ACCOUNT, "ann", "wrong password", "not found", "database is locked", "mail 1"):
        assert raw.encode() not in stored, raw
        assert raw.encode() not in indexed, raw


def test_a_server_that_dies_mid_call_leaves_an_error_record_and_its_exit_code(tmp_path: Path) -> None:
    home = Home(tmp_path / "home")
    process = subprocess.Popen(capture(home.root, *RAW), stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(INIT + tool_call(1, "lookup", id="1") + tool_call(2, "die"))
    process.stdin.flush()
    assert process.wait(timeout=20) == 7
    ok, died = journal_records(home)
    assert ok.outcome == "ok"
    assert (died.tool, died.outcome, died.err_code) == ("die", "error", "server_crash")
    assert died.response_bytes is None


def test_capture_through_a_real_sdk_server_and_client(tmp_path: Path) -> None:
    home = Home(tmp_path / "home")
    server = [sys.executable, str(SERVERS / "tiny_server.py")]
    command = [sys.executable, "-m", "mcpipechekr", "capture", "--home", str(home.root), "--", *server]
    params = StdioServerParameters(command=command[0], args=command[1:])

    async def session() -> None:
        async with Client(params) as client:
            assert (await client.call_tool("echo", {"text": SECRET})).content[0].text == SECRET
            assert (await client.call_tool("echo", {"text": ["not", "a", "string"]})).is_error
            assert (await client.call_tool("no_such_tool", {"q": 1})).is_error

    anyio.run(session)
    deadline = time.monotonic() + 10
    while len(records := journal_records(home)) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    echo, invalid, unknown = records
    assert {r.server for r in records} == {"tiny"}
    assert echo.outcome == "ok" and echo.arg_shape == {"text": "string"}
    assert (invalid.outcome, invalid.err_code) == ("error", "validation")
    assert invalid.arg_shape == {"text": "array"}
    assert unknown.outcome == "error" and unknown.err_code in {"not_found", "-32602"}


def test_phase1_journals_convert_to_the_same_records(tmp_path: Path) -> None:
    home = Home(tmp_path / "home")
    passive, _ = converse(capture(home.root, *RAW), [INIT, *CALLS])
    journal = tmp_path / "attempt.jsonl"
    phase1, _ = converse(
        [sys.executable, "-m", "mcpipechekr.capture", "--journal", str(journal), "--", *RAW], [INIT, *CALLS]
    )
    assert phase1 == passive
    converted = records_from_journal(journal, "findings-raw", "run-20260101-001/attempt", home=home)
    same_fields = ("seq", "server", "tool", "template_id", "arg_shape", "outcome", "err_code", "retryable")
    assert [r.model_dump(include=set(same_fields)) for r in converted] == [
        r.model_dump(include=set(same_fields)) for r in journal_records(home)
    ]
    assert {r.session for r in converted} == {"run-20260101-001/attempt"}
    again = records_from_journal(journal, "findings-raw", "run-20260101-001/attempt", home=home)
    assert again == converted  # ids derive from the attempt and its journal: converting twice is idempotent

    first, second = append_records(home, converted), append_records(home, again)
    assert first is not None and second is not None and first.name < second.name
    stats = refresh_index(home)
    assert stats.added == 2 * len(CALLS) and stats.duplicates == len(CALLS)
    assert append_records(home, []) is None


def test_unanswered_calls_in_a_phase1_journal(tmp_path: Path) -> None:
    home = Home(tmp_path / "home")
    journal = tmp_path / "attempt.jsonl"
    process = subprocess.Popen(
        [sys.executable, "-m", "mcpipechekr.capture", "--journal", str(journal), "--", *RAW],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert process.stdin is not None
    process.stdin.write(INIT + tool_call(1, "die"))
    process.stdin.flush()
    assert process.wait(timeout=20) == 7
    (record,) = records_from_journal(journal, "findings-raw", "attempt", home=home)
    assert (record.outcome, record.err_code) == ("error", "server_crash")


def test_template_ids_group_equal_errors_and_depend_on_the_salt() -> None:
    salt = b"s" * 32
    assert template_id(salt, "mail '17' not found") == template_id(salt, 'mail "99" not found')
    slow = template_id(salt, "timeout after 30 s at /srv/a/b")
    assert slow == template_id(salt, "timeout after 5 s at /x/y/z")
    assert template_id(salt, "Error executing tool search", "search") == template_id(
        salt, "Error executing tool fetch", "fetch"
    )
    assert template_id(salt, "mail not found") != template_id(salt, "permission denied")
    assert template_id(salt, "mail not found") != template_id(b"t" * 32, "mail not found")
    assert normalize_message("User ann@x.org id 3f2a9c1e-0000-4000-8000-00000000abcd at https://h/p?q=1") == (
        "user <email> id <uuid> at <url>"
    )


def test_arg_shape_keeps_keys_and_types_only() -> None:
    assert arg_shape({"b": True, "a": 1, "c": 1.5, "d": "x", "e": [], "f": {}, "g": None}) == {
        "a": "integer",
        "b": "boolean",
        "c": "number",
        "d": "string",
        "e": "array",
        "f": "object",
        "g": "null",
    }
    assert arg_shape(["not", "an", "object"]) == {} and arg_shape(None) == {}
    assert list(arg_shape({"k" * 500: 1})) == ["k" * 64]


def test_records_refuse_error_fields_outside_errors() -> None:
    base = {
        "event_id": "12345678-1234-4234-8234-123456789abc",
        "session": "s",
        "seq": 0,
        "at": "2026-01-01T00:00:00Z",
        "server": "s",
        "tool": "t",
        "request_bytes": 1,
    }
    with pytest.raises(ValueError, match="only belong to `outcome: error`"):
        CallRecord.model_validate({**base, "outcome": "unknown", "err_code": "x"})
    with pytest.raises(ValueError, match="needs `template_id`"):
        CallRecord.model_validate({**base, "outcome": "error"})
    with pytest.raises(ValueError, match="raw"):
        CallRecord.model_validate({**base, "outcome": "ok", "raw": "value"})


def test_default_server_names() -> None:
    assert default_server_name(["python3", "server.py"]) == "server"
    assert default_server_name(["npx", "-y", "@acme/mail-mcp"]) == "mail-mcp"
    assert default_server_name(["uvx", "mcp-server-git@1.2"]) == "mcp-server-git"
    assert default_server_name(["./bin/notes", "--db", "x"]) == "notes"


def test_the_indexer_waits_for_a_writer_holding_the_shared_lock(tmp_path: Path) -> None:
    home = Home(tmp_path / "home")
    home.journals.mkdir(parents=True)
    done = threading.Event()
    with JournalLock(home) as writer, writer.shared(), JournalLock(home) as other, other.shared():
        indexer = threading.Thread(target=lambda: (refresh_index(home), done.set()))
        indexer.start()
        assert not done.wait(0.3)  # two writers hold it together; the indexer waits for both
    indexer.join(10)
    assert done.is_set()


def test_a_recording_failure_never_stops_the_traffic(tmp_path: Path, capfd: pytest.CaptureFixture) -> None:
    home = Home(tmp_path / "home")
    writer = CallRecordWriter(home, server="s")
    writer.message("to_server", tool_call(1, "lookup", id="1"), 1.0)
    assert writer._fd is not None
    read_only = os.open(os.devnull, os.O_RDONLY)
    os.dup2(read_only, writer._fd)  # the journal's descriptor can no longer be written
    os.close(read_only)
    writer.message("to_agent", b'{"jsonrpc":"2.0","id":1,"result":{"content":[]}}\n', 2.0)  # no exception
    writer.message("to_server", tool_call(2, "lookup", id="2"), 3.0)
    assert "stopped recording calls" in capfd.readouterr().err
    writer.close()


def test_an_unwritable_home_is_a_user_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    under_a_file = tmp_path / "file" / "home"
    result = CliRunner().invoke(main, ["capture", "--home", str(under_a_file), "--", *RAW])
    assert result.exit_code == 2 and f"cannot record calls under {under_a_file}" in result.output


def test_capture_cli_needs_a_command_and_has_help(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(HOME_ENV, str(tmp_path / "home"))
    cli = CliRunner()
    result = cli.invoke(main, ["capture"])
    assert result.exit_code == 2 and "give the server's command after `--`" in result.output
    help_text = cli.invoke(main, ["capture", "--help"]).output
    assert "-- CMD [ARGS]..." in help_text and "never values" in help_text
