"""Everything the project writes is its owner's alone: files 0600, folders 0700.

A real `mcpipechekr run` and `evaluate` on the bundled example, in their own processes (the capture
proxy's too), started with the permissive umask a shell usually has: every file and folder under
runs/ and the findings home, traces, journals, stderr logs, the manifest and the bug report
included, must be unreadable to the group and the others.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

from test_run_cli import FIRST, _project


def test_every_file_and_folder_written_by_a_run_and_its_evaluation_is_private(
    tmp_path: Path, emailindex_dir: Path, emailindex_db: Path
) -> None:
    config = _project(tmp_path, emailindex_dir, emailindex_db, "paths: {home: home}\n")
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
    env.pop("PYTHONPATH", None)
    for args in (["run", "--task", FIRST], ["evaluate", "latest"]):
        done = subprocess.run(
            ["sh", "-c", 'umask 022 && exec "$@"', "sh", sys.executable, "-m", "mcpipechekr", *args,
             "--config", str(config)],
            capture_output=True, text=True, timeout=240, env=env, cwd=tmp_path, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    written = [path for root in (tmp_path / "runs", tmp_path / "home") for path in [root, *root.rglob("*")]]
    kinds = {path.suffix for path in written if path.is_file()}
    assert {".json", ".jsonl", ".log", ".md"} <= kinds, kinds  # traces, journals, logs, the narrative
    loose = [
        f"{path.relative_to(tmp_path)} {stat.filemode(path.lstat().st_mode)}"
        for path in written
        if not path.is_symlink() and path.lstat().st_mode & 0o077
    ]
    assert loose == []
