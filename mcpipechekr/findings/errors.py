"""Errors of the findings commands, and the exit code that says "no evidence to read".

Exit codes follow the rest of the CLI: 2 for input a user can fix (a damaged
journal, a bad flag), and 3, only here, when the evidence a command reads
(index.db) is missing, corrupt or incomplete. A script can then tell "nothing
was found" (exit 0) from "nothing could be looked at" (exit 3).
"""

from __future__ import annotations

from pathlib import Path

import click

from mcpipechekr.errors import UserError

EXIT_EVIDENCE_UNAVAILABLE = 3


class EvidenceUnavailable(click.ClickException):
    """index.db cannot be read as a complete index: missing, corrupt, or left incomplete.

    The message says which and how to get the evidence back (`mcpipechekr index`).
    """

    exit_code = EXIT_EVIDENCE_UNAVAILABLE

    def __init__(self, path: str | Path, why: str):
        self.path = Path(path)
        self.why = why
        super().__init__(
            f"evidence unavailable: {self.path}: {why}. "
            "Run `mcpipechekr index` (or `mcpipechekr index --rebuild`) to build it from the journals."
        )


class JournalRejected(UserError):
    """A journal holds a complete record that cannot be indexed; the refresh is refused.

    Raised before anything is committed, so the previous index stays as it was.
    `path` and `line` point at the record to fix or remove.
    """

    def __init__(self, path: str | Path, line: int, problem: str):
        self.path = Path(path)
        self.line = line
        self.problem = problem
        super().__init__(
            f"{self.path}:{line}: {problem}. The index was not refreshed and still holds the previous "
            "evidence; fix or remove that record, then run `mcpipechekr index` again."
        )
