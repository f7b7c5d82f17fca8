"""index.db: incremental refresh checked by content, rebuilds, rejected records, windows, read access."""

from __future__ import annotations

import gc
import random
import sqlite3
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from mcpipechekr.cli import main
from mcpipechekr.findings.errors import EXIT_EVIDENCE_UNAVAILABLE, EvidenceUnavailable, JournalRejected
from mcpipechekr.findings.evidence.index import refresh_index
from mcpipechekr.findings.evidence.index_db import open_index
from mcpipechekr.findings.evidence.journal_rows import canonical_row, fast_row, model_row, parse_lines
from mcpipechekr.findings.evidence.records import MAX_RECORD_BYTES, CallRecord, template_id
from mcpipechekr.findings.home import Home

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


@pytest.fixture
def home(home: Home) -> Home:
    """The suite's findings home, with its journal folder made."""
    home.journals.mkdir(parents=True)
    return home


def record(home: Home, session: str, seq: int, tool: str = "search", error: str | None = None) -> CallRecord:
    return CallRecord(
        event_id=str(uuid.uuid5(uuid.NAMESPACE_URL, f"{session}/{seq}")),
        session=session,
        seq=seq,
        at=T0 + timedelta(seconds=seq, microseconds=seq),
        server="notes",
        tool=tool,
        template_id=template_id(home.salt(), error, tool) if error else None,
        arg_shape={"query": "string"},
        outcome="error" if error else "ok",
        err_code="not_found" if error else None,
        latency_ms=2.5,
        request_bytes=90,
        response_bytes=300,
    )


def lines(*records: CallRecord) -> bytes:
    return b"".join(item.to_line() for item in records)


def session_lines(home: Home, session: str, count: int, start: int = 0) -> bytes:
    """`count` calls, every fifth one failing."""
    return lines(
        *(
            record(home, session, seq, error="nope" if seq % 5 == 0 else None)
            for seq in range(start, start + count)
        )
    )


def dump(home: Home) -> dict[str, list[tuple[Any, ...]]]:
    """Everything a reader sees, in a stable order."""
    with open_index(home) as connection:
        return {
            "calls": connection.execute("SELECT * FROM calls ORDER BY event_id").fetchall(),
            "windows": connection.execute("SELECT * FROM failure_windows ORDER BY event_id").fetchall(),
        }


def rebuilt(home: Home, tmp_path: Path) -> dict[str, list[tuple[Any, ...]]]:
    """What a from-scratch index of the same journals holds."""
    other = Home(tmp_path / "rebuilt")
    other.root.mkdir()
    (other.root / "journals").symlink_to(home.journals)
    refresh_index(other)
    return dump(other)


def test_an_append_is_indexed_by_reading_only_the_new_bytes(home: Home, tmp_path: Path) -> None:
    first = home.journals / "20260301T000000.000000Z-a.jsonl"
    last = home.journals / "20260301T000001.000000Z-b.jsonl"
    first.write_bytes(session_lines(home, "s1", 400))
    last.write_bytes(session_lines(home, "s2", 400))
    full = refresh_index(home)
    assert (full.mode, full.added, full.parsed_records) == ("full", 800, 800)

    appended = session_lines(home, "s2", 8, start=400) + session_lines(home, "s3", 4)
    with open(last, "ab") as handle:
        handle.write(appended)
    new = home.journals / "20260301T000002.000000Z-c.jsonl"
    new.write_bytes(session_lines(home, "s4", 3))
    stats = refresh_index(home)
    assert stats.mode == "incremental"
    assert stats.parsed_records == stats.added == 15  # the 800 indexed records were not parsed again
    assert stats.parsed_bytes == len(appended) + new.stat().st_size
    assert stats.calls == 815
    assert dump(home) == rebuilt(home, tmp_path)

    again = refresh_index(home)
    assert (again.mode, again.parsed_records, again.parsed_bytes) == ("unchanged", 0, 0)


def test_identical_replacement_bytes_reuse_the_index(home: Home) -> None:
    journal = home.journals / "20260301T000000.000000Z-a.jsonl"
    journal.write_bytes(session_lines(home, "s1", 50))
    refresh_index(home)
    content = journal.read_bytes()
    journal.unlink()
    journal.write_bytes(content)  # a new file, new times, same bytes
    stats = refresh_index(home)
    assert (stats.mode, stats.parsed_records) == ("unchanged", 0)


@pytest.mark.parametrize(
    "change, reason",
    [
        ("truncate", "was truncated"),
        ("edit", "indexed bytes of journal 20260301T000000.000000Z-a.jsonl changed"),
        ("edit_and_append", "indexed bytes of journal 20260301T000001.000000Z-b.jsonl changed"),
        ("remove", "was removed"),
        ("append_earlier", "grew but is not the last one indexed"),
        ("new_earlier", "sorts before indexed ones"),
    ],
)
def test_changes_before_the_end_of_the_log_rebuild_from_scratch(
    home: Home, tmp_path: Path, change: str, reason: str
) -> None:
    first = home.journals / "20260301T000000.000000Z-a.jsonl"
    last = home.journals / "20260301T000001.000000Z-b.jsonl"
    first.write_bytes(session_lines(home, "s1", 20))
    last.write_bytes(session_lines(home, "s2", 20))
    refresh_index(home)
    data = first.read_bytes()
    if change == "truncate":
        first.write_bytes(data[: data.index(b"\n") + 1])
    elif change == "edit":
        at = data.index(b'"latency_ms":2.5')
        first.write_bytes(data[:at] + b'"latency_ms":3.5' + data[at + 16 :])  # same length, one byte differs
    elif change == "edit_and_append":  # looks like an append until the indexed bytes are hashed
        tail = last.read_bytes()
        at = tail.index(b'"latency_ms":2.5')
        edited = tail[:at] + b'"latency_ms":3.5' + tail[at + 16 :]
        last.write_bytes(edited + session_lines(home, "s2", 2, start=20))
    elif change == "remove":
        first.unlink()
    elif change == "append_earlier":
        first.write_bytes(data + session_lines(home, "s1", 2, start=20))
    else:
        (home.journals / "20260201T000000.000000Z-old.jsonl").write_bytes(session_lines(home, "s0", 2))
    stats = refresh_index(home)
    assert stats.mode == "full" and reason in (stats.reason or "")
    assert dump(home) == rebuilt(home, tmp_path)
    if change in ("edit", "edit_and_append"):
        assert {row[11] for row in dump(home)["calls"]} == {2.5, 3.5}


def test_an_unfinished_last_record_waits_for_the_next_run(home: Home) -> None:
    journal = home.journals / "20260301T000000.000000Z-a.jsonl"
    complete = session_lines(home, "s1", 3)
    tail = record(home, "s1", 3).to_line()
    journal.write_bytes(complete + tail[:40])
    stats = refresh_index(home)
    assert (stats.added, stats.pending_bytes) == (3, 40)
    with open(journal, "ab") as handle:
        handle.write(tail[40:])
    stats = refresh_index(home)
    assert (stats.mode, stats.added, stats.pending_bytes) == ("incremental", 1, 0)


def rejected(home: Home, payload: bytes) -> JournalRejected:
    journal = home.journals / "20260301T000000.000000Z-a.jsonl"
    journal.write_bytes(session_lines(home, "s1", 5))
    refresh_index(home)
    before = dump(home)
    with open(journal, "ab") as handle:
        handle.write(session_lines(home, "s1", 2, start=5) + payload)
    with pytest.raises(JournalRejected) as caught:
        refresh_index(home)
    assert dump(home) == before  # nothing of the refused refresh was committed
    return caught.value


def test_a_malformed_record_is_refused_with_its_file_line_and_field(home: Home) -> None:
    good = orjson.loads(record(home, "s1", 7).to_line())
    error = rejected(home, orjson.dumps({**good, "outcome": "fine"}) + b"\n")
    assert error.path.name == "20260301T000000.000000Z-a.jsonl" and error.line == 8
    assert "field `outcome`" in str(error) and "previous evidence" in str(error)
    assert "not valid JSON" in str(rejected_again(home, b"{not json\n"))


def rejected_again(home: Home, payload: bytes) -> JournalRejected:
    for journal in home.journals.iterdir():
        journal.unlink()
    home.index_db.unlink()
    return rejected(home, payload)


def test_a_refused_record_after_an_edit_is_refused_by_the_rebuild_too(home: Home) -> None:
    """The tail is read before the indexed bytes are known to be intact; a refusal then waits for them."""
    journal = home.journals / "20260301T000000.000000Z-a.jsonl"
    journal.write_bytes(session_lines(home, "s1", 5))
    refresh_index(home)
    before = dump(home)
    data = journal.read_bytes()
    at = data.index(b'"latency_ms":2.5')
    edited = data[:at] + b'"latency_ms":3.5' + data[at + 16 :]
    journal.write_bytes(edited + b'{"version": 1}\n')
    with pytest.raises(JournalRejected) as caught:
        refresh_index(home)
    assert caught.value.line == 6 and "field `event_id`" in str(caught.value)
    assert dump(home) == before
    journal.write_bytes(edited)
    stats = refresh_index(home)
    assert stats.mode == "full" and "indexed bytes of journal" in (stats.reason or "")


def test_lines_keep_their_numbers_between_spellings_and_blank_lines(home: Home) -> None:
    spaced = orjson.dumps(orjson.loads(record(home, "s1", 1).to_line()), option=orjson.OPT_INDENT_2)
    journal = home.journals / "20260301T000000.000000Z-a.jsonl"
    journal.write_bytes(
        record(home, "s1", 0).to_line()
        + b"\n  \n"
        + spaced.replace(b"\n", b" ")
        + b"\r\n"
        + record(home, "s1", 2).to_line()
    )
    refresh_index(home)
    with open_index(home) as connection:
        assert connection.execute("SELECT seq, line FROM calls ORDER BY seq").fetchall() == [
            (0, 1),
            (1, 4),
            (2, 5),
        ]
    with open(journal, "ab") as handle:
        handle.write(b"\n" + record(home, "s1", 3).to_line() + b"{}\n")
    with pytest.raises(JournalRejected) as caught:
        refresh_index(home)
    assert caught.value.line == 8


def test_a_raw_value_field_is_refused(home: Home) -> None:
    good = orjson.loads(record(home, "s1", 7).to_line())
    error = rejected(home, orjson.dumps({**good, "arguments": {"query": "secret"}}) + b"\n")
    assert "field `arguments`" in str(error)


def test_an_oversized_record_is_refused(home: Home) -> None:
    good = orjson.loads(record(home, "s1", 7).to_line())
    big = orjson.dumps({**good, "server": "x" * MAX_RECORD_BYTES}) + b"\n"
    assert f"over the {MAX_RECORD_BYTES}-byte limit" in str(rejected(home, big))
    shape = {f"key_{number:04d}_" + "k" * 40: "string" for number in range(400)}
    wide = record(home, "s1", 7).model_copy(update={"arg_shape": shape}).to_line()  # the writers' spelling
    assert len(wide) > MAX_RECORD_BYTES and canonical_row(wide.decode().rstrip(), "j", 1) is not None
    assert f"the record is {len(wide) - 1} bytes" in str(rejected_again(home, wide))


def test_a_record_of_exactly_the_size_limit_is_indexed(home: Home) -> None:
    base = record(home, "s1", 0).model_copy(update={"arg_shape": {}})
    key = "k" * (MAX_RECORD_BYTES - len(base.to_line().rstrip()) - len('"":"string"'))
    line = base.model_copy(update={"arg_shape": {key: "string"}}).to_line()
    assert len(line.rstrip()) == MAX_RECORD_BYTES
    (home.journals / "20260301T000000.000000Z-a.jsonl").write_bytes(line)
    assert refresh_index(home).added == 1


def test_one_event_id_with_two_contents_is_refused_and_a_repeat_is_skipped(home: Home) -> None:
    journal = home.journals / "20260301T000000.000000Z-a.jsonl"
    journal.write_bytes(session_lines(home, "s1", 5))
    refresh_index(home)
    repeat = home.journals / "20260301T000001.000000Z-b.jsonl"
    repeat.write_bytes(record(home, "s1", 2).to_line())  # the same record again: skipped
    stats = refresh_index(home)
    assert (stats.added, stats.duplicates, stats.calls) == (0, 1, 5)
    before = dump(home)
    changed = record(home, "s1", 2).model_copy(update={"latency_ms": 99.0})
    with open(repeat, "ab") as handle:
        handle.write(changed.to_line())
    with pytest.raises(JournalRejected) as caught:
        refresh_index(home)
    assert caught.value.line == 2 and "already recorded with different content" in str(caught.value)
    assert "20260301T000000.000000Z-a.jsonl, line 3" in str(caught.value)
    assert dump(home) == before
    with pytest.raises(JournalRejected):
        refresh_index(home, rebuild=True)  # a rebuild finds the same conflict
    assert dump(home) == before


def test_failure_windows_count_turns_to_recovery(home: Home) -> None:
    journal = home.journals / "20260301T000000.000000Z-a.jsonl"
    calls = [
        record(home, "w", 0, "search", error="bad date"),  # recovered at 3: 3 turns
        record(home, "w", 1, "fetch"),
        record(home, "w", 2, "search", error="bad date"),  # recovered at 3: 1 turn
        record(home, "w", 3, "search"),
        record(home, "w", 4, "fetch", error="gone"),  # never recovered: 1 call after it
        record(home, "w", 5, "search"),
    ]
    journal.write_bytes(lines(*calls))
    refresh_index(home)
    windows = {row[0]: (row[5], row[6]) for row in dump(home)["windows"]}
    assert windows == {calls[0].event_id: (3, 1), calls[2].event_id: (1, 1), calls[4].event_id: (1, 0)}
    with open(journal, "ab") as handle:
        handle.write(lines(record(home, "w", 6, "search"), record(home, "w", 7, "fetch")))
    refresh_index(home)  # the session went on: its open window closes
    windows = {row[0]: (row[5], row[6]) for row in dump(home)["windows"]}
    assert windows[calls[4].event_id] == (3, 1)


def test_missing_corrupt_and_incomplete_indexes_are_unavailable_evidence(home: Home) -> None:
    with pytest.raises(EvidenceUnavailable, match="no index yet"):
        open_index(home)
    (home.journals / "20260301T000000.000000Z-a.jsonl").write_bytes(session_lines(home, "s1", 5))
    refresh_index(home)
    with sqlite3.connect(home.index_db) as connection:
        connection.execute("UPDATE meta SET value = '0' WHERE key = 'complete'")
    connection.close()
    with pytest.raises(EvidenceUnavailable, match="incomplete") as caught:
        open_index(home)
    assert caught.value.exit_code == EXIT_EVIDENCE_UNAVAILABLE == 3
    assert refresh_index(home).mode == "full"  # an incomplete index is rebuilt
    home.index_db.write_bytes(b"this is not a database" * 100)
    with pytest.raises(EvidenceUnavailable, match="corrupt"):
        open_index(home)
    assert refresh_index(home).mode == "full"
    assert len(dump(home)["calls"]) == 5


def test_the_index_command(home: Home) -> None:
    cli = CliRunner()
    empty = cli.invoke(main, ["index"], catch_exceptions=False)
    assert empty.exit_code == 0 and "no journals under" in empty.output
    journal = home.journals / "20260301T000000.000000Z-a.jsonl"
    journal.write_bytes(session_lines(home, "s1", 10))
    result = cli.invoke(main, ["index"], catch_exceptions=False)
    assert result.exit_code == 0
    assert result.output.startswith("indexed 10 new call record(s) from 1 journal(s) (incremental;")
    assert "the index holds 10 call(s) and 2 failure window(s)" in result.output
    rebuilt_output = cli.invoke(main, ["index", "--rebuild"]).output
    assert "(full, rebuild requested;" in rebuilt_output
    home.index_db.unlink()
    assert cli.invoke(main, ["index"]).exit_code == 0 and len(dump(home)["calls"]) == 10
    with open(journal, "ab") as handle:
        handle.write(b'{"version": 1}\n')
    damaged = cli.invoke(main, ["index"])
    assert damaged.exit_code == 2
    assert f"{journal}:11: not a call record (field `event_id`: Field required)" in damaged.output
    assert "index" in cli.invoke(main, ["index", "--help"]).output


def mutations(good: dict[str, Any]) -> list[dict[str, Any]]:
    """Variations on a valid record: many invalid, some valid in a non-canonical spelling."""
    values: list[Any] = [None, True, 0, -1, 1.0, 2.5, "", "x", "1", [], {}, "x" * 300, "NOT_FOUND", "ok"]
    values += ["2026-03-01T09:00:00+02:00", "2026-03-01T09:00:00", "2026-13-01T09:00:00Z", "0123456789abcdef"]
    values += ["12345678-1234-4234-8234-123456789ABC", {"q": "string"}, {"q": "date"}, "error", "unknown"]
    out = []
    for key in [*good, "extra"]:
        out.append({k: v for k, v in good.items() if k != key})
        out.extend({**good, key: value} for value in values)
    return out


def test_the_fast_path_agrees_with_the_model_on_every_mutation(home: Home) -> None:
    """The index's fast path accepts a line only when CallRecord does, and builds the same row."""
    samples = [record(home, "s1", 0), record(home, "s1", 1, error="nope")]
    samples.append(samples[1].model_copy(update={"retryable": True, "err_code": "-32602", "probe": True}))
    checked = accepted = 0
    for sample in samples:
        good = orjson.loads(sample.to_line())
        for data in [good, *mutations(good)]:
            line = orjson.dumps(data)
            try:
                expected = model_row(line, Path("j.jsonl"), 1)
            except JournalRejected:
                expected = None
            fast = fast_row(data, "j.jsonl", 1)
            if fast is not None:
                accepted += 1
                assert fast == expected, data
            checked += 1
    assert checked > 300 and accepted >= len(samples)


def test_the_fast_path_is_taken_for_written_records(home: Home) -> None:
    rng = random.Random(3)
    for seq in range(50):
        sample = record(home, "s", seq, error="x" if rng.random() < 0.3 else None)
        assert fast_row(orjson.loads(sample.to_line()), "j", 1) is not None


def line_mutations(line: str, rng: random.Random) -> list[str]:
    """Spellings of a canonical line: a few valid records, most not, many at the line pattern's edges."""
    out = []
    for old, new in [
        ('"seq":', '"seq": '),
        ('"seq":', '"seq":0'),
        ('"seq":', '"seq":1' + "0" * 18),
        ('{"version":1,', '{"version":1.0,'),
        ('{"version":1,', '{"version":"1",'),
        ('{"version":1,', ""),
        ('Z"', '+00:00"'),
        ('Z"', '+01:30"'),
        ('Z"', '"'),
        ("T09:", "T24:"),
        ("T09:", "t09:"),
        ("2026-03-01", "2026-02-30"),
        ("2026-03-01", "2026-3-01"),
        ("2026-03-01", "0000-03-01"),
        ('"server":"notes"', '"server":"n\\u00f6tes"'),
        ('"server":"notes"', '"server":"nötes"'),
        ('"server":"notes"', '"server":"no\\/tes"'),
        ('"server":"notes"', '"server":""'),
        ('"server":"notes"', '"server":"' + "n" * 200 + '"'),
        ('"server":"notes"', '"server":"' + "n" * 201 + '"'),
        ('"server":"notes"', '"server":"no\ttes"'),
        ('"session":"s1"', '"session":"s\\/1"'),
        ('"session":"s1"', '"session":"s 1"'),
        ('"arg_shape":{"query":"string"}', '"arg_shape":{}'),
        ('"arg_shape":{"query":"string"}', '"arg_shape":{"q":"integer","a":"string"}'),
        ('"arg_shape":{"query":"string"}', '"arg_shape":{"q":"integer","q":"string"}'),
        ('"arg_shape":{"query":"string"}', '"arg_shape":{"q":"date"}'),
        ('"arg_shape":{"query":"string"}', '"arg_shape":{"":"null","\\"":"array"}'),
        ('"latency_ms":2.5', '"latency_ms":2.50'),
        ('"latency_ms":2.5', '"latency_ms":25e-1'),
        ('"latency_ms":2.5', '"latency_ms":1E+2'),
        ('"latency_ms":2.5', '"latency_ms":1e400'),
        ('"latency_ms":2.5', '"latency_ms":-0.0'),
        ('"latency_ms":2.5', '"latency_ms":-2.5'),
        ('"latency_ms":2.5', '"latency_ms":02.5'),
        ('"latency_ms":2.5', '"latency_ms":3'),
        ('"latency_ms":2.5,', ""),
        ('"request_bytes":90', '"request_bytes":9' + "0" * 18),
        ('"request_bytes":90', '"request_bytes":-90'),
        ('"request_bytes":90', '"request_bytes":090'),
        ('"request_bytes":90', '"request_bytes":90.0'),
        ('"response_bytes":300,', ""),
        ('"probe":false', '"probe":0'),
        ('"probe":false', '"probe":true'),
        ('"outcome":"ok"', '"outcome":"unknown"'),
        ('"outcome":"ok"', '"outcome":"error"'),
        ('"outcome":"error"', '"outcome":"ok"'),
        ('"outcome":"error"', '"outcome":"unknown"'),
        (',"retryable":true', ',"retryable":null'),
        (',"retryable":true', ""),
        ('"err_code":"not_found"', '"err_code":"not found"'),
        (',"err_code":"not_found"', ""),
    ]:
        if old in line:
            out.append(line.replace(old, new, 1))
    pool = '0123456789abcdefxyzAZ:.,-+eE "\\{}[]\t\x00é\udcff'
    for _ in range(300):
        at = rng.randrange(len(line))
        out.append(line[:at] + rng.choice(pool) + line[at + rng.choice((0, 1)) :])
    return out


def test_the_line_pattern_agrees_with_the_model_on_every_mutated_line(home: Home) -> None:
    """`canonical_row` accepts a line only when CallRecord does, and builds the same row; so do the others."""
    rng = random.Random(11)
    base = record(home, "s1", 4, error="nope")
    samples = [
        record(home, "s1", 0),
        base,
        base.model_copy(update={"retryable": True, "err_code": "not_found", "probe": True}),
        base.model_copy(update={"at": T0, "latency_ms": 1e-7, "response_bytes": None}),
        record(home, "s1", 1).model_copy(update={"arg_shape": {"z": "integer", "a": "object"}}),
    ]
    checked = canonical = 0
    for sample in samples:
        line = sample.to_line().decode().rstrip("\n")
        for text in [line, *line_mutations(line, rng)]:
            raw = text.encode("utf-8", "surrogateescape")
            try:
                expected = model_row(raw, Path("j.jsonl"), 1)
            except JournalRejected:
                expected = None
            fast = canonical_row(text, "j.jsonl", 1)
            if fast is not None:
                canonical += 1
                assert fast == expected, text
            try:
                parsed = parse_lines(raw + b"\n", Path("j.jsonl"), 0)
            except JournalRejected:
                parsed = None
            if text.strip():
                assert parsed == (None if expected is None else [expected]), text
            checked += 1
    assert checked > 1_500 and canonical >= 40


def test_written_records_take_the_line_pattern(home: Home) -> None:
    rng = random.Random(3)
    for seq in range(50):
        sample = record(home, "s", seq, error="x" if rng.random() < 0.3 else None)
        if seq % 3 == 0:
            sample = sample.model_copy(update={"at": T0, "latency_ms": None, "response_bytes": None})
        if seq % 4 == 0 and sample.outcome == "error":
            sample = sample.model_copy(update={"retryable": False, "probe": True})
        line = sample.to_line().decode().rstrip("\n")
        assert canonical_row(line, "j", 1) == model_row(line.encode(), Path("j"), 1)


def test_a_refresh_puts_back_the_process_settings_it_changes(home: Home) -> None:
    (home.journals / "20260301T000000.000000Z-a.jsonl").write_bytes(session_lines(home, "s1", 5))
    adapters = dict(sqlite3.adapters)
    assert gc.isenabled()
    refresh_index(home)
    assert gc.isenabled() and sqlite3.adapters == adapters
    gc.disable()
    try:
        refresh_index(home, rebuild=True)
        assert not gc.isenabled()
    finally:
        gc.enable()
