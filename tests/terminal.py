"""Run a command the way a person does: on a pseudo-terminal, answering its prompt.

Some decisions are a person's only (accepting a verification case): the CLI
asks at a terminal and refuses without one. These tests give it a real
terminal (`os.openpty`), read what it shows and type the answer once the
prompt appears; every wait is bounded.
"""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from pathlib import Path

PROMPT = b"[y/N]"


def at_terminal(
    args: list[str],
    *,
    answer: str | None,
    cwd: Path | None = None,
    timeout_s: float = 90.0,
    prompt: bytes = PROMPT,
    env: dict[str, str] | None = None,
) -> tuple[int, str]:
    """`python -m mcpipechekr ARGS` on a terminal; types `answer` once `prompt` shows (None: never).

    Returns the exit code and everything the terminal showed, with `\\r\\n` as `\\n`.
    """
    primary, secondary = os.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "mcpipechekr", *args],
        stdin=secondary,
        stdout=secondary,
        stderr=secondary,
        cwd=cwd,
        env={**os.environ, **(env or {}), "COLUMNS": "200"},
        start_new_session=True,
    )
    os.close(secondary)
    shown = b""
    answered = answer is None
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([primary], [], [], 0.2)
            if not ready:
                if process.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(primary, 65536)
            except OSError:  # the command ended and closed the terminal
                break
            if not chunk:
                break
            shown += chunk
            if not answered and prompt in shown:
                os.write(primary, (answer or "").encode() + b"\n")
                answered = True
        else:
            process.kill()
            raise AssertionError(f"{args} still ran after {timeout_s} s; it showed:\n{shown.decode()}")
        return process.wait(timeout=30), shown.decode(errors="replace").replace("\r\n", "\n")
    finally:
        os.close(primary)
        if process.poll() is None:
            process.kill()
            process.wait(timeout=30)
