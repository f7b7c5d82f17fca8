"""What the runners that drive an agent CLI (opencode, Claude Code) share.

Finding the binary: an environment variable naming it (`MCPIPECHEKR_OPENCODE`,
`MCPIPECHEKR_CLAUDE`) wins, then `PATH`. A missing CLI is a `UserError` that
says how to install it, not a traceback half-way through a run.

Running it (`run_cli`): the CLI gets its own process group, so that on a
timeout, a halted run or Ctrl-C the whole tree it started (the CLI, the capture
proxy it launched, the server behind it) is terminated, then killed after a
grace period. Output is collected line by line as it arrives, so a timed-out
attempt still yields everything the agent did before it was stopped.

Secrets: the per-run config files the runners write reference secret values
through environment variables (`secret_env`) rather than containing them, so a
scratch folder never holds an API key or a header value.

POSIX only: process groups and signals.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import anyio
from anyio.abc import ByteReceiveStream, Process

from mcpipechekr.errors import UserError

KILL_GRACE_S = 3.0
_CHDIR_EXEC = "import os, sys; os.chdir(sys.argv[1]); os.execvp(sys.argv[2], sys.argv[2:])"


class AgentCliMissing(UserError):
    """The agent CLI a runner needs is not installed or not where its environment variable says."""


class SessionFormatError(UserError):
    """An agent session log (an opencode export, a Claude Code stream) that cannot be read as one."""


def find_cli(program: str, env_var: str, install_hint: str) -> str:
    """The path of an agent CLI: `$env_var` if set, else `program` on PATH; else a UserError."""
    override = os.environ.get(env_var)
    if override:
        path = Path(override).expanduser()
        if path.is_file() and os.access(path, os.X_OK):
            return str(path)
        raise AgentCliMissing(f"${env_var} is {override!r}, which is not an executable file.")
    found = shutil.which(program)
    if found is None:
        raise AgentCliMissing(
            f"`{program}` was not found on PATH. Install it ({install_hint}) or set ${env_var} to its path."
        )
    return found


def chdir_command(command: str, args: list[str] | tuple[str, ...], cwd: str | None) -> list[str]:
    """argv that runs `command args` in `cwd`, for MCP configs that have no working-directory field."""
    if not cwd:
        return [command, *args]
    return [sys.executable, "-c", _CHDIR_EXEC, cwd, command, *args]


@dataclass
class SecretEnv:
    """Values handed to the CLI through its environment, referenced from its config by name."""

    prefix: str
    values: dict[str, str] = field(default_factory=dict)

    def name_for(self, value: str) -> str:
        """The environment variable that will carry `value` (one per distinct value)."""
        for name, known in self.values.items():
            if known == value:
                return name
        name = f"{self.prefix}{len(self.values)}"
        self.values[name] = value
        return name


@dataclass
class CliResult:
    """What the CLI printed and how it ended."""

    returncode: int | None
    stdout_lines: list[str]
    stderr: str
    timed_out: bool = False

    @property
    def stderr_tail(self) -> str:
        lines = [line for line in self.stderr.splitlines() if line.strip()]
        return " | ".join(lines[-3:])[-400:]


def _terminate_group(process: Process) -> None:
    try:
        os.killpg(process.pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        pass


def _kill_group(process: Process) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


async def _stop(process: Process) -> None:
    """Terminate the CLI's process group, then kill it if it does not exit within the grace period."""
    with anyio.CancelScope(shield=True):
        _terminate_group(process)
        with anyio.move_on_after(KILL_GRACE_S):
            await process.wait()
        _kill_group(process)  # whatever of the group is left (a server the CLI started, say)
        with anyio.move_on_after(KILL_GRACE_S):
            await process.wait()


async def _read_lines(
    stream: ByteReceiveStream | None,
    sink: list[str],
    max_bytes: int,
    on_line: Callable[[str], None] | None = None,
) -> None:
    if stream is None:
        return
    buffer = b""
    total = 0
    async for chunk in stream:
        total += len(chunk)
        if total > max_bytes:
            continue  # keep draining so the CLI never blocks on a full pipe
        buffer += chunk
        *complete, buffer = buffer.split(b"\n")
        lines = [line.decode("utf-8", "replace") for line in complete]
        sink.extend(lines)
        if on_line is not None:
            for line in lines:
                if line.strip():
                    on_line(line)
    if buffer:
        sink.append(buffer.decode("utf-8", "replace"))


async def run_cli(
    argv: list[str],
    *,
    env: dict[str, str],
    cwd: Path,
    stdin_text: str | None,
    timeout_s: float,
    max_output_bytes: int = 200_000_000,
    stdout_file: Path | None = None,
    on_start: Callable[[int], None] | None = None,
    on_line: Callable[[str], None] | None = None,
    pass_fds: tuple[int, ...] = (),
) -> CliResult:
    """Run an agent CLI to completion or until `timeout_s`, in its own process group.

    Cancellation (a halted run, Ctrl-C) stops the process group before it propagates.
    `stdout_file`: write standard output there instead of returning its lines. For a
    CLI that prints a large document and exits at once: opencode (Bun) exiting with
    more than a pipe's 64 KiB unread loses the rest, a file loses nothing.
    `on_start` is called with the CLI's pid (its process group's id) as soon as it runs,
    so a caller can record the group for whoever must end it if this process cannot.
    `on_line` is told each non-empty line of output (stdout and stderr) as it comes, for a
    progress display. `pass_fds`: file descriptors the CLI inherits (bwrap's `--info-fd`).
    """
    stdout: list[str] = []
    stderr: list[str] = []
    sink = stdout_file.open("wb") if stdout_file is not None else None
    try:
        process = await anyio.open_process(
            argv,
            stdin=subprocess.PIPE if stdin_text is not None else subprocess.DEVNULL,
            stdout=sink if sink is not None else subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=str(cwd),
            # PWD too: opencode takes its project folder (and what is "outside" it) from $PWD
            env={**env, "PWD": str(cwd)},
            start_new_session=True,
            pass_fds=pass_fds,
        )
    finally:
        if sink is not None:
            sink.close()  # the child holds its own copy
    if on_start is not None:
        try:
            on_start(process.pid)
        except BaseException:
            await _stop(process)
            raise
    drained = anyio.Event()

    async def drain() -> None:
        async with anyio.create_task_group() as readers:
            readers.start_soon(_read_lines, process.stdout, stdout, max_output_bytes, on_line)
            readers.start_soon(_read_lines, process.stderr, stderr, 1_000_000, on_line)
        drained.set()

    timed_out = False
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(drain)
            with anyio.move_on_after(timeout_s) as scope:
                if stdin_text is not None and process.stdin is not None:
                    await process.stdin.send(stdin_text.encode())
                    await process.stdin.aclose()
                await process.wait()
            timed_out = scope.cancelled_caught
            if timed_out:
                await _stop(process)
            else:
                _terminate_group(process)  # what the CLI left running (the MCP server it launched)
            # The pipes close once every process holding them has exited.
            with anyio.move_on_after(KILL_GRACE_S):
                await drained.wait()
            _kill_group(process)
            group.cancel_scope.cancel()
    finally:
        if process.returncode is None:
            await _stop(process)
    return CliResult(process.returncode, stdout, "\n".join(stderr), timed_out)


class CliAgentRunner:
    """What the agent-CLI runners share: the binary to use, whether built-in tools stay, extra env."""

    def __init__(
        self,
        *,
        binary: str | None = None,
        keep_builtin_tools: bool = False,
        env: dict[str, str] | None = None,
    ):
        """`env` is added to the CLI's environment (tests point HOME and XDG_* at a temp folder)."""
        self.binary = binary
        self.keep_builtin_tools = keep_builtin_tools
        self.env = dict(env or {})
