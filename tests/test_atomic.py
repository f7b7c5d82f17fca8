"""Atomic writes and journals, including writers killed with SIGKILL mid-write."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import orjson
import pytest

from mcpipechekr.artifacts.atomic import (
    append_jsonl,
    atomic_open,
    atomic_write_bytes,
    atomic_write_json,
    atomic_write_text,
    is_temp_file,
    read_jsonl,
)
from mcpipechekr.errors import UserError

PAYLOAD = 3 << 20  # big enough that a kill usually lands inside a write

WRITER = textwrap.dedent(
    """
    import sys
    from mcpipechekr.artifacts.atomic import atomic_write_json

    target, size = sys.argv[1], int(sys.argv[2])
    print("ready", flush=True)
    generation = 0
    while True:
        # Odd and even generations differ in letter and length, so a mix of two is detectable.
        letter, length = ("a", size) if generation % 2 == 0 else ("b", size + 12345)
        atomic_write_json(target, {"generation": generation, "payload": letter * length})
        generation += 1
    """
)

APPENDER = textwrap.dedent(
    """
    import sys
    from mcpipechekr.artifacts.atomic import append_jsonl

    print("ready", flush=True)
    n = 0
    while True:
        append_jsonl(sys.argv[1], {"n": n, "pad": "z" * 2000})
        n += 1
    """
)


def _assert_complete(target: Path) -> int | None:
    """The target is absent or one whole generation; returns that generation."""
    if not target.exists():
        return None
    value = orjson.loads(target.read_bytes())  # a partial file would not even parse
    generation = value["generation"]
    if generation < 0:
        assert value["payload"] == "old"
    else:
        letter, length = ("a", PAYLOAD) if generation % 2 == 0 else ("b", PAYLOAD + 12345)
        assert value["payload"] == letter * length
    return generation


def _spawn(script: str, *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", script, *args], stdout=subprocess.PIPE)


def _wait_ready(proc: subprocess.Popen[bytes]) -> subprocess.Popen[bytes]:
    assert proc.stdout is not None
    assert proc.stdout.readline() == b"ready\n"
    return proc


def _start(script: str, *args: str) -> subprocess.Popen[bytes]:
    return _wait_ready(_spawn(script, *args))


@pytest.mark.slow
def test_killed_writer_leaves_old_or_new_content_never_partial(tmp_path: Path) -> None:
    seed = int.from_bytes(os.urandom(4), "big")
    rng = random.Random(seed)
    writers = 12
    targets = []
    before: list[bytes | None] = []
    for i in range(writers):  # a third start from nothing, the rest from an old complete file
        folder = tmp_path / f"w{i}"
        folder.mkdir()
        target = folder / "artifact.json"
        if i % 3:
            atomic_write_json(target, {"generation": -1, "payload": "old"})
        targets.append(target)
        before.append(target.read_bytes() if target.exists() else None)
    procs = [_spawn(WRITER, str(target), str(PAYLOAD)) for target in targets]
    for proc in procs:  # all start together; each is killed at its own random moment
        _wait_ready(proc)
    began = time.monotonic()
    delays = [rng.uniform(0.0, 0.6) for _ in procs]
    for proc, delay in sorted(zip(procs, delays, strict=True), key=lambda pair: pair[1]):
        time.sleep(max(0.0, began + delay - time.monotonic()))
        proc.send_signal(signal.SIGKILL)
    for proc in procs:
        proc.wait(timeout=10)

    left_temp = 0
    finished = 0
    for target, old in zip(targets, before, strict=True):
        generation = _assert_complete(target)
        if generation is None:
            assert old is None, f"seed {seed}: {target} vanished"
        elif generation < 0:
            assert target.read_bytes() == old
        else:
            finished += 1
        for entry in target.parent.iterdir():
            if entry == target:
                continue
            assert is_temp_file(entry), f"seed {seed}: unexpected file {entry}"
            assert entry.name != target.name and entry.name.startswith(".artifact.json.tmp-")
            left_temp += 1
    # The kills must have landed inside writes, and writes must have completed, or nothing was shown.
    assert left_temp >= 1, f"seed {seed}: no kill interrupted a write; enlarge PAYLOAD"
    assert finished >= 1, f"seed {seed}: no writer ever finished a write"


@pytest.mark.slow
def test_killed_appender_leaves_only_whole_records(tmp_path: Path) -> None:
    journal = tmp_path / "journal.jsonl"
    for _ in range(3):
        proc = _start(APPENDER, str(journal))
        time.sleep(random.uniform(0.05, 0.2))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        records = read_jsonl(journal)
        assert records and all(record["pad"] == "z" * 2000 for record in records)
    # Each appender restarted its count at 0; within each life the numbers are consecutive.
    numbers = [record["n"] for record in read_jsonl(journal)]
    lives = [i for i, n in enumerate(numbers) if n == 0]
    assert len(lives) == 3
    for start, end in zip(lives, [*lives[1:], len(numbers)], strict=True):
        assert numbers[start:end] == list(range(end - start))


def test_interrupt_inside_write_keeps_target_and_removes_temp(tmp_path: Path) -> None:
    target = tmp_path / "report.json"
    atomic_write_text(target, "old complete content\n")
    with pytest.raises(KeyboardInterrupt):
        with atomic_open(target) as handle:
            handle.write(b"new but partial")
            raise KeyboardInterrupt
    assert target.read_text() == "old complete content\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json"]


def test_unserialisable_value_leaves_target_untouched(tmp_path: Path) -> None:
    target = tmp_path / "new.json"
    atomic_write_json(target, {"ok": 1})
    with pytest.raises(TypeError):
        atomic_write_json(target, {"bad": object()})
    assert orjson.loads(target.read_bytes()) == {"ok": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["new.json"]


def test_error_raised_by_data_source_mid_stream(tmp_path: Path) -> None:
    target = tmp_path / "big.bin"
    atomic_write_bytes(target, b"v1")

    class DiskFull(OSError):
        pass

    with pytest.raises(DiskFull):
        with atomic_open(target) as handle:
            for _ in range(4):
                handle.write(b"x" * 65536)
            raise DiskFull("no space left")
    assert target.read_bytes() == b"v1"
    assert [p.name for p in tmp_path.iterdir()] == ["big.bin"]


def test_write_replaces_content_and_creates_parents(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "c.txt"
    assert atomic_write_text(target, "héllo\n") == target
    assert target.read_bytes() == "héllo\n".encode()
    atomic_write_bytes(target, b"second")
    assert target.read_bytes() == b"second"
    assert [p.name for p in target.parent.iterdir()] == ["c.txt"]


def test_json_spelling_is_indented_with_trailing_newline(tmp_path: Path) -> None:
    target = tmp_path / "x.json"
    atomic_write_json(target, {"b": 1, "a": [1, 2]})
    assert target.read_text() == '{\n  "b": 1,\n  "a": [\n    1,\n    2\n  ]\n}\n'
    atomic_write_json(target, {"b": 1, "a": 2}, sort_keys=True)
    assert target.read_text() == '{\n  "a": 2,\n  "b": 1\n}\n'


def test_temp_file_names_are_hidden_and_distinct_from_target(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[str] = []
    target = tmp_path / "manifest.json"
    real_replace = os.replace

    def spy(src: str | Path, dst: str | Path) -> None:
        seen.append(Path(src).name)
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", spy)  # only observes the name the real code picks
    atomic_write_text(target, "1")
    atomic_write_text(target, "2")
    assert len(seen) == 2 and seen[0] != seen[1]
    for name in seen:
        assert name.startswith(".manifest.json.tmp-") and is_temp_file(name) and name != target.name
    assert not is_temp_file(target)
    assert target.read_text() == "2"


def test_jsonl_reader_skips_uncommitted_tail_and_appender_cuts_it(tmp_path: Path) -> None:
    journal = tmp_path / "events.jsonl"
    assert read_jsonl(journal) == []
    append_jsonl(journal, {"n": 1})
    append_jsonl(journal, {"n": 2, "text": "é"})
    with open(journal, "ab") as handle:  # a record whose writer died before the newline
        handle.write(b'{"n": 3, "tex')
    assert read_jsonl(journal) == [{"n": 1}, {"n": 2, "text": "é"}]
    append_jsonl(journal, {"n": 4})
    assert read_jsonl(journal) == [{"n": 1}, {"n": 2, "text": "é"}, {"n": 4}]
    assert journal.read_bytes().count(b"\n") == 3


def test_jsonl_torn_first_record_is_cut_entirely(tmp_path: Path) -> None:
    journal = tmp_path / "events.jsonl"
    journal.write_bytes(b'{"half": ')
    assert read_jsonl(journal) == []
    append_jsonl(journal, {"n": 1})
    assert journal.read_bytes() == b'{"n":1}\n'


def test_jsonl_damaged_complete_line_names_file_and_line(tmp_path: Path) -> None:
    journal = tmp_path / "events.jsonl"
    journal.write_bytes(b'{"n": 1}\nnot json\n{"n": 3}\n')
    with pytest.raises(UserError) as info:
        read_jsonl(journal)
    assert str(journal) in info.value.message and "line 2" in info.value.message


def test_next_write_removes_the_temp_files_of_killed_writers_only(tmp_path: Path) -> None:
    target = tmp_path / "bug_report.json"
    atomic_write_json(target, {"payload": "old"})
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True)
    dead_pid = int(gone.stdout)  # a writer killed mid-write leaves a temp file named with its pid
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        dead = tmp_path / f".bug_report.json.tmp-{dead_pid}-0123abcd"
        alive = tmp_path / f".bug_report.json.tmp-{live.pid}-4567cdef"  # a writer still at work
        other = tmp_path / f".tools.json.tmp-{dead_pid}-89ab0123"  # another target's: not this write's
        for path in (dead, alive, other):
            path.write_bytes(b'{"payload": ')

        atomic_write_json(target, {"payload": "new"})

        assert sorted(p.name for p in tmp_path.iterdir()) == sorted([target.name, alive.name, other.name])
        assert orjson.loads(target.read_bytes()) == {"payload": "new"}
    finally:
        live.kill()
        live.wait()
