"""Ctrl-C, a full disk, a folder that may not be written, bad input under doit: one line, a known status.

Every case runs a real command in a project made by `mcpipechekr init`, as a
user would: Ctrl-C is SIGINT to the command's process group (what a terminal
sends) once the server under test is known to be running and stuck (the tiny
server's `--hang`, seen in its stderr log); the full disk is RLIMIT_FSIZE,
under which a write past the limit fails with EFBIG exactly where ENOSPC
would.
"""

from __future__ import annotations

import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import git
import pytest

# Its module fixtures are costly: under pytest-xdist one worker runs the whole module, building them once.
pytestmark = pytest.mark.xdist_group("test_stops")

SERVER = Path(__file__).resolve().parent / "servers" / "tiny_server.py"
TASKS = """\
tasks:
  - task_id: say-hello
    prompt: Say hello back to me.
    task_type: open_ended
"""


def _run(project: Path, argv: list[str], **popen: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, cwd=project, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL, **popen
    )


def mcpipechekr(*args: str) -> list[str]:
    return [sys.executable, "-m", "mcpipechekr", *args]


def doit(*args: str) -> list[str]:
    return [sys.executable, "-m", "doit", *args]


@pytest.fixture(scope="module")
def initialised(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project from `mcpipechekr init` with a git repository and a fix agent that needs no model, so that
    `doit loop` gets past its checks, and a baseline; each test works on a copy."""
    root = tmp_path_factory.mktemp("initialised")
    shutil.copy(SERVER, root / "server.py")
    done = _run(root, mcpipechekr("init", "--command", "python server.py"))
    assert done.returncode == 0, done.stderr
    config = (root / "config.yaml").read_text(encoding="utf-8")
    config = config.replace("  # repo: path/to/server/repo", "  repo: .  #")
    (root / "config.yaml").write_text(re.sub(r"(?m)^  agent: \S+", "  agent: demo", config), encoding="utf-8")
    (root / "tasks.yaml").write_text(TASKS, encoding="utf-8")  # init's example is only a placeholder
    repo = git.Repo.init(root)
    repo.index.add(["server.py", "config.yaml", "tasks.yaml", "dodo.py", ".gitignore"])
    repo.index.commit("the server")
    baseline = _run(root, doit("baseline"))
    assert baseline.returncode == 0, baseline.stdout + baseline.stderr
    return root


@pytest.fixture
def project(initialised: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(initialised, tmp_path / "project", symlinks=True))


def hang_the_server(project: Path) -> None:
    path = project / "config.yaml"
    text = path.read_text(encoding="utf-8")
    assert "args: [server.py]" in text
    path.write_text(text.replace("args: [server.py]", "args: [server.py, --hang]"), encoding="utf-8")


def hanging_servers(project: Path) -> set[int]:
    """Pids of the hanging tiny servers running in `project` (each in a session of its own)."""
    found = set()
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and b"--hang" in (proc / "cmdline").read_bytes():
                if Path(os.readlink(proc / "cwd")) == project:
                    found.add(int(proc.name))
        except OSError:
            continue
    return found


def interrupted(project: Path, argv: list[str]) -> tuple[int, str, str, float]:
    """Run `argv`, press Ctrl-C once the server hangs; (status, stdout, stderr, seconds it took to stop).

    The server must be gone afterwards: the command started it, in a session of its own that a terminal's
    Ctrl-C does not reach, so only the command can end it."""
    process = subprocess.Popen(
        argv,
        cwd=project,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not any(b"tiny_server: hanging" in log.read_bytes() for log in project.rglob("*.log")):
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "the server should have started"
            time.sleep(0.05)
        servers = hanging_servers(project)
        assert servers
        pressed = time.monotonic()
        os.killpg(process.pid, signal.SIGINT)
        out, err = process.communicate(timeout=60)
        took = time.monotonic() - pressed
        while hanging_servers(project) & servers and time.monotonic() < pressed + 30:
            time.sleep(0.1)
        left = hanging_servers(project) & servers
        for pid in left:
            os.killpg(pid, signal.SIGKILL)
        assert not left, "the server under test outlived the command"
        return process.returncode, out, err, took
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


@pytest.mark.slow
def test_ctrl_c_ends_a_command_with_one_line_and_status_130(project: Path) -> None:
    hang_the_server(project)
    status, out, err, took = interrupted(project, mcpipechekr("check"))
    assert status == 130, out + err
    assert err.splitlines() == ["interrupted (Ctrl-C): what was written before it is kept"]
    assert "Aborted!" not in out + err
    assert took < 15  # not the health check's 30 s: start-up is cancelled, not waited for


@pytest.mark.parametrize("argv", [doit("loop"), mcpipechekr("loop")], ids=["doit-loop", "mcpipechekr-loop"])
@pytest.mark.slow
def test_ctrl_c_ends_the_loop_with_one_line_naming_the_run_kept(project: Path, argv: list[str]) -> None:
    hang_the_server(project)
    status, out, err, _ = interrupted(project, argv)
    assert status == 130, out + err
    (run,) = sorted(path.name for path in (project / "runs").glob("run-*"))
    assert err.splitlines() == [
        f"interrupted (Ctrl-C): kept what was written in runs/{run}; run the command again to go on"
    ]
    assert "Traceback" not in out


def _file_size_limit(limit: int) -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # else the signal kills the process; ignored, writes fail
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


def test_a_full_disk_names_the_file_and_leaves_no_half_written_run(project: Path) -> None:
    result = _run(project, mcpipechekr("run"), preexec_fn=lambda: _file_size_limit(1000))
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    (line,) = result.stderr.splitlines()
    written = re.fullmatch(
        r"Error: a file operation failed on (runs/run-[0-9-]+)/manifest\.json: "
        r"the file is larger than allowed \(EFBIG\)",
        line,
    )
    assert written, line
    assert not (project / written[1]).exists()  # the folder went with its manifest
    assert not [path for path in project.rglob("*") if ".tmp-" in path.name]


def test_a_full_disk_under_doit_is_one_line_and_status_2(project: Path) -> None:
    (project / ".mcpipechekr" / "doit.sqlite").unlink()
    result = _run(project, doit("trace"), preexec_fn=lambda: _file_size_limit(1000))
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    assert "cannot write doit's dependency file .mcpipechekr/doit.sqlite" in result.stdout


@pytest.mark.skipif(
    os.geteuid() == 0, reason="file modes do not deny root; the full-disk tests cover the path"
)
def test_a_read_only_project_is_one_line_and_status_2(project: Path) -> None:
    project.chmod(0o555)
    try:
        result = _run(project, mcpipechekr("run"))
    finally:
        project.chmod(0o755)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    assert "permission denied (EACCES)" in result.stderr


@pytest.mark.parametrize(
    "argv",
    [doit("loop"), mcpipechekr("loop"), mcpipechekr("doit", "trace")],
    ids=["doit", "loop", "cli-doit"],
)
def test_bad_input_under_doit_is_status_2_with_its_line(project: Path, argv: list[str]) -> None:
    path = project / "tasks.yaml"
    path.write_text(path.read_text(encoding="utf-8").replace("task_type: open_ended", "task_type: opened"))
    result = _run(project, argv)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "must be deterministic or open_ended" in result.stdout
    assert "tasks.yaml:" in result.stdout
    assert "TaskFailed" not in result.stdout + result.stderr and "Traceback" not in result.stderr
    assert not list(project.glob("runs/run-*"))


def test_a_full_disk_under_a_database_names_the_database(project: Path) -> None:
    result = _run(project, mcpipechekr("index"), preexec_fn=lambda: _file_size_limit(1000))
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    assert result.stderr.startswith(
        "Error: the database .mcpipechekr/index.db could not be used: disk I/O error"
    ), result.stderr
    assert not [path for path in project.rglob("*") if ".tmp-" in path.name]


def test_a_full_disk_under_the_servers_repository_is_one_line(project: Path) -> None:
    (project / "server.py").write_text((project / "server.py").read_text() + "\n# edited\n")  # git must look
    result = _run(project, mcpipechekr("run"), preexec_fn=lambda: _file_size_limit(100))
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    assert "cannot read the state of the server's repository" in result.stderr, result.stderr
    assert not list(project.glob("runs/run-*"))
