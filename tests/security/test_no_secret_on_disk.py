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
