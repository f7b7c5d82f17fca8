"""Pieces shared by every artifact format: strictness, hashes, run ids, timestamps.

Every file the pipeline writes is a pydantic model derived from ``ArtifactModel``
so that unknown keys are errors (a misspelt field in a hand-edited baseline must
not be silently dropped) and every field carries the description that the JSON
Schemas and docs/artifacts.md are generated from.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

RUN_ID_PATTERN = r"^run-\d{8}-\d{3}$"
SHA256_PATTERN = r"^sha256:[0-9a-f]{64}$"

RunId = Annotated[str, StringConstraints(pattern=RUN_ID_PATTERN)]
"""`run-YYYYMMDD-NNN`: the folder name of a run under runs/."""

Sha256 = Annotated[str, StringConstraints(pattern=SHA256_PATTERN)]
"""A content hash as written by mcpipechekr._util.hashing: `sha256:<64 hex digits>`."""

Score = Annotated[float, Field(ge=0.0, le=1.0)]
"""A fraction or score between 0 and 1."""

FORMAT_VERSION = 1


class ArtifactModel(BaseModel):
    """Base of every artifact model: unknown keys are errors, so typos and stale fields surface."""

    model_config = ConfigDict(extra="forbid")


FormatVersion = Literal[1]
"""Each top-level file starts with `version`, so a later format change is detected instead of misread."""

VERSION_DESCRIPTION = "Format version of this file. Readers reject versions they do not know."


def utc_now() -> datetime:
    """A timezone-aware now; naive datetimes are rejected by every artifact."""
    return datetime.now(UTC)


class AcceptedRisk(ArtifactModel):
    """A finding the server's author has reviewed and chosen to keep, so lint stops reporting it."""

    rule_id: str = Field(min_length=1, description="Rule that raised the finding, e.g. `TEF-S001`.")
    tool: str | None = Field(
        default=None, description="Tool the acceptance applies to; absent means every tool."
    )
    reason: str = Field(
        min_length=1, description="Why the risk is accepted, for whoever reads the report next."
    )
