"""runs/{run-id}/fix.json: what Phase 3 did with each approved bug, and whether the server survived it.

The record is what a person reads to trust (or undo) the fix loop: per bug, how
many agent runs it took, the commit it made and exactly which files that commit
touched, or why nothing was committed; then the server's health after the
fixes. It is rewritten after every bug, so a crash or Ctrl-C half-way leaves an
accurate record of what was already committed (`finished_at` stays empty).
While a bug is worked on, `in_progress` names it, the work tree it started
from and the agent's process group, so that the next fix loop can end and
clean up after one that was killed.

The agent command is recorded as run, minus the prompt (kept beside it as a
file) and with every secret of the config redacted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import AwareDatetime, Field, NonNegativeInt

from mcpipechekr.artifacts._base import (
    VERSION_DESCRIPTION,
    ArtifactModel,
    FormatVersion,
    RunId,
    Sha256,
)
from mcpipechekr.artifacts.atomic import read_model

FixStatus = Literal["committed", "unresolved", "skipped", "interrupted"]


class TestRun(ArtifactModel):
    """One run of `fix.test_command` after the agent claimed completion; all text redacted."""

    command: str = Field(min_length=1, description="The test command as it ran; redacted.")
    exit_code: int | None = Field(
        description="Its exit status; absent when it was stopped or could not start."
    )
    timed_out: bool = Field(default=False, description="Stopped at `fix.test_timeout_s`.")
    passed: bool = Field(description="Exit status 0 within the time limit: the fix may be committed.")
    elapsed_s: float = Field(ge=0, description="Wall-clock seconds of the run.")
    output_tail: str = Field(
        default="", description="The end of its output (stdout, then stderr), redacted; sent back on failure."
    )


class FixHealth(ArtifactModel):
    """The server's health check on a fix (restart on the changed work tree, then tools/list within
    server.health): passed before the fix is committed."""

    healthy: bool = Field(description="Whether the restarted server passed the health check.")
    tools: NonNegativeInt = Field(default=0, description="Tools it listed.")
    elapsed_s: float | None = Field(default=None, ge=0, description="Seconds from start to healthy.")
    after_commit: str | None = Field(
        default=None,
        description="In the record's `health`: the fix commit whose files were checked (the last one). "
        "In an agent run's: HEAD under the uncommitted change.",
    )
    error: str | None = Field(default=None, description="Why it is unhealthy: the halt message.")
    checked_at: AwareDatetime = Field(description="When the check finished.")


class AgentRun(ArtifactModel):
    """One run of the fix agent on one bug: a fresh process with the same prompt."""

    iteration: int = Field(ge=1, description="1 for the first run on this bug.")
    exit_code: int | None = Field(description="The agent's exit status; absent when it was stopped.")
    timed_out: bool = Field(default=False, description="Stopped at `fix.timeout_s`.")
    promise: bool = Field(description="Whether its output contained `<promise>COMPLETE</promise>`.")
    elapsed_s: float = Field(ge=0, description="Wall-clock seconds of the run.")
    log: str = Field(
        min_length=1, description="Its output (stdout, then stderr), redacted, relative to the run folder."
    )
    prompt: str | None = Field(
        default=None,
        description="The prompt of this run when it differs from the bug's (it carries the failed tests' "
        "output), relative to the run folder.",
    )
    tests: TestRun | None = Field(
        default=None,
        description="`fix.test_command` after this run; absent when none is configured or no completion "
        "was claimed.",
    )
    health: FixHealth | None = Field(
        default=None,
        description="The server restarted on the work tree after this run, before any commit; absent when "
        "no completion was claimed, nothing changed or the tests failed.",
    )
    refused: list[str] = Field(
        default_factory=list,
        description="What the sandbox stopped during this run, as the agent's output shows it: writes "
        "refused (read-only file system), git transports refused, processes still running when the agent "
        "exited (ended with the sandbox). Redacted.",
    )


class BugFix(ArtifactModel):
    """What happened to one bug of the approved report."""

    bug_id: str = Field(min_length=1, description="The bug's id in bug_report.json.")
    status: FixStatus = Field(
        description="`committed`: fixed in `commit`; `unresolved`: no usable fix, the work tree restored; "
        "`skipped`: not attempted because the loop halted first; `interrupted`: stopped part-way (Ctrl-C, "
        "SIGTERM, a crash, or a killed loop cleaned up by the next one), the agent's edits saved in `patch` "
        "and the work tree restored; the next fix loop on the run tries it again."
    )
    iterations: NonNegativeInt = Field(description="Agent runs spent on this bug.")
    commit: str | None = Field(default=None, description="Full SHA of the `fix: <bug id>` commit.")
    files_changed: list[str] = Field(
        default_factory=list,
        description="Repository-relative paths the agent changed: committed, or restored when unresolved.",
    )
    agent_command: str | None = Field(
        default=None, description="The command that ran, `{prompt}` standing for the prompt; redacted."
    )
    prompt: str | None = Field(default=None, description="The prompt file, relative to the run folder.")
    reason: str | None = Field(
        default=None, description="Why it is unresolved or skipped; what the agent last said."
    )
    runs: list[AgentRun] = Field(default_factory=list, description="Every agent run, in order.")
    patch: str | None = Field(
        default=None,
        description="When interrupted: the agent's uncommitted edits (files it created included) as a git "
        "patch (`git apply` it in the repository), relative to the run folder; absent when it had none.",
    )
    earlier_patches: list[str] = Field(
        default_factory=list,
        description="The patches of earlier attempts at this bug that were interrupted, relative to the run "
        "folder: what those agents had done, kept for reading.",
    )
    undone: list[str] = Field(
        default_factory=list,
        description="What the agent did outside its job and the loop undid: git control files (hooks, "
        "config, info/) put back, its own commits folded, remote-tracking refs that moved. Redacted.",
    )


class AgentProcess(ArtifactModel):
    """The fix agent's process group, named so that a later fix loop can end it (`fix.agent_group`)."""

    pgid: int = Field(gt=1, description="The process group (and session) id: the agent's own pid.")
    started: str = Field(
        description="When the agent started, to tell it from a later process with the same id: on Linux "
        "the boot id and the start time in clock ticks (`/proc`), elsewhere `ps`'s start time."
    )


class BugInProgress(ArtifactModel):
    """The bug being worked on: what a fix loop killed part-way leaves for the next one to clean up."""

    bug_id: str = Field(min_length=1, description="The bug's id in bug_report.json.")
    base_commit: str = Field(min_length=1, description="HEAD when work on the bug started.")
    untracked: dict[str, str | None] = Field(
        default_factory=dict,
        description="Untracked files that existed before the bug, with their SHA-256: they are not the "
        "agent's and are never removed.",
    )
    agent: AgentProcess | None = Field(
        default=None, description="The running (or last) agent's process group; absent before the first run."
    )


class FixRecord(ArtifactModel):
    """runs/{run-id}/fix.json: Phase 3's commits for one approved bug report, and the health after them."""

    version: FormatVersion = Field(default=1, description=VERSION_DESCRIPTION)
    run_id: RunId = Field(description="The run whose bug report was fixed.")
    bug_report_hash: Sha256 = Field(description="Hash of the bug_report.json the review approved.")
    agent: str = Field(min_length=1, description="`fix.agent`: the command template used.")
    provider: str | None = Field(
        default=None, description="The Phase 3 model (`providers.phase3`); absent when the agent needs none."
    )
    repo: str = Field(min_length=1, description="The server's repository the commits went to.")
    sandbox: Literal["bwrap", "off", "exempt"] | None = Field(
        default=None,
        description="How the agent was confined: `bwrap` (the sandbox: writes only in the repository, no "
        "credentials, nothing outlives a run), `off` (`fix.sandbox: off`: unconfined, with the user's "
        "rights), `exempt` (the `demo` fixer, the bundled example's patches); absent in records written "
        "before the sandbox.",
    )
    base_commit: str = Field(min_length=1, description="HEAD before the first fix.")
    started_at: AwareDatetime = Field(description="When the fix loop started.")
    finished_at: AwareDatetime | None = Field(
        default=None, description="When it ended; absent while running or after a crash."
    )
    bugs: list[BugFix] = Field(
        default_factory=list,
        description="One entry per bug the server can fix, in fix order "
        "(severity, then highest token_cost_of_gap).",
    )
    health: FixHealth | None = Field(
        default=None,
        description="The health check of the last fix commit; or the failed one that halted the loop (the "
        "server unhealthy with the agent's changes undone); absent when nothing was committed.",
    )
    in_progress: BugInProgress | None = Field(
        default=None,
        description="The bug being worked on right now; left behind only by a fix loop that was killed. The "
        "next fix loop on the run ends its agent, saves its edits as a patch and restores the work tree.",
    )

    @property
    def commits(self) -> list[str]:
        """The fix commits, oldest first."""
        return [bug.commit for bug in self.bugs if bug.commit]


def read_fix_record(path: str | Path) -> FixRecord:
    """Read and validate a fix.json; a damaged file is a UserError naming the field."""
    return read_model(path, FixRecord)
