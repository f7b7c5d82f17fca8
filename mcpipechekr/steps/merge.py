"""`merge`: the shard folders of one run (`run --shard K/N` on N machines) → one run folder.

The merged folder is what a run traced in one place would have left, so
`evaluate`, `review`, `compare` and the findings index read it as they read
any run: the manifest (the shards' own, `completed`, without `shard`, with
`merged_from` listing the shards, started when the first shard started and
finished when the last one ended), tools.json, every attempt's trace and
journal copied byte for byte, the lint and check reports of the lowest shard
that has them, and the shards' server logs one after the other. Then the
journals go to this project's findings home as the merged run's call
records: each shard's own hand-off went to the home of the machine it ran on.

Nothing is merged unless all of it holds (an `InputError` naming the folders
and what is wrong, exit 2, otherwise):

- every folder is a shard that ended `completed`, each of its attempts with a
  trace that ended on its own (an interrupted shard is run again, not merged);
- all are of one run: the same run identity, server source, server, task file,
  tasks, Phase 1 models, repetitions, config hash, harness version, shard
  count and plan, and the same tools (a foreign shard is named with what differs);
- none overlaps another (two folders of one K, an attempt in two shards) and
  none is missing (K = 1..N all there), and each shard holds the attempts the
  hash gives it: every planned attempt is traced exactly once.

The run is built in a hidden folder beside its place and renamed into it, so
it appears whole or not at all; an existing folder is never written into.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from mcpipechekr._util.commands import runnable
from mcpipechekr._util.console import console
from mcpipechekr._util.private_log import open_private
from mcpipechekr._util.yamlsrc import display_path
from mcpipechekr.artifacts import Manifest, RunDir, ToolsSnapshot, read_model, write_model
from mcpipechekr.artifacts.manifest import MergedShard, RunShard
from mcpipechekr.artifacts.rundir import parse_run_id
from mcpipechekr.artifacts.runstate import load_manifest, trace_coverage
from mcpipechekr.config import Config
from mcpipechekr.errors import InputError, UserError
from mcpipechekr.runplan import next_run_dir
from mcpipechekr.runshard import shard_index
from mcpipechekr.steps.handoff import record_call_evidence


@dataclass(frozen=True)
class ShardFolder:
    """One shard folder as given, read and checked on its own."""

    run_dir: RunDir
    manifest: Manifest
    shard: RunShard
    tools_hash: str

    @property
    def name(self) -> str:
        """The folder as the user gave it, and the part of the run it claims."""
        return f"{display_path(self.run_dir.root)} (shard {self.shard.index}/{self.shard.count})"


def merge_shards(
    config: Config, folders: Sequence[Path], *, output: Path | None = None, out: Console = console
) -> RunDir:
    """Check the shard folders are the whole of one run, assemble it at `output`; returns the new run.

    `output` defaults to the next run id under the project's runs folder
    (where `evaluate` finds the baseline). See the module docstring.
    """
    if not folders:
        raise InputError("merge: give the shard folders of one run (each made by `run --shard K/N`)")
    shards = sorted(map(_read_shard, _distinct(folders)), key=lambda one: one.shard.index)
    _same_run(shards)
    _no_overlap(shards)
    _none_missing(shards)
    target = _output(config, output)
    _assemble(shards, target)
    record_call_evidence(config, target, sorted((target.root / "journals").glob("*.jsonl")))
    first = shards[0].shard
    out.print(
        f"{target.run_id}: merged {first.count} shard(s), {len(first.planned_attempts)} attempts "
        f"→ {display_path(target.root)}",
        markup=False,
    )
    return target


def _distinct(folders: Sequence[Path]) -> list[Path]:
    seen: dict[Path, Path] = {}
    for folder in folders:
        key = Path(folder).resolve()
        if key in seen:
            raise InputError(f"overlapping shards: {display_path(Path(folder))} is given twice")
        seen[key] = Path(folder)
    return list(seen.values())


def _read_shard(folder: Path) -> ShardFolder:
    """The folder's shard record, once it is known to be a finished shard with every attempt traced."""
    run_dir = RunDir(folder)
    shown = display_path(folder)
    if not run_dir.manifest.is_file():
        raise InputError(f"{shown}: not a run folder (no manifest.json); give the folders `run --shard` made")
    try:
        manifest = load_manifest(run_dir)
    except UserError as exc:
        raise InputError(f"{shown}: {exc.message}") from None
    if manifest.shard is None:
        raise InputError(f"{shown} ({manifest.run_id}) is not a shard: it was not run with --shard K/N")
    shard = manifest.shard
    part = f"{shown} (shard {shard.index}/{shard.count})"
    again = runnable(f"run it again (`mcpipechekr run --shard {shard.index}/{shard.count}`)")
    if manifest.status != "completed":
        why = f": {manifest.status_reason}" if manifest.status_reason else ""
        raise InputError(f"incomplete shard: {part} is {manifest.status}{why}; {again}")
    coverage = trace_coverage(run_dir, manifest)
    if not coverage.complete:
        raise InputError(f"incomplete shard: {part}: {coverage.describe()}; {again}")
    expected = [one for one in shard.planned_attempts if shard_index(one, shard.count) == shard.index]
    if shard.attempts != expected:
        raise InputError(
            f"foreign shard: {part} holds other attempts than shard {shard.index}/{shard.count} of its plan "
            "gets (made by another version of MCPipeChekr?)"
        )
    if not run_dir.tools.is_file():
        raise InputError(f"incomplete shard: {part} has no tools.json; {again}")
    tools_hash = read_model(run_dir.tools, ToolsSnapshot).tools_hash
    return ShardFolder(run_dir, manifest, shard, tools_hash)


_IDENTITY: list[tuple[str, Callable[[ShardFolder], Any]]] = [
    ("run identity", lambda one: one.shard.run_identity),
    ("server source", lambda one: one.shard.server_source),
    ("server", lambda one: one.manifest.server.name),
    ("task file hash", lambda one: one.manifest.task_file_hash),
    ("tasks", lambda one: one.manifest.task_ids),
    ("Phase 1 models", lambda one: one.manifest.providers.phase1),
    ("repetitions", lambda one: one.shard.repeat),
    ("config hash", lambda one: one.manifest.config_hash),
    ("harness version", lambda one: one.manifest.harness_version),
    ("shard count", lambda one: one.shard.count),
    ("planned attempts", lambda one: one.shard.planned_attempts),
    ("tools (tools.json)", lambda one: one.tools_hash),
]
"""What makes shards parts of one run, in the order a difference is reported."""


def _same_run(shards: list[ShardFolder]) -> None:
    first = shards[0]
    problems = []
    for other in shards[1:]:
        differ = [(what, get(first), get(other)) for what, get in _IDENTITY if get(first) != get(other)]
        if differ:
            what = ", ".join(
                f"{name} {_short(mine)} vs {_short(theirs)}" for name, mine, theirs in differ[:3]
            )
            problems.append(f"{other.name} is not of the run of {first.name}: {what}")
    if problems:
        raise InputError("foreign shard: " + "; ".join(problems))


def _short(value: Any) -> str:
    text = ", ".join(map(str, value)) if isinstance(value, list) else str(value)
    return repr(text if len(text) <= 60 else text[:57] + "...")


def _no_overlap(shards: list[ShardFolder]) -> None:
    problems = []
    for position, one in enumerate(shards):
        for other in shards[position + 1 :]:
            if one.shard.index == other.shard.index:
                problems.append(f"{one.name} and {other.name} are the same shard")
            elif common := sorted(set(one.shard.attempts) & set(other.shard.attempts)):
                problems.append(f"{one.name} and {other.name} both hold {', '.join(common[:3])}")
    if problems:
        raise InputError("overlapping shards: " + "; ".join(problems) + "; give each shard once")


def _none_missing(shards: list[ShardFolder]) -> None:
    count = shards[0].shard.count
    missing = sorted(set(range(1, count + 1)) - {one.shard.index for one in shards})
    if missing:
        lacking = ", ".join(f"{index}/{count}" for index in missing)
        given = ", ".join(one.name for one in shards)
        raise InputError(
            f"missing shard(s) {lacking}: given {given}; "
            + runnable(f"run `mcpipechekr run --shard {missing[0]}/{count}` and give its folder too")
        )
    traced = sorted(attempt for one in shards for attempt in one.shard.attempts)
    if traced != sorted(shards[0].shard.planned_attempts):  # guaranteed by the checks above; kept as the rule
        raise InputError("the shards do not trace every planned attempt exactly once")


def _output(config: Config, output: Path | None) -> RunDir:
    if output is None:
        return next_run_dir(Path(config.paths.runs))
    if parse_run_id(output.name) is None:
        raise InputError(
            f"--output {display_path(output)}: a run folder is named by its run id (run-YYYYMMDD-NNN), "
            "which its manifest records"
        )
    return RunDir(output)


def _assemble(shards: list[ShardFolder], target: RunDir) -> None:
    if target.root.exists():
        raise InputError(f"--output {display_path(target.root)} exists already; runs are never overwritten")
    target.runs_dir.mkdir(parents=True, exist_ok=True)
    staging = target.runs_dir / f".{target.run_id}.merging-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    try:
        _copy_into(shards, RunDir(staging))
        write_model(RunDir(staging).manifest, _merged_manifest(shards, target.run_id))
        if target.root.exists():
            raise InputError(f"{display_path(target.root)} was created meanwhile; run the merge again")
        os.rename(staging, target.root)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _copy_into(shards: list[ShardFolder], staging: RunDir) -> None:
    """Traces and journals of each shard's own attempts; the run-wide files of the lowest shard."""
    staging.traces.mkdir()
    journals = staging.root / "journals"
    journals.mkdir()
    first = shards[0].run_dir
    for name in ("tools", "tef_report", "check_report"):
        source = getattr(first, name)
        if source.is_file():
            shutil.copyfile(source, getattr(staging, name))
    for one in shards:
        for attempt in one.shard.attempts:
            shutil.copyfile(one.run_dir.traces / f"{attempt}.json", staging.traces / f"{attempt}.json")
            journal = one.run_dir.root / "journals" / f"{attempt}.jsonl"
            if journal.is_file():
                shutil.copyfile(journal, journals / journal.name)
    logs = [one for one in shards if one.run_dir.server_stderr_log.is_file()]
    if logs:
        fd = open_private(staging.server_stderr_log, append=False)
        with os.fdopen(fd, "wb") as log:
            for one in logs:
                header = f"== {one.manifest.run_id}, shard {one.shard.index}/{one.shard.count} ==\n"
                log.write(header.encode())
                log.write(one.run_dir.server_stderr_log.read_bytes())


def _merged_manifest(shards: list[ShardFolder], run_id: str) -> Manifest:
    first = shards[0].manifest
    assert first.finished_at is not None  # a completed shard has ended
    data = first.model_dump()
    data.update(
        run_id=run_id,
        identity=shards[0].shard.run_identity,
        parameters={key: value for key, value in first.parameters.items() if key != "shard"},
        shard=None,
        merged_from=[
            MergedShard(
                index=one.shard.index,
                count=one.shard.count,
                run_id=one.manifest.run_id,
                attempts=len(one.shard.attempts),
                started_at=one.manifest.started_at,
                finished_at=one.manifest.finished_at or one.manifest.started_at,
            ).model_dump()
            for one in shards
        ],
        started_at=min(one.manifest.started_at for one in shards),
        finished_at=max(one.manifest.finished_at or one.manifest.started_at for one in shards),
        status="completed",
        status_reason=None,
    )
    return Manifest.model_validate(data)
