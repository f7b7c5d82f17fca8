"""Hostile input files end `validate` (and `baseline`) with exit 2 and a file:line message, fast and small.

Each case plants one kind of hostile file in a project made by `mcpipechekr
init` (a link loop, a FIFO, a device, a directory, a file far over the size
limit, a number of 100,000 digits, a 10,000-character task id, a malformed
`.env`) and runs the real CLI in a child process. The child must exit 2 with
the file named (and its line, where there is one), print no traceback, use
under `CPU_LIMIT_S` seconds of CPU and (on Linux) under `RSS_LIMIT` of memory.

Time is measured as the child's CPU time: on a loaded two-core machine the
interpreter's start alone can take seconds of wall time, which says nothing
about the input. A hang (a FIFO read waits without using CPU) is caught by
the `HANG_LIMIT_S` deadline, after which the child is killed and the case fails.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from mcpipechekr._util.safe_read import MAX_INPUT_BYTES
from mcpipechekr._util.yamlsrc import ConfigFileError, read_dotenv

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="FIFOs, devices and rusage are POSIX")

SERVER = Path(__file__).resolve().parent / "servers" / "tiny_server.py"
CPU_LIMIT_S = 5.0
RSS_LIMIT = 200 * 1024 * 1024
HANG_LIMIT_S = 30.0
BIG = 20 * 1024 * 1024


@dataclass
class Outcome:
    returncode: int
    output: str
    wall_s: float
    cpu_s: float
    max_rss: int  # bytes


# Runs the command and writes its rusage as JSON to argv[1]. A child forked straight from pytest would
# count pytest's own memory (it is the child's until exec) in its peak; this small process's does not.
_MEASURE = """
import json, resource, subprocess, sys
code = subprocess.run(sys.argv[2:], stdin=subprocess.DEVNULL).returncode
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
with open(sys.argv[1], "w") as out:
    json.dump({"cpu_s": usage.ru_utime + usage.ru_stime, "max_rss": usage.ru_maxrss}, out)
sys.exit(code if code >= 0 else 128 - code)
"""


def run_cli(project: Path, *args: str) -> Outcome:
    """`python -m mcpipechekr ARGS` in `project`, measured; killed (and failed) after HANG_LIMIT_S."""
    out, usage_file = project.parent / "cli-output.txt", project.parent / "cli-usage.json"
    command = [sys.executable, "-m", "mcpipechekr", *args]
    with out.open("wb") as sink:
        started = time.monotonic()
        proc = subprocess.Popen(
            [sys.executable, "-c", _MEASURE, str(usage_file), *command],
            cwd=project,
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            proc.wait(timeout=HANG_LIMIT_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            pytest.fail(f"`mcpipechekr {' '.join(args)}` still running after {HANG_LIMIT_S} s: it hangs")
        wall = time.monotonic() - started
    usage = json.loads(usage_file.read_text())
    rss = usage["max_rss"] * (1 if sys.platform == "darwin" else 1024)
    return Outcome(proc.returncode, out.read_text(errors="replace"), wall, usage["cpu_s"], rss)


@pytest.fixture(scope="module")
def initialised(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One project from `mcpipechekr init` against the tiny server, with its example task edited."""
    root = tmp_path_factory.mktemp("initialised")
    shutil.copy(SERVER, root / "server.py")
    done = subprocess.run(
        [sys.executable, "-m", "mcpipechekr", "init", "--command", "python server.py"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    tasks = root / "tasks.yaml"  # not the untouched example, which baseline refuses on its own
    tasks.write_text(tasks.read_text().replace("# min_calls: 1", "min_calls: 1"))
    return root


@pytest.fixture
def project(initialised: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(initialised, tmp_path / "project", symlinks=True))


def line_of(path: Path, needle: str) -> int:
    text = path.read_text()
    return text[: text.index(needle)].count("\n") + 1


def _replace(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def _loop(name: str) -> Callable[[Path], str]:
    def plant(project: Path) -> str:
        (project / name).unlink(missing_ok=True)
        (project / name).symlink_to(name)
        return f"{name}: "

    return plant


def _fifo(project: Path) -> str:
    (project / "tasks.yaml").unlink()
    os.mkfifo(project / "tasks.yaml")
    return "tasks.yaml: "


def _dev_zero(project: Path) -> str:
    (project / "tasks.yaml").unlink()
    (project / "tasks.yaml").symlink_to("/dev/zero")
    return "tasks.yaml: "


def _directory(name: str) -> Callable[[Path], str]:
    def plant(project: Path) -> str:
        (project / name).unlink(missing_ok=True)
        (project / name).mkdir()
        return f"{name}: "

    return plant


def _big(name: str) -> Callable[[Path], str]:
    def plant(project: Path) -> str:
        path = project / name
        with path.open("a") as handle:
            line = "# " + "x" * 77 + "\n"
            handle.write(line * (BIG // len(line) + 1))
        return f"{name}: "

    return plant


def _many_digits(project: Path) -> str:
    tasks = project / "tasks.yaml"
    _replace(tasks, "min_calls: 1", "min_calls: " + "1" * 100_000)
    return f"tasks.yaml:{line_of(tasks, 'min_calls:')}: "


def _long_id(project: Path) -> str:
    tasks = project / "tasks.yaml"
    _replace(tasks, "task_id: example-task", "task_id: " + "a" * 10_000)
    return f"tasks.yaml:{line_of(tasks, 'task_id:')}: "


def _env(content: bytes, line: int | None) -> Callable[[Path], str]:
    def plant(project: Path) -> str:
        (project / ".env").write_bytes(content)
        return ".env: " if line is None else f".env:{line}:"

    return plant


def _env_loop(project: Path) -> str:
    (project / ".env").symlink_to(".env")
    return ".env: "


CASES: dict[str, tuple[Callable[[Path], str], str, bool]] = {
    # id: (plant it, returning the expected `file:line:` lead; a phrase of the message; also baseline?)
    "tasks-many-digits": (_many_digits, "min_calls", True),
    "tasks-link-loop": (_loop("tasks.yaml"), "link that loops", False),
    "config-link-loop": (_loop("config.yaml"), "link that loops", False),
    "tasks-fifo": (_fifo, "FIFO", True),
    "tasks-dev-zero": (_dev_zero, "character device", True),
    "tasks-directory": (_directory("tasks.yaml"), "a directory", False),
    "tasks-20mb": (_big("tasks.yaml"), "over the 5 MiB limit", True),
    "config-20mb": (_big("config.yaml"), "over the 5 MiB limit", False),
    "tasks-long-id": (_long_id, "at most 100 characters", True),
    "env-directory": (_directory(".env"), "a directory", False),
    "env-link-loop": (_env_loop, "link that loops", False),
    "env-no-equals": (_env(b"FOO=1\nJUSTTEXT\n", 2), "has no '='", False),
    "env-unparseable": (_env(b"FOO=1\n  not a line\n", 2), "not a NAME=value line", False),
    "env-20mb-line": (
        _env(b"FOO=1\nBAR=" + b"x" * BIG + b"\n", None),
        "(reached at line 2)",
        False,
    ),
    "env-nul": (_env(b"FOO=1\nBAR=a\0b\n", 2), "NUL byte", False),
}


RUNS = [(kind, "validate") for kind in CASES] + [
    (kind, "baseline") for kind, case in CASES.items() if case[2]
]


@pytest.mark.parametrize(("kind", "command"), RUNS, ids=[f"{kind}-{command}" for kind, command in RUNS])
def test_hostile_input_is_refused(project: Path, kind: str, command: str) -> None:
    plant, phrase, _ = CASES[kind]
    lead = plant(project)
    args = ["validate", "--offline"] if command == "validate" else ["baseline"]
    outcome = run_cli(project, *args)
    assert outcome.returncode == 2, outcome.output
    assert "Traceback" not in outcome.output
    assert lead in outcome.output and phrase in outcome.output, outcome.output
    assert len(outcome.output) < 2_000, "the message repeats the hostile input"
    assert outcome.cpu_s < CPU_LIMIT_S, f"{outcome.cpu_s:.1f} s of CPU"
    if sys.platform.startswith("linux"):
        assert outcome.max_rss < RSS_LIMIT, f"{outcome.max_rss / 2**20:.0f} MiB"


def test_big_file_message_says_size_and_limit(project: Path) -> None:
    _big("tasks.yaml")(project)
    outcome = run_cli(project, "validate", "--offline")
    assert outcome.returncode == 2
    assert f"over the {MAX_INPUT_BYTES // 2**20} MiB limit" in outcome.output
    assert "task file is 20 MiB" in outcome.output, outcome.output


def test_config_and_tasks_sharing_a_bad_env_report_it_once(project: Path) -> None:
    (project / ".env").write_bytes(b"JUSTTEXT\n")
    outcome = run_cli(project, "validate", "--offline")
    assert outcome.returncode == 2
    assert outcome.output.count(".env:1:") == 1, outcome.output


def test_a_well_formed_env_is_still_read(tmp_path: Path) -> None:
    dotenv = tmp_path / ".env"
    dotenv.write_text('# keys\n\nFOO=1\nexport BAR=two\nMULTI="a\nb"\nEMPTY=\n')
    assert read_dotenv(dotenv) == {"FOO": "1", "BAR": "two", "MULTI": "a\nb", "EMPTY": ""}


def test_env_problems_are_all_reported_with_their_lines(tmp_path: Path) -> None:
    dotenv = tmp_path / ".env"
    dotenv.write_text("FOO=1\n\nFIRST\n# fine\nSECOND\n")
    with pytest.raises(ConfigFileError) as caught:
        read_dotenv(dotenv)
    assert [problem.line for problem in caught.value.problems] == [3, 5]


def test_an_absent_env_is_no_env(tmp_path: Path) -> None:
    assert read_dotenv(tmp_path / ".env") == {}
