"""Shards: one run's Phase 1 spread over several machines (`run --shard K/N`, `doit trace --shard K/N`).

Why a hash: each CI job knows only its own K and N, never the others', and
must still pick its attempts so that the N jobs together run every attempt
exactly once. An attempt belongs to shard `sha256(attempt id) mod N + 1`,
where its id is its trace's name (`<task>__<model>__rNNN`). That depends on
nothing but the id and N: adding a task or a repetition adds attempts to
shards without moving any other, so a shard of yesterday's plan keeps its
attempts today. The price is balance: shards are only about equal (with few
attempts one may even be empty, which is still a shard to merge).

The record a shard folder carries (`artifacts.manifest.RunShard`) holds the
whole run's identity and plan, so `steps.merge` can judge the shards it is
given without the machines that ran them.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mcpipechekr.artifacts.manifest import RunShard
from mcpipechekr.artifacts.trace import trace_path
from mcpipechekr.errors import InputError

MAX_SHARDS = 1000
SHARD_HELP = (
    "Run only shard K of N of the run's attempts (e.g. 2/3), chosen by a hash of each attempt's id, into "
    "a shard folder; `mcpipechekr merge` assembles the N folders into the run (docs/ci.md)."
)
"""The `--shard` flag of `run` and of doit, in one place."""
_SHARD_RE = re.compile(r"^\s*(\d{1,6})\s*/\s*(\d{1,6})\s*$")


@dataclass(frozen=True)
class Shard:
    """Shard `index` of `count`, both from 1."""

    index: int
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def holds(self, attempt: str) -> bool:
        """True when the attempt with this id belongs to this shard."""
        return shard_index(attempt, self.count) == self.index


def parse_shard(text: str, flag: str = "--shard") -> Shard:
    """`K/N` with 1 <= K <= N <= MAX_SHARDS; anything else is an input error naming `flag`."""
    match = _SHARD_RE.match(text or "")
    if not match:
        raise InputError(f"{flag}: expected K/N (shard K of N, e.g. 2/3), not {text!r}")
    index, count = int(match.group(1)), int(match.group(2))
    if not 1 <= count <= MAX_SHARDS:
        raise InputError(f"{flag} {text}: N, the number of shards, must be from 1 to {MAX_SHARDS}")
    if not 1 <= index <= count:
        raise InputError(f"{flag} {text}: K must be from 1 to N ({count}); shards count from 1")
    return Shard(index, count)


def shard_index(attempt: str, count: int) -> int:
    """Which of `count` shards the attempt with this id belongs to, from 1 (see the module docstring)."""
    digest = hashlib.sha256(attempt.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % count + 1


def attempt_id(task_id: str, provider: str, repetition: int) -> str:
    """An attempt's id: its trace's file name without `.json`, the name a run folder knows it by."""
    return trace_path(Path(), task_id, provider, repetition).stem


def planned_attempt_ids(task_ids: Sequence[str], providers: Sequence[str], repeat: int) -> list[str]:
    """Every attempt of a run by id, in plan order (task, model, repetition), as `runstate` plans them."""
    return [
        attempt_id(task_id, provider, repetition)
        for task_id in task_ids
        for provider in providers
        for repetition in range(1, repeat + 1)
    ]


def shard_record(
    shard: Shard,
    *,
    run_identity: str,
    server_source: str | None,
    task_ids: Sequence[str],
    providers: Sequence[str],
    repeat: int,
) -> RunShard:
    """What a shard's manifest records: the whole run, and the attempts of it that are this shard's."""
    planned = planned_attempt_ids(task_ids, providers, repeat)
    return RunShard(
        index=shard.index,
        count=shard.count,
        run_identity=run_identity,
        server_source=server_source,
        repeat=repeat,
        planned_attempts=planned,
        attempts=[one for one in planned if shard.holds(one)],
    )
