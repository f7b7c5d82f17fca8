"""Finding the real agent CLIs (opencode, Claude Code) for the tests that drive them, and isolating them.

A test that needs a CLI calls `require_cli`: the runner's own environment
variable (`MCPIPECHEKR_OPENCODE`, `MCPIPECHEKR_CLAUDE`), then PATH, then the
development install in `.cache/agents/node_modules/.bin` (made by
`npm install --prefix .cache/agents opencode-ai@1.18.33 @anthropic-ai/claude-code@2.1.332`).
Missing: the test is skipped with the install command, except under CI (`CI`
set), where a missing CLI fails the test, so CI cannot silently run less.

`isolated_home` is the environment that keeps a CLI away from the user's
files (HOME and every XDG folder in a temp folder) and off the network.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DEV_BIN = REPO / ".cache" / "agents" / "node_modules" / ".bin"
INSTALL = "npm install --prefix .cache/agents opencode-ai@1.18.33 @anthropic-ai/claude-code@2.1.332"


def require_cli(program: str, env_var: str) -> str:
    """The CLI's path, or skip (fail under CI) naming how to install it."""
    override = os.environ.get(env_var)
    if override and Path(override).is_file():
        return override
    found = shutil.which(program) or (str(DEV_BIN / program) if (DEV_BIN / program).is_file() else None)
    if found:
        return found
    message = f"`{program}` is not installed: run `{INSTALL}` or set ${env_var}"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def bench_cli(program: str, env_var: str) -> str | None:
    """For benchmarks: the CLI's path ($env_var, on PATH, or the development install), or None."""
    override = os.environ.get(env_var)
    if override and Path(override).is_file():
        return override
    return shutil.which(program) or (str(DEV_BIN / program) if (DEV_BIN / program).is_file() else None)


CLOSED_REGISTRY = "http://127.0.0.1:9/"
"""npm's registry for the CLIs under test: opencode installs `@opencode-ai/plugin` into its config
folder in the background at every start; pointed here it fails at once (harmlessly) instead of
reaching the network."""


def isolated_home(root: Path) -> dict[str, str]:
    """HOME and XDG_* under `root`, so no user config is read or written; npm's registry closed."""
    env = {
        "HOME": root / "home",
        "XDG_CONFIG_HOME": root / "xdg" / "config",
        "XDG_DATA_HOME": root / "xdg" / "data",
        "XDG_CACHE_HOME": root / "xdg" / "cache",
        "XDG_STATE_HOME": root / "xdg" / "state",
    }
    for path in env.values():
        path.mkdir(parents=True, exist_ok=True)
    return {**{name: str(path) for name, path in env.items()}, "npm_config_registry": CLOSED_REGISTRY}


def stalling_binary(tmp_path: Path, recorded: Path, count: int) -> tuple[str, Path]:
    """A stand-in CLI that prints `count` recorded lines, then hangs (see stalling_cli.py).

    Returns its path and the file where it writes its child's pid."""
    lines = tmp_path / "recorded.jsonl"
    shutil.copy(recorded, lines)
    script = Path(__file__).resolve().parent / "stalling_cli.py"
    binary = tmp_path / "agent-cli"
    binary.write_text(f"#!/bin/sh\nexec '{sys.executable}' '{script}' '{lines}' {count}\n")
    binary.chmod(0o755)
    return str(binary), Path(f"{lines}.child")


def process_alive(pid: int) -> bool:
    """Whether a process exists and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead for our purpose
        return Path(f"/proc/{pid}/status").read_text().find("State:\tZ") < 0
    except OSError:
        return True


def wait_gone(pid: int, timeout_s: float = 5) -> bool:
    """Whether the process is gone (see process_alive) within `timeout_s`: a killed process may take
    the kernel a moment to reap."""
    deadline = time.monotonic() + timeout_s
    while process_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not process_alive(pid)
