"""Bad input files end a command with one file:line message and exit 2: no traceback, no run folder.

Each case edits a project made by `mcpipechekr init` and runs `mcpipechekr run`
on it as a user would, in a child process whose memory is capped and whose time
is bounded: a file built to exhaust memory (an alias bomb) or the stack (deep
nesting) must be refused while it is read, not after.
"""

from __future__ import annotations

import os
import re
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.xdist_group("test_bad_input")

SERVER = Path(__file__).resolve().parent / "servers" / "tiny_server.py"
MEMORY_CAP = 3 * 1024**3  # address space of the child: far above a normal run, far below a bomb's
TIME_CAP_S = 60


def _capped() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def mcpipechekr(
    project: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`python -m mcpipechekr ARGS` in `project`, memory-capped, without a terminal."""
    return subprocess.run(
        [sys.executable, "-m", "mcpipechekr", *args],
        cwd=project,
        env=env or os.environ.copy(),
        capture_output=True,
        text=True,
        timeout=TIME_CAP_S,
        stdin=subprocess.DEVNULL,
        preexec_fn=_capped,
    )


@pytest.fixture(scope="module")
def initialised(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One project from `mcpipechekr init` against the tiny server; each test works on a copy."""
    root = tmp_path_factory.mktemp("initialised")
    shutil.copy(SERVER, root / "server.py")
    done = mcpipechekr(root, "init", "--command", "python server.py")
    assert done.returncode == 0, done.stderr
    return root


@pytest.fixture
def project(initialised: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(initialised, tmp_path / "project"))


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def line_of(path: Path, needle: bytes) -> int:
    raw = path.read_bytes()
    return raw.count(b"\n", 0, raw.index(needle)) + 1


def refused(project: Path, where: str, words: str, *args: str) -> None:
    """`mcpipechekr run` (or ARGS) exits 2 naming `where` and `words`, without a traceback or a run folder."""
    result = mcpipechekr(project, *(args or ("run",)))
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    assert where in result.stderr, result.stderr
    assert re.search(words, result.stderr), result.stderr
    assert not (project / "runs").exists()


ALIAS_BOMB = b"""\
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
"""


def test_an_alias_bomb_is_refused_at_the_alias_that_exceeds_the_budget(project: Path) -> None:
    (project / "tasks.yaml").write_bytes(ALIAS_BOMB)
    refused(project, "tasks.yaml:5:", r"aliases expand to more than \d+ values")


def test_an_alias_to_the_value_containing_it_is_refused(project: Path) -> None:
    edit(project / "tasks.yaml", "    tags: [example]", "    tags: &loop [example, *loop]")
    line = line_of(project / "tasks.yaml", b"*loop")
    refused(project, f"tasks.yaml:{line}:", "refers to the value that contains it")


def test_a_nul_byte_is_refused_at_its_line(project: Path) -> None:
    edit(project / "tasks.yaml", "tags: [example]", "tags: [exam\x00ple]")
    line = line_of(project / "tasks.yaml", b"\x00")
    refused(project, f"tasks.yaml:{line}:", "NUL byte")


@pytest.mark.parametrize("name", ["config.yaml", "tasks.yaml"])
def test_nesting_thousands_deep_is_refused(project: Path, name: str) -> None:
    (project / name).write_text("key: " + "[" * 5000 + "]" * 5000 + "\n", encoding="utf-8")
    refused(project, f"{name}:1:", r"nested more than \d+ levels deep")


def test_a_task_file_that_is_not_utf8_is_refused_at_its_line(project: Path) -> None:
    edit(project / "tasks.yaml", "tags: [example]", "tags: [EXAMPLE]")
    path = project / "tasks.yaml"
    path.write_bytes(path.read_bytes().replace(b"EXAMPLE", b"caf\xe9"))
    refused(project, f"tasks.yaml:{line_of(path, b'caf')}:", "not UTF-8")


def test_a_dotenv_that_is_not_utf8_is_refused_at_its_line(project: Path) -> None:
    (project / ".env").write_bytes(b"FIRST=1\nSECOND=caf\xe9\n")
    refused(project, ".env:2:", "not UTF-8")


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("# min_calls: 1", "min_calls: " + "1" * 35, "must be at most"),
        ("# min_calls: 1", "min_calls: true", "not true or false"),
        ("# expected_tool: search", "expected_result: {count: " + "9" * 30 + "}", "does not fit in 64 bits"),
    ],
    ids=["35-digit-count", "boolean-count", "35-digit-json"],
)
def test_a_number_out_of_range_in_tasks_is_refused(project: Path, old: str, new: str, message: str) -> None:
    path = project / "tasks.yaml"
    edit(path, old, new)
    refused(project, f"tasks.yaml:{line_of(path, new.encode())}:", message)


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("max_iterations: 3", "max_iterations: " + "3" * 35, "must be at most"),
        ("max_iterations: 3", "max_iterations: true", "not true or false"),
        ("task_s: 600", "task_s: .inf", "must be at most"),
    ],
    ids=["35-digit-count", "boolean-count", "infinite-seconds"],
)
def test_a_number_out_of_range_in_config_is_refused(project: Path, old: str, new: str, message: str) -> None:
    path = project / "config.yaml"
    edit(path, old, new)
    refused(project, f"config.yaml:{line_of(path, new.encode())}:", message)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run", "--repeat", "1" * 35], "'--repeat': " + "1" * 35 + " is not in the range 1<=x<=1000"),
        (
            ["doit", "trace", "--repeat", "1" * 35],
            "--repeat: must be at most 1000, not a number of 35 digits",
        ),
        (["doit", "trace", "--concurrency", "100"], "--concurrency: must be at most 64, not 100"),
        (["loop", "--repeat", "many"], "Error parsing parameter 'repeat'"),
    ],
    ids=["run", "doit-repeat", "doit-concurrency", "loop-not-a-number"],
)
def test_a_bad_count_flag_is_refused(project: Path, argv: list[str], message: str) -> None:
    result = mcpipechekr(project, *argv)
    assert result.returncode == 2, result.stdout + result.stderr
    assert message in result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    assert not (project / "runs").exists()


@pytest.mark.parametrize(
    ("content", "where", "message"),
    [
        (b'{"mcpServers": ' + b"[" * 5000 + b"]" * 5000 + b"}", "mcp.json:", "nested too deeply"),
        (b'{"mcpServers":\n {"a": {"command": "caf\xe9"}}}', "mcp.json:2:", "not UTF-8"),
    ],
    ids=["deep", "not-utf8"],
)
def test_init_refuses_an_unreadable_mcp_json(
    tmp_path: Path, content: bytes, where: str, message: str
) -> None:
    (tmp_path / "mcp.json").write_bytes(content)
    result = mcpipechekr(tmp_path, "init", "--from-mcp-json", "mcp.json")
    assert result.returncode == 2, result.stdout + result.stderr
    assert where in result.stderr and message in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    assert sorted(path.name for path in tmp_path.iterdir()) == ["mcp.json"]


def test_init_refuses_a_dotenv_that_is_not_utf8_before_writing_anything(tmp_path: Path) -> None:
    (tmp_path / ".env").write_bytes(b"FIRST=1\nSECOND=caf\xe9\n")
    result = mcpipechekr(tmp_path, "init", "--url", "http://127.0.0.1:9/mcp", "--header", "Authorization: x")
    assert result.returncode == 2, result.stdout + result.stderr
    assert ".env:2:" in result.stderr and "not UTF-8" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    assert sorted(path.name for path in tmp_path.iterdir()) == [".env"]
