"""No configured secret is ever on disk in the temp folder, even after the harness is killed.

The capture proxy an agent launches collects the server's environment and the values to redact
from the harness over a unix socket (`capture/secrets_desk.py`), so a `mcpipechekr run` killed with
SIGKILL or interrupted with SIGINT in the middle of its traces leaves nothing in `$TMPDIR` that
holds a secret.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_run_cli import _project

SECRET = "desk-secret-0a1b2c3d4e5f"
pytestmark = pytest.mark.xdist_group("test_no_secret_on_disk")


@pytest.mark.parametrize("stop", [signal.SIGKILL, signal.SIGINT])
def test_a_run_stopped_mid_trace_leaves_no_secret_in_the_temp_folder(
    stop: signal.Signals, tmp_path: Path, emailindex_dir: Path, emailindex_db: Path
) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    config = _project(tmp_path, emailindex_dir, emailindex_db, "paths: {home: home}\n")
    config.write_text(config.read_text().replace("  env: {", f"  env: {{API_TOKEN: {SECRET}, ", 1))
    env = {**os.environ, "TMPDIR": str(temp), "NO_COLOR": "1"}
    env.pop("PYTHONPATH", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "mcpipechekr", "run", "--config", str(config), "--repeat", "3"],
        cwd=tmp_path, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, start_new_session=True, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and process.poll() is None:
            journals = list((tmp_path / "runs").glob("*/journals/*.jsonl"))
            if journals and any(path.stat().st_size for path in journals):
                break  # an attempt's proxy is serving: the secrets reached it
            time.sleep(0.05)
        assert process.poll() is None, (
            f"the run ended before it could be stopped: {process.stderr.read()[-2000:]}"
        )
        os.killpg(process.pid, stop)
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)
    time.sleep(0.5)  # the proxies, orphaned, end with their agents
    holding = [
        str(path.relative_to(temp))
        for path in temp.rglob("*")
        if path.is_file() and not path.is_symlink() and SECRET.encode() in path.read_bytes()
    ]
    assert holding == []
    # Whatever the stopped run left in the temp folder, the next command of ours removes.
    left = [path.name for path in temp.iterdir() if path.name.startswith("mcpipechekr-")]
    subprocess.run(
        [sys.executable, "-m", "mcpipechekr", "validate", "--config", str(config)],
        cwd=tmp_path, env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=120,
    )  # fmt: skip
    assert [path.name for path in temp.iterdir() if path.name.startswith("mcpipechekr-")] == [], left


def test_a_command_removes_the_temp_folders_of_dead_processes_only(tmp_path: Path) -> None:
    """Folders of a process that is gone go; a live one's stay; an older version's secrets file goes."""
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True)
    dead_pid = int(gone.stdout)
    temp = tmp_path / "tmp"
    temp.mkdir()
    dead = temp / f"mcpipechekr-agent-p{dead_pid}-abc123de"
    (dead / "home").mkdir(parents=True)
    (dead / "home" / "opencode.json").write_text(SECRET)
    alive = temp / f"mcpipechekr-server-p{os.getpid()}-0f0f0f0f"
    alive.mkdir()
    legacy = temp / "mcpipechekr-find-mail-k2j3h4g5"
    legacy.mkdir()
    (legacy / "capture-secrets.json").write_text(f'{{"API_TOKEN": "{SECRET}"}}')
    (legacy / "trace.log").write_text("kept")
    other = temp / f"someone-else-p{dead_pid}-abc123de"
    other.mkdir()
    env = {**os.environ, "TMPDIR": str(temp)}
    env.pop("PYTHONPATH", None)
    subprocess.run(
        [sys.executable, "-m", "mcpipechekr", "validate"],
        cwd=tmp_path, env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=120,
    )  # fmt: skip
    assert not dead.exists() and alive.is_dir() and other.is_dir()
    assert sorted(path.name for path in legacy.iterdir()) == ["trace.log"]
