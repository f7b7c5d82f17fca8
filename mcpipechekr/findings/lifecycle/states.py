"""The finding lifecycle: open → fix-claimed → verifying → closed, and back to open on the first red.

States and moves (every move is one row of `lifecycle_events`, so the history
is the state; the newest row of a finding is where it stands):

- a fix commit (`claim_fix`) makes a finding fix-claimed, streak 0;
- a red verification of an open or fix-claimed finding leaves it fix-claimed,
  streak 0 (the fix, claimed or still to come, does not hold yet);
- a red verification of a verifying or closed finding reopens it (open,
  streak 0); red on a closed finding is a *regression*;
- the first green makes it verifying (streak 1); a green extends the streak
  only when its credit binding (`credit.py`) equals the streak's, otherwise a
  fresh streak starts at 1; the third consecutive green under one binding
  closes it; greens on a closed finding keep it closed;
- a finding without a probe (`Finding.probe` false: nothing can check a fix
  automatically) earns no greens: it stays open until closed by hand
  (`close_manually`); promote caps its severity at medium.

Every verification run has an id. Recording the same run again with the same
result is a replay and changes nothing; the same id with a different result
is refused (`VerificationConflict`). Transport failures never reach this
module: no evidence is recorded for a run that could not reach the server.

Every verification run also has an origin, who started it:

- `cli`: a person ran `mcpipechekr verify`, naming the server;
- `loop`: the loop judged a finding by its run (`reverify.py`): the run's bug
  report, or a case rerun against the project's configured server;
- `serve`: an MCP client of `mcpipechekr serve` (a coding agent checking its
  own fix) called `verify_fix`.

Only `cli` and `loop` runs are credited: they move the finding as described
above. A `serve` run is advisory: it is recorded (a `verifications` row with
its origin, `credited` 0) and its verdict is shown to the agent, but it moves
nothing: a green never starts or extends a streak, so it never closes a
finding, and a red neither reopens a finding nor counts as a regression. The
harness already runs a `serve` verification on the configured server only,
but the agent chooses the case's values and expectation and may be the one
whose fix is judged; the loop's next run, or a person, gives the verdict that
counts. Nor is a `serve` run's case the one the loop reruns (`last_probe`
skips them) until a person has verified with it.

Storage: the `lifecycle_events` and `verifications` tables of lifecycle.db
(schema in `migrations.py`; WAL mode, one short IMMEDIATE transaction per
move, so concurrent verifiers serialize instead of losing updates). They store identifiers, hashes and
reason tokens only, never argument values or error texts.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

import orjson

from mcpipechekr.artifacts._base import utc_now
from mcpipechekr.artifacts.findings import Finding, FindingState
from mcpipechekr.errors import UserError
from mcpipechekr.findings.home import Home
from mcpipechekr.findings.lifecycle.database import lifecycle_db, transaction
from mcpipechekr.findings.lifecycle.trust import case_accepted_on, claim_owner_on, other_server
from mcpipechekr.findings.server_identity import ServerKey

CLOSING_STREAK = 3
"""Consecutive greens under one credit binding that close a finding."""

VerificationOrigin = Literal["cli", "loop", "serve"]
"""Who started a verification run (see the module docstring)."""

CREDITED_ORIGINS: frozenset[str] = frozenset({"cli", "loop"})
"""Origins whose runs move a finding; a run of any other origin is recorded as advisory."""


class VerificationConflict(UserError):
    """A verification run id already recorded with the other result: one run cannot be both."""


@dataclass(frozen=True)
class Standing:
    """Where a finding stands: its state, its streak, and the binding the streak counts under."""

    state: FindingState
    streak: int
    binding: str | None


@dataclass(frozen=True)
class Transition:
    """What recording one verification did; `verify` and the loop print and count these."""

    finding_id: str
    run_id: str
    passed: bool
    from_state: FindingState
    to_state: FindingState
    streak: int
    reason: str | None = None
    regression: bool = False
    """A closed finding failed again: a fix re-introduced a defect once proven gone."""
    fresh_streak: bool = False
    """A green whose binding differs from the streak's: the count started again at 1."""
    replayed: bool = False
    """This run id was already recorded with the same result: nothing changed."""
    advisory: bool = False
    """Recorded, not credited (a `serve` run): the finding did not move."""
    not_counted: str | None = None
    """Why a run a person or the loop started counted for nothing (`lifecycle/trust.py`):
    `case-not-accepted` or `other-server`; the finding did not move."""

    @property
    def counted(self) -> bool:
        """Whether this run could move the finding (a replay aside)."""
        return not self.advisory and self.not_counted is None

    @property
    def reopened(self) -> bool:
        return not self.passed and self.counted and self.from_state in ("verifying", "closed")


@dataclass(frozen=True)
class RegressionStats:
    """Fixes claimed and closed findings that failed again, over a period."""

    fixes: int
    regressions: int

    @property
    def rate(self) -> float | None:
        """Regressions per fix claimed; None when no fix was claimed."""
        return self.regressions / self.fixes if self.fixes else None


def _standing(connection: sqlite3.Connection, finding_id: str) -> Standing:
    row = connection.execute(
        "SELECT to_state, streak, binding FROM lifecycle_events WHERE finding_id = ? "
        "ORDER BY seq DESC LIMIT 1",
        (finding_id,),
    ).fetchone()
    return Standing("open", 0, None) if row is None else Standing(row[0], row[1], row[2])


def _append_event(
    connection: sqlite3.Connection,
    finding_id: str,
    kind: str,
    before: Standing,
    after: Standing,
    *,
    regression: bool = False,
    detail: str | None = None,
    at: datetime | None = None,
) -> None:
    connection.execute(
        "INSERT INTO lifecycle_events (finding_id, at, kind, from_state, to_state, streak, binding, "
        "regression, detail) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            finding_id,
            (at or utc_now()).isoformat(),
            kind,
            before.state,
            after.state,
            after.streak,
            after.binding,
            int(regression),
            detail,
        ),
    )


def current_state(home: Home, finding_id: str) -> tuple[FindingState, int]:
    """(state, streak) of a finding; a finding with no history is open with streak 0.

    Reads without creating anything: a home with no lifecycle.db yet answers open.
    """
    if not home.lifecycle_db.exists():
        return "open", 0
    with lifecycle_db(home) as connection:
        standing = _standing(connection, finding_id)
    return standing.state, standing.streak


def standings(home: Home) -> dict[str, Standing]:
    """Every finding with a history, and where it stands (for views that list many findings)."""
    if not home.lifecycle_db.exists():
        return {}
    with lifecycle_db(home) as connection:
        return standings_on(connection)


def standings_on(connection: sqlite3.Connection) -> dict[str, Standing]:
    """`standings` read on a connection already open (one made by `lifecycle_db`)."""
    rows = connection.execute(
        "SELECT e.finding_id, e.to_state, e.streak, e.binding FROM lifecycle_events e "
        "JOIN (SELECT finding_id, MAX(seq) AS seq FROM lifecycle_events GROUP BY finding_id) last "
        "ON e.seq = last.seq"
    ).fetchall()
    return {row[0]: Standing(row[1], row[2], row[3]) for row in rows}


def claim_fix(home: Home, finding_id: str, commit: str) -> Transition:
    """A fix commit for this finding: it becomes fix-claimed with no streak, whatever it was.

    The loop calls this after committing a fix. Claiming the same commit twice
    in a row changes nothing (a rerun of the loop step is harmless).
    """
    with lifecycle_db(home) as connection, transaction(connection):
        before = _standing(connection, finding_id)
        last = connection.execute(
            "SELECT kind, detail FROM lifecycle_events WHERE finding_id = ? ORDER BY seq DESC LIMIT 1",
            (finding_id,),
        ).fetchone()
        if last is not None and last[0] == "claim" and last[1] == commit:
            return Transition(
                finding_id, commit, False, before.state, before.state, before.streak, replayed=True
            )
        after = Standing("fix-claimed", 0, None)
        _append_event(connection, finding_id, "claim", before, after, detail=commit)
    return Transition(finding_id, commit, False, before.state, after.state, 0)


def record_verification(
    home: Home,
    finding_id: str,
    *,
    run_id: str,
    passed: bool,
    binding: str,
    binding_json: dict[str, object] | None = None,
    probe: str,
    origin: VerificationOrigin,
    server: ServerKey,
    server_names: frozenset[str] = frozenset(),
    case_sha: str | None = None,
    attempts: int = 1,
    reason: str | None = None,
) -> Transition:
    """Record one verification run's result and, when it counts, move the finding.

    `binding` is the credit binding's fingerprint (`CreditBinding.fingerprint`);
    `probe` says what ran (`manifest#case` or `run-evaluation`), so the loop
    can run it again; `origin` says who started the run: a `serve` run is
    recorded and moves nothing (see the module docstring). `server` is the
    server the run reached (`server_names`: other names it goes by, such as
    the one it gave at initialize) and `case_sha` the case it ran (None for the loop's
    judgement by its bug report): a run of a case no person accepted, or of a
    server other than the finding's, is recorded and moves nothing either
    (`trust.py`). Raises VerificationConflict when `run_id` was recorded for
    this finding with the other result.
    """
    credited = origin in CREDITED_ORIGINS
    with lifecycle_db(home) as connection, transaction(connection):
        before = _standing(connection, finding_id)
        not_counted: str | None = None
        if credited:
            if other_server(connection, finding_id, server, server_names):
                not_counted = "other-server"
            elif case_sha is not None and not case_accepted_on(connection, finding_id, case_sha):
                not_counted = "case-not-accepted"
            else:
                claim_owner_on(connection, finding_id, server)
            credited = not_counted is None
        seen = connection.execute(
            "SELECT passed, binding, reason FROM verifications WHERE run_id = ? AND finding_id = ?",
            (run_id, finding_id),
        ).fetchone()
        if seen is not None:
            if bool(seen[0]) != passed or seen[1] != binding:
                was = "green" if seen[0] else "red"
                raise VerificationConflict(
                    f"verification run {run_id} of {finding_id} is already recorded as {was} "
                    f"{'under another credit binding' if bool(seen[0]) == passed else ''}".rstrip()
                    + "; a run id names one run: use a new id for a new run"
                )
            return Transition(
                finding_id,
                run_id,
                passed,
                before.state,
                before.state,
                before.streak,
                reason=seen[2],
                replayed=True,
                advisory=origin not in CREDITED_ORIGINS,
                not_counted=not_counted,
            )
        after, fresh = _next(before, passed, binding) if credited else (before, False)
        regression = credited and not passed and before.state == "closed"
        connection.execute(
            "INSERT INTO verifications (run_id, finding_id, at, passed, reason, binding, binding_json, "
            "probe, attempts, credited, origin) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                run_id,
                finding_id,
                utc_now().isoformat(),
                int(passed),
                reason,
                binding,
                orjson.dumps(binding_json or {}, option=orjson.OPT_SORT_KEYS).decode(),
                probe,
                attempts,
                int(passed and credited),
                origin,
            ),
        )
        if credited:
            _append_event(
                connection, finding_id, "verification", before, after, regression=regression, detail=run_id
            )
    return Transition(
        finding_id,
        run_id,
        passed,
        before.state,
        after.state,
        after.streak,
        reason=reason,
        regression=regression,
        fresh_streak=fresh,
        advisory=origin not in CREDITED_ORIGINS,
        not_counted=not_counted,
    )


def _next(before: Standing, passed: bool, binding: str) -> tuple[Standing, bool]:
    """The state machine: (the standing after one result, whether a green started a fresh streak)."""
    if not passed:
        if before.state in ("verifying", "closed"):
            return Standing("open", 0, None), False
        return Standing("fix-claimed", 0, None), False
    continues = before.streak > 0 and before.binding == binding
    streak = before.streak + 1 if continues else 1
    fresh = before.streak > 0 and not continues
    if before.state == "closed" or streak >= CLOSING_STREAK:
        return Standing("closed", streak, binding), fresh
    return Standing("verifying", streak, binding), fresh


def close_manually(home: Home, finding: Finding, note: str) -> Transition:
    """Close a finding that has no probe, with a note saying why; refused for one that can be verified.

    Three greens are the proof a probe gives; a finding with a probe must earn
    them, or a hand could close what a test would show still broken.
    """
    if not note.strip():
        raise UserError("a manual closure needs a note saying why the finding is resolved")
    if finding.probe:
        raise UserError(
            f"{finding.id} has a probe: it closes after {CLOSING_STREAK} consecutive green "
            "verifications, not by hand"
        )
    with lifecycle_db(home) as connection, transaction(connection):
        before = _standing(connection, finding.id)
        after = Standing("closed", 0, None)
        _append_event(connection, finding.id, "manual-close", before, after, detail=note.strip())
    return Transition(finding.id, "manual", True, before.state, after.state, 0)


def last_probe(home: Home, finding_id: str) -> str | None:
    """The probe (`manifest#case`) of the finding's latest verification, for the loop to rerun.

    Runs started through `serve` are passed over: the loop reruns only a case
    a person or the loop itself has verified with.
    """
    if not home.lifecycle_db.exists():
        return None
    with lifecycle_db(home) as connection:
        row = connection.execute(
            "SELECT probe FROM verifications WHERE finding_id = ? AND origin != 'serve' "
            "ORDER BY at DESC, rowid DESC LIMIT 1",
            (finding_id,),
        ).fetchone()
    return row[0] if row is not None else None


def probe_followed(home: Home, probe: str) -> bool:
    """Whether a credited verification (not one started through `serve`) has run this probe.

    The loop reruns such a probe, so `serve` never replaces its case file.
    """
    if not home.lifecycle_db.exists():
        return False
    with lifecycle_db(home) as connection:
        row = connection.execute(
            "SELECT 1 FROM verifications WHERE probe = ? AND origin != 'serve' LIMIT 1", (probe,)
        ).fetchone()
    return row is not None


def regression_stats(home: Home, since: datetime | None = None) -> RegressionStats:
    """Fixes claimed and regressions (closed findings that failed again) since `since` (all time: None).

    The loop reports `rate` as its regression rate: how often a fix came with
    a closed defect's return.
    """
    if not home.lifecycle_db.exists():
        return RegressionStats(0, 0)
    after = since.astimezone(UTC).isoformat() if since is not None else ""
    with lifecycle_db(home) as connection:
        fixes, regressions = connection.execute(
            "SELECT COALESCE(SUM(kind = 'claim'), 0), COALESCE(SUM(regression), 0) FROM lifecycle_events "
            "WHERE at >= ?",
            (after,),
        ).fetchone()
    return RegressionStats(int(fixes), int(regressions))
