"""What a message about the server under test is made of: its redacted stderr log, the log's last
lines, how the process ended and how the server is reached.

Every halt quotes these, whether the server runs in a session of ours
(`server.connection`), as a bare `start` process (`server.processes`) or in a raw
session of `check`; and the log never reaches disk unredacted.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass
from pathlib import Path

from mcpipechekr._util.private_log import RedactingLog, UnsafeLogPath
from mcpipechekr._util.redact import Redactor
from mcpipechekr.config import MASK, ServerConfig
from mcpipechekr.errors import UserError

_LOG_TAIL_LINES = 15


def describe_target(server: ServerConfig) -> str:
    """One line naming how the server is reached, for messages and reports (no header values)."""
    if server.command:
        return "stdio: " + " ".join([server.command, *server.args])
    return f"http: {server.url}"


def log_tail(log_path: Path, offset: int = 0) -> str:
    """The server's last stderr lines written after `offset`, indented: what a halt message quotes."""
    try:
        with open(log_path, "rb") as handle:
            handle.seek(offset)
            lines = handle.read().decode(errors="replace").splitlines()
    except OSError:
        return ""
    tail = [line for line in lines if line.strip()][-_LOG_TAIL_LINES:]
    return "\n".join("    " + line for line in tail)


def exit_description(returncode: int | None) -> str | None:
    if returncode is None:
        return None
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = str(-returncode)
        return f"was killed by signal {name}"
    return f"exited with code {returncode}"


@dataclass
class ServerLog:
    """Where one start of the server writes its stderr, and how messages quote it.

    `sink` is the redacting pipe the process writes to; `offset` where this
    start's lines begin; `temporary` says the file goes away when the server
    stops, so a message quotes its lines without pointing at it.
    """

    path: Path
    redactor: Redactor
    sink: RedactingLog
    temporary: bool = False

    def quote(self, message: str, what: str) -> str:
        """`message` followed by the last lines of this start's log, all redacted."""
        self.sink.flush()
        tail = log_tail(self.path, self.sink.offset)
        where = what if self.temporary else f"{what} is logged at {self.path}"
        message += f"  {where}" + ((":\n" + tail) if tail else " (nothing written).")
        return self.redactor.redact(message)


def open_log(path: Path, redactor: Redactor) -> RedactingLog:
    """A server's stderr log, redacted as written; a path that is not safe to write is a UserError."""
    try:
        return RedactingLog(path, redactor).__enter__()
    except UnsafeLogPath as exc:
        raise UserError(str(exc)) from None


def server_redactor(server: ServerConfig) -> Redactor:
    """What a server's own settings say is secret: its header and environment values.

    For callers that have no `Config`; `server_under_test` uses the config's
    redactor, which also knows every `${VAR}` value and provider key.
    """
    return Redactor([(value, MASK) for value in server.secret_values()])


def log_path_in(folder: Path, server_name: str) -> Path:
    """`folder/<name>.stderr.log`, the name made safe for a file name."""
    safe = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in server_name) or "server"
    return folder / f"{safe}.stderr.log"
