"""`<home>/server-starts.json`: how long the server took to start, measured by its health checks.

Why keep it: a published server may take twenty seconds to start (an index to
load, a model to warm), and a start timeout fixed for every server either
fails such a server or waits too long on a broken one. Each health check
records its start here; the start allowance (`server.starts.start_allowance`)
and the Phase 1 pool of servers started ahead (`capture.warm`) read it. The
file holds timings only: no command line, no environment value.
"""

from __future__ import annotations

from pydantic import AwareDatetime, Field, NonNegativeFloat

from mcpipechekr.artifacts._base import VERSION_DESCRIPTION, ArtifactModel, FormatVersion

KEPT_STARTS = 5
"""Starts kept per server: enough to see the slow ones, few enough to follow a change."""


class StartMeasure(ArtifactModel):
    """One start of the server, from spawning it to its health check's answer."""

    at: AwareDatetime = Field(description="When the start was measured.")
    wall_s: NonNegativeFloat = Field(description="Seconds from spawning the server to tools/list's answer.")
    cpu_s: NonNegativeFloat | None = Field(
        default=None,
        description="CPU seconds the server's process group used meanwhile (Linux); absent where unknown. "
        "Near `wall_s`, the start is CPU-bound and starts that overlap slow each other down.",
    )


class ServerStarts(ArtifactModel):
    """`<home>/server-starts.json`: the latest starts of each server launch, by launch key."""

    version: FormatVersion = Field(default=1, description=VERSION_DESCRIPTION)
    servers: dict[str, list[StartMeasure]] = Field(
        default_factory=dict,
        description="Launch key (`<name>:<hash of the command, arguments, folder and URL>`) -> its latest "
        "starts, oldest first, at most five.",
    )
