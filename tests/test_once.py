"""Files made once (the review key): whole or absent, even when their writer is killed."""

from __future__ import annotations

import stat
import subprocess
import sys
from pathlib import Path

from mcpipechekr._util.seal import ensure_key, read_key, seal_json, seal_matches


def dead_pid() -> int:
    """The id of a process that has exited: what a killed writer's temporary file is named with."""
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True)
    return int(done.stdout)


def test_a_key_file_left_empty_by_a_killed_writer_is_replaced_by_a_key(tmp_path: Path) -> None:
    path = tmp_path / "runs" / ".review-key"
    path.parent.mkdir()
    path.touch(mode=0o600)  # created, then killed before it wrote: nothing was ever sealed with it

    key = ensure_key(path)

    assert len(key) == 32 and read_key(path) == key
    assert path.read_text() == key.hex() + "\n" and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert ensure_key(path) == key and seal_matches(key, {"a": 1}, seal_json(read_key(path) or b"", {"a": 1}))


def test_the_key_is_published_whole_and_a_killed_writers_temp_file_goes(tmp_path: Path) -> None:
    path = tmp_path / ".review-key"
    leftover = tmp_path / f"..review-key.tmp-{dead_pid()}-0123abcd"  # `.<name>.tmp-<pid>-<hex>`
    leftover.write_bytes(b"")  # a writer killed before it linked its key into place

    key = ensure_key(path)

    assert sorted(p.name for p in tmp_path.iterdir()) == [".review-key"]
    assert read_key(path) == key and stat.S_IMODE(path.stat().st_mode) == 0o600
