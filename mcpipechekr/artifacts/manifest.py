"""manifest.json: what a run was, so its results can be trusted, compared and reproduced.

Written first when a run starts (status `running`) and rewritten when it ends.
Everything that can change a run's outcome is pinned here: the harness
version, the server's commit and whether its tree was dirty, the task file's
hash, the models per phase and the effective configuration (secrets redacted).
Traces that were not run by the harness but converted from a session the user
recorded (`mcpipechekr import`) are listed in `imports`, with the client that
recorded them and the hash of the file they came from. Every decision taken
at the review (`mcpipechekr review`) is added to `reviews`: who decided, what,
on which bug report, approving which bug ids, and when.

A run's Phase 1 may be spread over machines (`mcpipechekr run --shard K/N`):
each shard is a run folder of its own whose `shard` says which part of which
run it holds, and `mcpipechekr merge` assembles the shards into one run whose
`merged_from` lists them.

Format versions: 2 added `imports`, 3 added `reviews`, 4 added `shard` and
`merged_from`. An older file is read as version 4 with none of them, which is
what it was.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import AwareDatetime, Field, NonNegativeInt, PositiveInt, model_validator

from mcpipechekr.artifacts._base import (
    VERSION_DESCRIPTION,
    AcceptedRisk,
    ArtifactModel,
    RunId,
    Sha256,
    utc_now,
)
from mcpipechekr.artifacts.review import ReviewDecision

RunStatus = Literal["running", "completed", "failed", "interrupted"]

MANIFEST_VERSION = 4
"""The manifest's format version; see the module docstring for what each version added."""


class PhaseProviders(ArtifactModel):
    """The model each phase used, spelled as configured (`demo`, `openai/gpt-4o`); absent if unused."""

    phase0: str | None = Field(default=None, description="Phase 0, baseline answers for the tasks.")
    phase05: str | None = Field(default=None, description="Phase 0.5, tool-description evaluation (TEF).")
    phase1: str | None = Field(default=None, description="Phase 1, the agent running tasks blind.")
    phase2: str | None = Field(default=None, description="Phase 2, evaluation of traces into bug reports.")
    phase3: str | None = Field(default=None, description="Phase 3, the reviewed fix loop.")


class ServerRef(ArtifactModel):
    """Which server was tested, with any secret in its command line or URL redacted."""

    name: str = Field(min_length=1, description="The server's short name from config.yaml.")
    transport: Literal["stdio", "http"] = Field(description="How the server was reached.")
    command: str | None = Field(
        default=None, description="stdio: the command line that launched it, shell-quoted and redacted."
    )
    url: str | None = Field(default=None, description="http: the streamable-HTTP endpoint, redacted.")

    @model_validator(mode="after")
    def _matches_transport(self) -> ServerRef:
        if self.transport == "stdio" and not self.command:
            raise ValueError("a stdio server needs `command`")
        if self.transport == "http" and not self.url:
            raise ValueError("an http server needs `url`")
        return self


class ImportedSession(ArtifactModel):
    """A trace of the run converted from a session recorded outside the harness (`mcpipechekr import`).

    Such a trace's tool calls are the client's own record of them, not the capture
    proxy's, so a reader of the run must be able to tell them apart and find the source.
    """

    trace: str = Field(min_length=1, description="The trace's file name under traces/.")
    task_id: str = Field(min_length=1, description="The task in tasks.yaml the session worked on.")
    runner: Literal["opencode", "claude-code"] = Field(
        description="The agent client that recorded the session (`import --from`)."
    )
    client_version: str | None = Field(
        default=None, description="The client's version as the session file records it, if it does."
    )
    source_name: str = Field(
        min_length=1, description="The session file's name (without its folder, which may be private)."
    )
    source_hash: Sha256 = Field(description="Hash of the session file's bytes as imported.")
    imported_at: AwareDatetime = Field(description="When the session was imported.")


class ReviewEntry(ArtifactModel):
    """One decision at the review of this run, as `mcpipechekr review` recorded it."""

    decision: ReviewDecision = Field(description="`approve`, `export` or `exit`.")
    decided_by: str = Field(min_length=1, description="Who decided (the local user name).")
    decided_at: AwareDatetime = Field(description="When.")
    bug_report_hash: Sha256 = Field(description="Hash of the bug_report.json bytes decided on.")
    bug_ids: list[str] = Field(
        default_factory=list,
        description="The bug ids approved for the fix loop (`approve`) or written as issues (`export`), in "
        "fix order; empty on `exit`.",
    )


class RunShard(ArtifactModel):
    """What part of which run a shard folder holds (`mcpipechekr run --shard K/N`).

    Everything `mcpipechekr merge` needs to tell the shards of one run from a
    foreign one, a missing one or two that overlap, without the other shards:
    the identity of the whole run, what it is made of, and the attempts it planned.
    """

    index: PositiveInt = Field(description="K: which shard this is, from 1.")
    count: PositiveInt = Field(description="N: how many shards the run is spread over.")
    run_identity: Sha256 = Field(
        description="The `identity` the whole run has (server source, task ids, models, repetitions), "
        "the same in every shard of it."
    )
    server_source: str | None = Field(
        default=None,
        description="The server's source as the identity read it: its commit, plus the hash of "
        "uncommitted changes after a `+`; absent without a server repository.",
    )
    repeat: PositiveInt = Field(default=1, description="Attempts per task and model in the whole run.")
    planned_attempts: list[str] = Field(
        description="Every attempt of the whole run, by id (its trace's name without `.json`), in plan order."
    )
    attempts: list[str] = Field(
        description="The attempts this shard runs: those whose id hashes to it (see docs/ci.md), "
        "in plan order."
    )

    @model_validator(mode="after")
    def _within(self) -> RunShard:
        if self.index > self.count:
            raise ValueError(f"shard {self.index} of {self.count}: the index is at most the count")
        unknown = sorted(set(self.attempts) - set(self.planned_attempts))
        if unknown:
            raise ValueError(f"attempts not in `planned_attempts`: {', '.join(unknown[:5])}")
        return self


class MergedShard(ArtifactModel):
    """One shard a merged run was assembled from (`mcpipechekr merge`)."""

    index: PositiveInt = Field(description="K: which shard it was.")
    count: PositiveInt = Field(description="N: how many shards the run was spread over.")
    run_id: RunId = Field(description="The shard's own run id, on the machine that ran it.")
    attempts: NonNegativeInt = Field(description="How many attempts it traced.")
    started_at: AwareDatetime = Field(description="When the shard started.")
    finished_at: AwareDatetime = Field(description="When the shard ended.")


class Manifest(ArtifactModel):
    """runs/{run-id}/manifest.json: the identity and outcome of one pipeline run."""

    version: Literal[1, 2, 3, 4] = Field(
        default=MANIFEST_VERSION,
        description=f"{VERSION_DESCRIPTION} Version 2 added `imports`, 3 added `reviews`, 4 added `shard` "
        "and `merged_from`; an older file is read as version 4 without them.",
    )
    run_id: RunId = Field(description="The run's folder name, `run-YYYYMMDD-NNN`.")
    started_at: AwareDatetime = Field(description="When the run started (ISO 8601 with timezone).")
    finished_at: AwareDatetime | None = Field(
        default=None, description="When the run ended; absent while it is running."
    )
    harness_version: str = Field(min_length=1, description="Version of MCPipeChekr that ran it.")
    mcp_server_sha: str | None = Field(
        default=None, description="Git commit of the server's source, if it is a git repository."
    )
    mcp_server_dirty: bool = Field(
        default=False, description="True if the server's repository had uncommitted changes."
    )
    task_file_hash: Sha256 = Field(description="Hash of tasks.yaml as read for this run.")
    providers: PhaseProviders = Field(
        default_factory=PhaseProviders, description="The model used by each phase."
    )
    runner: str | None = Field(
        default=None,
        description="What runs the Phase 1 agent (`native`, `opencode`, `claude-code`, `demo`); absent "
        "for a run that traces nothing itself (an import).",
    )
    runner_version: str | None = Field(
        default=None,
        description="Its version as it reports it (`opencode --version`, the pydantic-ai package); absent "
        "when it could not be asked.",
    )
    config_hash: Sha256 = Field(
        description="Hash of the effective configuration as recorded in `config`: secrets are "
        "redacted first, so the hash reveals nothing about them."
    )
    config: dict[str, Any] = Field(
        default_factory=dict, description="The effective configuration, with secrets redacted."
    )
    server: ServerRef = Field(description="The server under test.")
    task_ids: list[str] = Field(default_factory=list, description="Ids of the tasks selected for this run.")
    identity: Sha256 | None = Field(
        default=None,
        description="Hash of the inputs that make a run distinct (server source, task ids, models, "
        "repetitions): a later invocation with the same identity reuses this run's up-to-date artifacts.",
    )
    parameters: dict[str, Any] = Field(
        default_factory=dict,
        description="The per-run flags the run was started with (`--phase1-provider`, `--repeat`, ...).",
    )
    accepted_risks: list[AcceptedRisk] = Field(
        default_factory=list, description="Findings accepted as known risks when this run started."
    )
    status: RunStatus = Field(
        default="running",
        description="`running` until it ends; then `completed`, `failed` or `interrupted` (Ctrl-C, kill).",
    )
    status_reason: str | None = Field(
        default=None, description="Why the run failed or was interrupted, in one line."
    )
    imports: list[ImportedSession] = Field(
        default_factory=list,
        description="Traces converted from recorded sessions (`mcpipechekr import`), in the order they "
        "were imported; empty when every trace was run by the harness.",
    )
    reviews: list[ReviewEntry] = Field(
        default_factory=list,
        description="Every decision taken at the review of this run (`mcpipechekr review`), oldest first: "
        "who approved which bug ids of which bug report, and when.",
    )
    shard: RunShard | None = Field(
        default=None,
        description="Set when this folder is one shard of a run (`run --shard K/N`): which part of which "
        "run it holds. Its status covers its own attempts; the run is whole once merged.",
    )
    merged_from: list[MergedShard] = Field(
        default_factory=list,
        description="The shards this run was assembled from (`mcpipechekr merge`), by index; empty for a "
        "run traced in one place.",
    )

    @model_validator(mode="before")
    @classmethod
    def _upgrade(cls, data: Any) -> Any:
        """Read an older manifest as the current version: it has none of the fields added since."""
        if isinstance(data, dict) and data.get("version") in (1, 2, 3):
            return {**data, "version": MANIFEST_VERSION}
        return data

    @model_validator(mode="after")
    def _consistent(self) -> Manifest:
        if self.status == "running" and self.finished_at is not None:
            raise ValueError("a `running` run has no `finished_at`")
        if self.status != "running" and self.finished_at is None:
            raise ValueError(f"a `{self.status}` run needs `finished_at`")
        if self.finished_at is not None and self.finished_at < self.started_at:
            raise ValueError("`finished_at` is before `started_at`")
        return self

    def finished(self, status: RunStatus, reason: str | None = None, at: datetime | None = None) -> Manifest:
        """A copy marked as ended; the caller writes it back, replacing the `running` manifest."""
        if status == "running":
            raise ValueError("use a final status: completed, failed or interrupted")
        data = self.model_dump()
        data.update(status=status, status_reason=reason, finished_at=at or utc_now())
        return Manifest.model_validate(data)
