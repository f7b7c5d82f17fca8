"""The findings home: where journals, the derived index and the lifecycle store live.

`MCPIPECHEKR_HOME` names it; by default it is `.mcpipechekr/` in the project,
the same folder config.yaml's `paths.home` points at. Everything under it is
machine state, git-ignored.
"""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from mcpipechekr._util.once import create_once

HOME_ENV = "MCPIPECHEKR_HOME"
DEFAULT_HOME = Path(".mcpipechekr")
CASES_FOLDER = "cases"


@dataclass(frozen=True)
class Home:
    """Paths of one findings home; nothing is created until a writer asks for it."""

    root: Path

    @classmethod
    def resolve(cls, explicit: str | Path | None = None) -> Home:
        """An explicit path beats $MCPIPECHEKR_HOME, which beats `.mcpipechekr/` in the working folder."""
        chosen = explicit or os.environ.get(HOME_ENV) or DEFAULT_HOME
        return cls(Path(chosen).expanduser().resolve())

    @property
    def logs(self) -> Path:
        """Private logs of servers started for a verification (their stderr, redacted)."""
        return self.root / "logs"

    @property
    def journals(self) -> Path:
        """Call-record journals (`*.jsonl`), one per capture process."""
        return self.root / "journals"

    @property
    def index_db(self) -> Path:
        """Derived from the journals; safe to delete, `mcpipechekr index` rebuilds it."""
        return self.root / "index.db"

    @property
    def lifecycle_db(self) -> Path:
        """Authoritative: registered findings, annotations, lifecycle states, verification evidence."""
        return self.root / "lifecycle.db"

    @property
    def cases(self) -> Path:
        """Verification manifests `mcpipechekr serve` writes and runs, one per finding (`<id>.yaml`)."""
        return self.root / CASES_FOLDER

    @property
    def salt_file(self) -> Path:
        return self.root / ".salt"

    @property
    def config_file(self) -> Path:
        """Optional settings such as `promotion_threshold`."""
        return self.root / "config.json"

    @property
    def lock_file(self) -> Path:
        """Shared by journal writers, exclusive for the indexer (fcntl.flock)."""
        return self.root / "journals.lock"

    def salt(self) -> bytes:
        """The home's secret salt for error-template ids, created on first use (mode 0600).

        Why a salt: template ids let equal errors group without storing their
        text, but an unsalted hash of a short message could be reversed by
        guessing; the salt never leaves this folder.
        """
        try:
            return self.salt_file.read_bytes()
        except FileNotFoundError:
            # Whole or not at all, and the first writer's salt wins a race (`_util/once.py`).
            return create_once(self.salt_file, secrets.token_hex(32).encode())
