"""A streamable-HTTP server with a `start` command: Phase 1 starts it, the agents reach it, it is stopped.

The server is tests/servers/tiny_server.py on a free port; its `pid` tool
tells each trace which process answered, so the test can see that process is
gone once the command has ended. `mcpipechekr run` and doit's trace targets
(`mcpipechekr loop`, attempts in threads) go through the same Phase 1 engine.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import git
import pytest
from project import mcpipechekr

from mcpipechekr.artifacts.trace import ToolCall, read_trace

SERVER = Path(__file__).parent / "servers" / "tiny_server.py"
TASKS = """\
tasks:
  - task_id: which-process
    prompt: Which process answers?
    task_type: deterministic
    allow_writes: true
    reference_calls:
      - tool: pid
        arguments: {}
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """An HTTP server the harness starts itself, a baseline, and a repository for the fix step."""
    port = free_port()
    shutil.copy(SERVER, tmp_path / "server.py")
    (tmp_path / "config.yaml").write_text(
        "server:\n"
        "  name: tiny\n"
        f"  url: http://127.0.0.1:{port}/mcp\n"
        f"  start: python server.py --http {port}\n"
        "  repo: .\n"
        "fix:\n"
        "  agent: demo\n"
    )
    (tmp_path / "tasks.yaml").write_text(TASKS)
    (tmp_path / ".gitignore").write_text("runs/\n.mcpipechekr/\n")
    repo = git.Repo.init(tmp_path)
    repo.index.add(["server.py", "config.yaml", "tasks.yaml", ".gitignore"])
    repo.index.commit("the server")
    return tmp_path


@pytest.fixture
def env() -> dict[str, str]:
    return {key: value for key, value in os.environ.items() if key != "MCPIPECHEKR_HOME"}


def answering_pids(traces: list[Path]) -> set[int]:
    """The server processes that answered the traces' `pid` calls; every trace complete, every call fine."""
    pids = set()
    for path in traces:
        trace = read_trace(path)
        assert trace.status == "completed", (path.name, trace.status_reason)
        (call,) = [step for step in trace.steps if isinstance(step, ToolCall)]
        assert call.tool == "pid" and not call.is_error, call
        (content,) = call.result_content  # type: ignore[misc]
        pids.add(int(content["text"]))
    return pids


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return Path(f"/proc/{pid}/stat").exists() and Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"


@pytest.mark.slow
def test_the_loop_starts_and_stops_an_http_server_with_a_start_command(
    project: Path, env: dict[str, str]
) -> None:
    baseline = mcpipechekr(project, env, "doit", "baseline")
    assert baseline.returncode == 0, baseline.stdout + baseline.stderr
    loop = mcpipechekr(project, env, "loop", "--repeat", "2")
    output = loop.stdout + loop.stderr
    assert loop.returncode == 0 and "has no server-side bug left to fix" in output, output  # evaluated, done
    (run,) = project.glob("runs/run-*")
    traces = sorted((run / "traces").glob("*.json"))
    assert len(traces) == 2, output
    pids = answering_pids(traces)
    assert pids and all(gone(pid) for pid in pids)


@pytest.mark.slow
def test_run_starts_and_stops_an_http_server_with_a_start_command(project: Path, env: dict[str, str]) -> None:
    ran = mcpipechekr(project, env, "run", "--repeat", "2")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    (run,) = project.glob("runs/run-*")
    pids = answering_pids(sorted((run / "traces").glob("*.json")))
    assert len(pids) == 1  # the attempts shared one process, started for the phase
    assert all(gone(pid) for pid in pids)


def listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.slow
def test_an_http_server_left_by_a_killed_run_is_ended_by_the_next_command(
    project: Path, env: dict[str, str]
) -> None:
    """SIGKILL leaves the started server running on its port; the next command must not test that one."""
    gate = project / "gate"
    config = (project / "config.yaml").read_text()
    (port,) = {int(word.split(":")[-1].split("/")[0]) for word in config.split() if word.startswith("http://")}
    config = config.replace("server.py --http", f"server.py --gate {gate} --http")
    (project / "config.yaml").write_text(config)
    (project / "tasks.yaml").write_text(
        "tasks:\n  - task_id: nap\n    prompt: Sleep for 0.1 seconds, then say so.\n"
        "    task_type: deterministic\n    allow_writes: true\n"
    )
    gate.touch()  # the `sleep` call waits while it exists: the run is held mid-call
    run = subprocess.Popen(
        [sys.executable, "-m", "mcpipechekr", "run"],
        cwd=project, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not any("sleep" in path.read_text() for path in project.glob("runs/run-*/journals/*.jsonl")):
            assert run.poll() is None and time.monotonic() < deadline, "the run never reached its sleep call"
            time.sleep(0.1)
    finally:
        run.kill()
        run.wait()
    assert listening(port)  # the killed run's server runs on

    gate.unlink()
    try:
        again = mcpipechekr(project, env, "run")
        assert again.returncode == 0, again.stdout + again.stderr
        assert "ended the HTTP server that server.start started" in again.stderr, again.stderr
        deadline = time.monotonic() + 10
        while listening(port):  # nothing of either run is left
            assert time.monotonic() < deadline, "a server still listens after the second run"
            time.sleep(0.1)
    finally:  # whatever the outcome, no server of this test outlives it
        for pid in servers_of(gate):
            os.kill(pid, signal.SIGKILL)


def servers_of(gate: Path) -> list[int]:
    """The processes whose command line names this test's gate file: its servers."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and str(gate).encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found
