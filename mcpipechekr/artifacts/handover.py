"""`runs/{run-id}/handovers.jsonl`: which capture journals of the run went to the findings home, and where.

Why a record: each Phase 1 attempt's capture journal is handed to the
findings home as call records right after its trace is written, but a process
killed between the two leaves a traced attempt whose records never arrived;
the resumed run keeps that trace and does not run the attempt again, so
without a record nothing would ever hand its records over. With one, the
resume hands over exactly the journals that are not in the home yet.

Why this order: a line is appended (and fsynced) before the home journal it
names is written, and that journal appears whole, by rename, or not at all. So
a journal of the home named by a line means the hand-over happened; a line
whose home journal is missing means the process died in between, and the
records are handed over again under a new name. Home journals are never
deleted, so a hand-over is neither lost nor made twice.

A journal is known by its file name and its life (`findings.evidence.phase1.
journal_life`): an attempt traced again writes its journal anew under the same
name, and that new life is a hand-over of its own.
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import Field

from mcpipechekr.artifacts._base import ArtifactModel, FormatVersion
from mcpipechekr.artifacts.atomic import read_jsonl
from mcpipechekr.artifacts.rundir import RunDir
from mcpipechekr.errors import UserError

HOME_JOURNAL_PATTERN = r"^[0-9]{8}T[0-9]{6}\.[0-9]{6}Z-[a-z0-9]+-[0-9]+-[0-9a-f]+\.jsonl$"


class Handover(ArtifactModel):
    """One line of `handovers.jsonl`: a capture journal's records are going to this home journal."""

    version: FormatVersion = Field(default=1, description="Format version of this line.")
    journal: str = Field(
        min_length=1, description="The capture journal's file name in the run's `journals/` folder."
    )
    life: str = Field(
        description="Which writing of that journal: the `proxy_started` time (wall clock and monotonic) "
        "its records' event ids derive from; empty for a journal without one."
    )
    home_journal: str = Field(
        pattern=HOME_JOURNAL_PATTERN,
        description="The file name, in the findings home's `journals/`, the records are written to "
        "after this line; the hand-over happened when that file exists.",
    )


def read_handovers(run_dir: RunDir) -> list[Handover]:
    """Every committed line of the run's hand-over record, validated; none when the file is missing."""
    path = run_dir.handovers
    lines: Iterable[object] = read_jsonl(path)
    try:
        return [Handover.model_validate(line) for line in lines]
    except ValueError as exc:
        raise UserError(f"{path}: not a hand-over record ({str(exc).splitlines()[0]})") from None
