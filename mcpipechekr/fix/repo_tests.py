"""The repository's own tests (`fix.test_command`), run after the agent claims a fix and before the commit.

An agent's promise is its own word; the repository's tests are the project's.
A run that fails (non-zero exit, or still running at `fix.test_timeout_s`)
keeps the change out of the commit, and the tail of its output is what the
agent reads in its next run, so it can correct the change rather than start
over.

A command line runs under `/bin/sh -c` like `agent: shell`, an argv list runs
without a shell; `{repo}` and `{python}` are filled in (shell-quoted in a
command line). The run gets its own process group (`runners.cliagent.run_cli`),
so a hung test suite is stopped whole at the timeout.
"""

from __future__ import annotations

import functools
import os
import shlex
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import anyio

from mcpipechekr.runners.cliagent import run_cli

TAIL_CHARS = 4000
"""How much of the end of the tests' output is kept in fix.json and shown to the agent."""


@dataclass(frozen=True)
class TestOutcome:
    """How one run of the tests ended, and the end of what it printed (not yet redacted)."""

    exit_code: int | None
    timed_out: bool
    elapsed_s: float
    output_tail: str

    @property
    def passed(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


def test_argv(command: str | list[str], repo: Path) -> list[str]:
    """The argv that runs `command` in `repo`: a command line under /bin/sh, a list as it is."""
    values = {"repo": str(repo), "python": sys.executable}
    if isinstance(command, str):
        quoted = {key: shlex.quote(value) for key, value in values.items()}
        return ["/bin/sh", "-c", command.format(**quoted)]
    return [part.format(**values) for part in command]


def display_command(command: str | list[str], repo: Path) -> str:
    """The command as a person reads it (not yet redacted)."""
    argv = test_argv(command, repo)
    return argv[2] if isinstance(command, str) else shlex.join(argv)


def missing_program(command: str | list[str], repo: Path) -> str | None:
    """The program the command starts when it can be found neither on PATH nor in `repo`; else None.

    A command line's first word is checked only when it is a plain word (no
    variable assignment, no shell syntax): `cd tests && make` names `cd`, a
    shell builtin, and is left to the shell.
    """
    if isinstance(command, str):
        try:
            words = shlex.split(command.format(repo=str(repo), python=sys.executable))
        except ValueError:
            return None  # unbalanced quotes: the shell reports it when it runs
        if not words or "=" in words[0] or any(char in words[0] for char in "$`;&|<>(){}*?"):
            return None
        program = words[0]
        if program in _SHELL_BUILTINS:
            return None
    else:
        program = command[0].format(repo=str(repo), python=sys.executable)
    if "/" in program:
        path = Path(program) if Path(program).is_absolute() else repo / program
        return None if path.is_file() and os.access(path, os.X_OK) else program
    return None if shutil.which(program) is not None else program


_SHELL_BUILTINS = frozenset(
    {"cd", "exit", "export", "set", "test", "[", "true", "false", ".", "exec", "eval", "command", "echo"}
)


def run_tests(command: str | list[str], repo: Path, *, timeout_s: float, env: dict[str, str]) -> TestOutcome:
    """Run the tests once in `repo` until they exit or `timeout_s` passes; stdout then stderr, tail kept."""
    started = time.monotonic()
    try:
        result = anyio.run(
            functools.partial(
                run_cli,
                test_argv(command, repo),
                env={**os.environ, **env},
                cwd=repo,
                stdin_text=None,
                timeout_s=timeout_s,
            )
        )
    except OSError as exc:  # the program is missing or not executable
        return TestOutcome(
            exit_code=None, timed_out=False, elapsed_s=time.monotonic() - started, output_tail=str(exc)
        )
    output = "\n".join(result.stdout_lines)
    if result.stderr.strip():
        output += ("\n" if output else "") + result.stderr
    if result.timed_out:
        output += f"\n(stopped after {timeout_s:g}s: fix.test_timeout_s)"
    return TestOutcome(
        exit_code=None if result.timed_out else result.returncode,
        timed_out=result.timed_out,
        elapsed_s=time.monotonic() - started,
        output_tail=tail(output),
    )


def tail(text: str, limit: int = TAIL_CHARS) -> str:
    """The last `limit` characters, cut at a line start when one is near, marked when cut."""
    text = text.rstrip()
    if len(text) <= limit:
        return text
    cut = text[-limit:]
    newline = cut.find("\n")
    if 0 <= newline < 200:
        cut = cut[newline + 1 :]
    return "[... earlier output cut]\n" + cut
