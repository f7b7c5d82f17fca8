"""What the loop calls: claim a fix after a commit, then verify claimed and closed findings on every run.

After a fix commit the loop calls `claim_bug_fix` (or `lifecycle.states.claim_fix`
with a finding id): the finding becomes fix-claimed. On each later run it
calls one or both of:

- `verify_from_bug_report(home, report, server=…)`: every bug-report finding
  of the run's server that is fix-claimed, verifying or closed is judged by
  the run's Phase 2 report:
  red when the report still holds its bug id, green when it does not. The
  credit binding is the harness version, the server revision the loop passes
  (the workspace commit) and the set of tasks the report evaluated, so a run
  over other tasks starts a fresh streak instead of extending one. Blind spot:
  a bug whose tasks were not among the evaluated ones is not seen, so it
  reads green; the task set in the binding keeps such a run from continuing
  a streak earned on the full set.
- `verify_registered_probes(home, server, run_id=…)`: every such finding of
  the server whose last credited verification ran a manifest case runs that
  case again (same manifest, same case) against the run's server, through
  `verify.verify_finding`. A case no person accepted (`acceptance.py`) is not
  rerun: whoever wrote it chose its values and expectation (the skip reason
  says how to accept it).

A finding belongs to one server (`findings/server_identity.py`): the runs of
another server in the same home leave it alone. Every verification recorded
here has the origin `loop`: it is credited.

Both return a `RunVerification`: its transitions, what could not be verified
and why, and the regressions (closed findings that failed again) that the
run's summary reports. `regression_stats` (lifecycle) gives the session's
regression rate: regressions per fix claimed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from mcpipechekr import __version__
from mcpipechekr._util.hashing import sha256_json
from mcpipechekr.artifacts.bug_report import BugReport
from mcpipechekr.config import ServerConfig
from mcpipechekr.errors import UserError
from mcpipechekr.findings.home import Home
from mcpipechekr.findings.lifecycle.states import Transition, claim_fix, last_probe, record_verification
from mcpipechekr.findings.lifecycle.store import load_findings
from mcpipechekr.findings.lifecycle.trust import owners, same_server
from mcpipechekr.findings.promotion.bugs import bug_finding_id
from mcpipechekr.findings.server_identity import ServerKey, server_key
from mcpipechekr.findings.verification.acceptance import accept_command, unaccepted_case
from mcpipechekr.findings.verification.case_files import case_file
from mcpipechekr.findings.verification.verify import verify_finding

FOLLOWED_STATES = ("fix-claimed", "verifying", "closed")
RUN_EVALUATION = "run-evaluation"


@dataclass
class RunVerification:
    """The findings one loop run verified, and those it could not."""

    transitions: list[Transition] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    """finding id -> why it was not verified this run."""

    @property
    def regressions(self) -> list[Transition]:
        return [transition for transition in self.transitions if transition.regression]

    def merge(self, other: RunVerification) -> RunVerification:
        return RunVerification([*self.transitions, *other.transitions], {**self.skipped, **other.skipped})

    def summary_lines(self) -> list[str]:
        """For the run's summary: counts, each regression, each finding left unverified."""
        if not self.transitions and not self.skipped:
            return []
        green = sum(1 for transition in self.transitions if transition.passed)
        lines = [
            f"findings verified: {len(self.transitions)} ({green} green, {len(self.transitions) - green} red)"
        ]
        for transition in self.transitions:
            if transition.regression:
                lines.append(
                    f"  REGRESSION {transition.finding_id}: closed, failed again (reason={transition.reason})"
                )
            elif transition.from_state != transition.to_state:
                lines.append(f"  {transition.finding_id}: {transition.from_state} -> {transition.to_state}")
        lines.extend(f"  not verified {finding_id}: {why}" for finding_id, why in self.skipped.items())
        return lines


def claim_bug_fix(home: Home, bug_id: str, commit: str, server: ServerKey) -> Transition:
    """The loop committed a fix for Phase 2 bug `bug_id` of `server`: its finding becomes fix-claimed."""
    return claim_fix(home, bug_finding_id(bug_id, server), commit)


def run_evaluation_binding(report: BugReport, server_revision: str | None) -> dict[str, object]:
    """What a run-evaluation verdict is bound to (see the module docstring)."""
    return {
        "probe": RUN_EVALUATION,
        "harness_version": __version__,
        "server_revision": server_revision,
        "tasks": sorted({task.task_id for task in report.tasks if task.runs > 0}),
    }


def verify_from_bug_report(
    home: Home, report: BugReport, *, server: ServerKey, server_revision: str | None = None
) -> RunVerification:
    """Judge `server`'s followed bug-report findings by this run's report, under the report's run id.

    Findings of other servers in the home are not this run's to judge and are
    left alone. Recording the same report again is a replay and changes
    nothing. A report that evaluated no task run proves nothing, and records
    nothing.
    """
    outcome = RunVerification()
    owned = owners(home)
    followed = [
        finding
        for finding in load_findings(home)
        if finding.origin == "bug_report"
        and finding.bug_id
        and finding.state in FOLLOWED_STATES
        and same_server(owned.get(finding.id), finding.server, server)
    ]
    binding = run_evaluation_binding(report, server_revision)
    if not binding["tasks"]:
        outcome.skipped = {finding.id: "the run evaluated no task" for finding in followed}
        return outcome
    present = {bug.id for bug in report.bugs}
    for finding in followed:
        passed = finding.bug_id not in present
        outcome.transitions.append(
            record_verification(
                home,
                finding.id,
                run_id=report.run_id,
                passed=passed,
                binding=sha256_json(binding),
                binding_json=binding,
                probe=RUN_EVALUATION,
                origin="loop",
                server=server,
                reason=None if passed else "bug-reported-again",
            )
        )
    return outcome


def verify_registered_probes(
    home: Home, server: ServerConfig, *, run_id: str, key: ServerKey | None = None
) -> RunVerification:
    """Rerun the last manifest case of every followed finding of `server` against it, under `run_id`.

    A finding without a recorded case, with a manifest that is gone, with a case
    no person accepted, or whose run fails for a reason that is not the
    server's answer (bad manifest, unreachable server) is listed in `skipped`
    with the reason. Findings of other servers are left alone.
    """
    outcome = RunVerification()
    key = key or server_key(server)
    owned = owners(home)
    for finding in load_findings(home):
        if finding.state not in FOLLOWED_STATES or not finding.probe:
            continue
        owner = owned.get(finding.id)
        if owner is not None and owner.source != key.source:
            continue
        probe = last_probe(home, finding.id)
        if probe is None or probe == RUN_EVALUATION:
            if probe is None and finding.origin == "captured":
                outcome.skipped[finding.id] = _no_case_yet(home, finding.id)
            continue
        path_text, _, case_id = probe.rpartition("#")
        manifest = Path(path_text)
        if not manifest.is_file():
            outcome.skipped[finding.id] = f"its manifest {manifest} is gone"
            continue
        try:
            proposed = unaccepted_case(home, finding, manifest, case_id)
            if proposed is not None:
                outcome.skipped[finding.id] = proposed
                continue
            result = verify_finding(
                home, finding, case_id, manifest, server, origin="loop", run_id=run_id, key=key, owned=owned
            )
        except UserError as exc:
            outcome.skipped[finding.id] = exc.format_message().splitlines()[0]
            continue
        if result.transition is None:
            outcome.skipped[finding.id] = result.not_recorded or "not recorded"
        elif result.transition.not_counted == "other-server":
            continue  # another server's finding that no run had claimed yet: not this run's to judge
        else:
            outcome.transitions.append(result.transition)
    return outcome


def _no_case_yet(home: Home, finding_id: str) -> str:
    """Why a captured finding was not verified: no credited case yet, and how to give it one."""
    drafted = case_file(home, finding_id)
    if drafted.is_file() and not drafted.is_symlink():
        return (
            f"no verification case accepted yet: `mcpipechekr serve` drafted {drafted}; read it and accept "
            f"it with `{accept_command(finding_id, finding_id, drafted)}`"
        )
    return (
        "no verification case recorded yet: run `mcpipechekr generate` and `mcpipechekr verify --accept-case`"
    )
