"""A copy of the project a user runs doit in, and doit (or mcpipechekr) run in it as a subprocess.

Shared by the tests that drive the doit graph, so each builds its copy the same
way: the files a user has (dodo.py, config.yaml, tasks.yaml, checks/, examples/),
no runs/ and no .mcpipechekr/ yet.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def copy_project(root: Path) -> Path:
    for name in ("dodo.py", "config.yaml", "tasks.yaml"):
        shutil.copy(ROOT / name, root / name)
    shutil.copytree(ROOT / "checks", root / "checks")
    shutil.copytree(
        ROOT / "examples", root / "examples", ignore=shutil.ignore_patterns("*.db", "__pycache__")
    )
    return root


def doit(
    project: Path, env: dict[str, str], *args: str, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """`python -m doit ARGS` in the project, without a terminal (stdin is /dev/null)."""
    return _run_in(project, env, [sys.executable, "-m", "doit", *args], timeout)


def mcpipechekr(
    project: Path, env: dict[str, str], *args: str, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """`python -m mcpipechekr ARGS` in the project, without a terminal (stdin is /dev/null)."""
    return _run_in(project, env, [sys.executable, "-m", "mcpipechekr", *args], timeout)


def installed(
    bin_dir: Path, cwd: Path, env: dict[str, str], *args: str, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """An installed script (`mcpipechekr …`, `doit …` from `bin_dir`) run in `cwd`, as a user types it."""
    return _run_in(cwd, env, [str(bin_dir / args[0]), *args[1:]], timeout)


def _run_in(
    cwd: Path, env: dict[str, str], argv: list[str], timeout: float
) -> subprocess.CompletedProcess[str]:
    """`argv` in `cwd` without a terminal (stdin is /dev/null), its output captured as text."""
    return subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
    )


def ran(result: subprocess.CompletedProcess[str]) -> set[str]:
    """Tasks doit executed in this invocation (`.  name`)."""
    return set(re.findall(r"^\.  (\S+)$", result.stdout, re.MULTILINE))


def up_to_date(result: subprocess.CompletedProcess[str]) -> set[str]:
    """Tasks doit found up to date (`-- name`)."""
    return set(re.findall(r"^-- (\S+)$", result.stdout, re.MULTILINE))


def at_the_review_prompt(
    argv: list[str],
    cwd: Path,
    env: dict[str, str],
    answers: list[str],
    log_path: Path,
    *,
    timeout: float = 300,
    width: int = 160,
    approve_iterates: bool = True,
) -> tuple[int | None, str]:
    """Run `argv` (a `doit loop`) at a pseudo-terminal, answering each `review> ` prompt in turn.

    An answer `approve` is expected to start the next iteration before its
    prompt comes, unless `approve_iterates` is False (a loop that only
    evaluates refuses it and asks again). Returns the exit status and the
    whole transcript (also in `log_path`). pexpect is imported here: only the
    loop tests need it.
    """
    import pexpect

    with log_path.open("w") as log:
        child = pexpect.spawn(
            argv[0],
            argv[1:],
            cwd=str(cwd),
            env=env,
            encoding="utf-8",
            timeout=timeout,
            dimensions=(50, width),
        )
        child.logfile_read = log
        try:
            for answer in answers:
                child.expect("review> ")
                child.sendline(answer)
                if answer == "approve" and approve_iterates:
                    child.expect("iteration 2")
            child.expect(pexpect.EOF)
        finally:
            child.close()
    return child.exitstatus, log_path.read_text()
