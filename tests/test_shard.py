"""Phase 1 over several machines: `run --shard K/N` in separate processes, `merge`, then `evaluate`.

The sharded run is compared with the same run traced in one place, on the
bundled example with the demo model (offline, deterministic): the traces must
be the same bytes and the bug reports the same, once the fields that differ
between any two runs are normalised (`_normalised`): the times (`started_at`,
`ended_at`, `evaluated_at`), the durations (`latency_ms`), the run id
(`run_id`), and `call_id`, the random id the agent library gives each tool call.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from mcpipechekr.artifacts import Manifest, ToolsSnapshot, read_model, write_model
from mcpipechekr.cli import main
from mcpipechekr.errors import InputError
from mcpipechekr.graph import flags, inputs, phase1
from mcpipechekr.runshard import Shard, attempt_id, parse_shard, planned_attempt_ids, shard_index

pytestmark = pytest.mark.xdist_group("test_shard")

REPO = Path(__file__).resolve().parents[1]
TASKS = ("list-office-move-emails-2024", "count-dana-whitfield-2019")  # in tasks.yaml order
REPEAT = 2
SHARDS = 3
VARYING = frozenset({"started_at", "ended_at", "evaluated_at", "latency_ms", "run_id", "call_id"})


def _project(root: Path, emailindex_dir: Path, emailindex_db: Path, extra: str = "") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    shutil.copy(REPO / "tasks.yaml", root / "tasks.yaml")
    config = root / "config.yaml"
    config.write_text(
        "server:\n"
        "  name: emailindex\n"
        "  command: python\n"
        "  args: [server.py]\n"
        f"  cwd: {emailindex_dir}\n"
        f"  env: {{EMAILINDEX_DB: {emailindex_db}}}\n" + extra
    )
    return config


def _cli(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`mcpipechekr ARGS` in its own process, as a CI job runs it."""
    return subprocess.run(
        [sys.executable, "-m", "mcpipechekr", *args],
        cwd=config.parent,
        capture_output=True,
        text=True,
        timeout=240,
        env={**os.environ, "MCPIPECHEKR_HOME": str(config.parent / ".mcpipechekr")},
        stdin=subprocess.DEVNULL,
    )


def _run(config: Path, *extra: str) -> Path:
    """`mcpipechekr run` of the test's tasks; returns the run folder it made."""
    before = set((config.parent / "runs").glob("run-*"))
    tasks = [word for task in TASKS for word in ("--task", task)]
    result = _cli(config, "run", "--config", str(config), *tasks, "--repeat", str(REPEAT), *extra)
    assert result.returncode == 0, result.stdout + result.stderr
    (made,) = set((config.parent / "runs").glob("run-*")) - before
    return made


def _merge(config: Path, *folders: Path) -> subprocess.CompletedProcess[str]:
    return _cli(config, "merge", "--config", str(config), *map(str, folders))


def _normalised(value: Any) -> Any:
    """The JSON value with every field that differs between two runs of the same inputs (VARYING) blanked."""
    if isinstance(value, dict):
        return {key: "*" if key in VARYING else _normalised(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_normalised(item) for item in value]
    return value


def _read(path: Path) -> Any:
    return _normalised(json.loads(path.read_bytes()))


@pytest.fixture(scope="module")
def runs(
    tmp_path_factory: pytest.TempPathFactory, emailindex_dir: Path, emailindex_db: Path
) -> dict[str, Any]:
    """One project: the run traced whole, then as three shards, each `run --shard k/3` its own process."""
    root = tmp_path_factory.mktemp("shards")
    config = _project(root / "project", emailindex_dir, emailindex_db)
    whole = _run(config)
    shards = [_run(config, "--shard", f"{index}/{SHARDS}") for index in range(1, SHARDS + 1)]
    return {"root": root, "config": config, "whole": whole, "shards": shards}


@pytest.mark.slow
def test_three_shards_merged_are_the_run_traced_in_one_place(runs: dict[str, Any]) -> None:
    config, whole, shards = runs["config"], runs["whole"], runs["shards"]
    planned = planned_attempt_ids(TASKS, ["demo"], REPEAT)
    held = []
    for index, folder in enumerate(shards, start=1):
        manifest = read_model(folder / "manifest.json", Manifest)
        assert manifest.status == "completed" and manifest.shard is not None
        assert (manifest.shard.index, manifest.shard.count, manifest.shard.repeat) == (index, SHARDS, REPEAT)
        assert manifest.shard.planned_attempts == planned
        assert manifest.shard.attempts, "each shard of this plan has attempts (the hash is fixed)"
        assert sorted(path.stem for path in (folder / "traces").glob("*.json")) == sorted(
            manifest.shard.attempts
        )
        held += manifest.shard.attempts
    assert sorted(held) == sorted(planned), "every planned attempt in exactly one shard"
    whole_manifest = read_model(whole / "manifest.json", Manifest)
    assert {read_model(f / "manifest.json", Manifest).shard.run_identity for f in shards} == {
        whole_manifest.identity
    }

    # evaluating one shard alone would pass for the run: refused, with the way out
    refused = _cli(config, "evaluate", "--config", str(config), str(shards[0]))
    assert refused.returncode == 2
    assert f"is shard 1/{SHARDS} of a run" in refused.stdout + refused.stderr
    assert "merge" in refused.stdout + refused.stderr

    result = _merge(config, *shards)
    assert result.returncode == 0, result.stdout + result.stderr
    runs_dir = config.parent / "runs"
    merged = max(runs_dir.glob("run-*"))
    assert f"{merged.name}: merged {SHARDS} shard(s), {len(planned)} attempts" in result.stdout

    manifest = read_model(merged / "manifest.json", Manifest)
    assert manifest.status == "completed" and manifest.shard is None
    assert manifest.identity == whole_manifest.identity
    assert manifest.parameters == whole_manifest.parameters == {"repeat": REPEAT}
    assert [(one.index, one.run_id) for one in manifest.merged_from] == [
        (index, folder.name) for index, folder in enumerate(shards, start=1)
    ]
    same = {"task_ids", "providers", "config_hash", "task_file_hash", "server", "config", "harness_version"}
    assert manifest.model_dump(include=same) == whole_manifest.model_dump(include=same)
    assert (merged / "tools.json").read_bytes() == (shards[0] / "tools.json").read_bytes()
    tools = [read_model(run / "tools.json", ToolsSnapshot).tools_hash for run in (merged, whole)]
    assert tools[0] == tools[1]

    # the traces: the shards' bytes, and the whole run's once the varying fields are blanked
    names = sorted(path.name for path in (whole / "traces").glob("*.json"))
    assert sorted(path.name for path in (merged / "traces").glob("*.json")) == names
    assert sorted(path.name for path in (merged / "journals").glob("*.jsonl")) == sorted(
        path.name for path in (whole / "journals").glob("*.jsonl")
    )
    for name in names:
        (source,) = [folder / "traces" / name for folder in shards if (folder / "traces" / name).exists()]
        assert (merged / "traces" / name).read_bytes() == source.read_bytes()
        assert _read(merged / "traces" / name) == _read(whole / "traces" / name), name

    for run in (whole, merged):
        evaluated = _cli(config, "evaluate", "--config", str(config), run.name)
        assert evaluated.returncode == 0, evaluated.stdout + evaluated.stderr
    merged_report, whole_report = _read(merged / "bug_report.json"), _read(whole / "bug_report.json")
    assert merged_report == whole_report
    assert merged_report["bugs"], "the example's planted defect is found in both"

    # the merged run's calls reached this project's findings home, under its own run id
    records = (config.parent / ".mcpipechekr").rglob("*")
    assert any(merged.name in path.read_text(errors="replace") for path in records if path.is_file())


@pytest.mark.slow
def test_merge_refuses_missing_overlapping_foreign_and_incomplete_shards(
    runs: dict[str, Any], emailindex_dir: Path, emailindex_db: Path
) -> None:
    config, shards, root = runs["config"], runs["shards"], runs["root"]
    runs_dir = config.parent / "runs"
    before = sorted(runs_dir.iterdir())

    def refused(*folders: Path) -> str:
        """The refusal's message, unwrapped; in this process (each refusal reads only the folders)."""
        home = {"MCPIPECHEKR_HOME": str(config.parent / ".mcpipechekr")}
        result = CliRunner().invoke(main, ["merge", "--config", str(config), *map(str, folders)], env=home)
        assert result.exit_code == 2, result.output
        return " ".join(result.output.split())

    missing = refused(shards[0], shards[2])
    assert f"missing shard(s) 2/{SHARDS}" in missing
    assert f"run --shard 2/{SHARDS}" in missing

    again = root / "download" / shards[1].name  # the same shard downloaded twice
    shutil.copytree(shards[1], again)
    overlap = refused(*shards, again)
    assert "overlapping shards:" in overlap and "are the same shard" in overlap
    assert shards[1].name in overlap and "download" in overlap
    assert "is given twice" in refused(shards[0], shards[0], shards[1], shards[2])

    # a shard of another run: the same tasks and models, another setting (hence config hash)
    other = _project(root / "other", emailindex_dir, emailindex_db, "timeouts:\n  task_s: 599\n")
    foreign = _run(other, "--shard", f"2/{SHARDS}")
    message = refused(shards[0], foreign, shards[2])
    assert "foreign shard:" in message and "config hash" in message
    assert foreign.name in message and "other" in message

    # a shard whose run stopped half-way, and one whose trace went missing in the upload
    interrupted = root / "interrupted" / shards[1].name
    shutil.copytree(shards[1], interrupted)
    stopped = read_model(interrupted / "manifest.json", Manifest).finished("interrupted", "trace: killed")
    write_model(interrupted / "manifest.json", stopped)
    message = refused(shards[0], interrupted, shards[2])
    assert "incomplete shard:" in message and "is interrupted: trace: killed" in message

    lacking = root / "lacking" / shards[1].name
    shutil.copytree(shards[1], lacking)
    gone = sorted((lacking / "traces").glob("*.json"))[0]
    gone.unlink()
    message = refused(shards[0], lacking, shards[2])
    assert "incomplete shard:" in message and gone.stem in message

    assert "is not a shard" in refused(runs["whole"], *shards)
    assert sorted(runs_dir.iterdir()) == before, "nothing is written when a merge is refused"

    named = CliRunner().invoke(
        main, ["merge", "--config", str(config), *map(str, shards), "--output", str(root / "elsewhere")]
    )
    assert named.exit_code == 2 and "--output" in named.output and "run id" in named.output


def test_shard_flag_is_checked_and_names_itself(
    tmp_path: Path, emailindex_dir: Path, emailindex_db: Path
) -> None:
    for text, why in [
        ("2", "expected K/N"),
        ("0/3", "K must be from 1 to N"),
        ("4/3", "K must be from 1 to N"),
        ("1/0", "N, the number of shards"),
        ("a/b", "expected K/N"),
    ]:
        with pytest.raises(InputError, match="--shard") as info:
            parse_shard(text)
        assert why in info.value.message
    assert parse_shard(" 2 / 3 ") == Shard(2, 3)

    config = _project(tmp_path, emailindex_dir, emailindex_db)
    result = _cli(config, "run", "--config", str(config), "--shard", "3/2")
    assert result.returncode == 2
    assert "--shard 3/2: K must be from 1 to N (2)" in " ".join((result.stdout + result.stderr).split())
    assert not (tmp_path / "runs").exists(), "refused before any run folder is made"


def test_adding_tasks_moves_no_attempt_to_another_shard() -> None:
    before = planned_attempt_ids(["a", "b"], ["demo", "openai/gpt-4o"], 3)
    after = planned_attempt_ids(["a", "b", "c", "d"], ["demo", "openai/gpt-4o"], 5)
    for count in (2, 3, 7):
        assert {one: shard_index(one, count) for one in before} == {
            one: shard_index(one, count) for one in after if one in before
        }
        assert len({shard_index(one, count) for one in after}) == count, "every shard gets some of 40"
    assert attempt_id("a", "openai/gpt-4o", 3) == "a__openai_gpt-4o__r003"  # the trace's name


def test_doit_trace_with_shard_plans_only_that_shards_targets(
    tmp_path: Path, emailindex_dir: Path, emailindex_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = _project(tmp_path, emailindex_dir, emailindex_db)
    monkeypatch.chdir(tmp_path)
    targets = {}
    for shard in ("", *(f"{index}/{SHARDS}" for index in range(1, SHARDS + 1))):
        settings = flags.Settings(config=str(config), task_ids=TASKS, repeat=REPEAT, shard=shard)
        monkeypatch.setattr(flags, "_override", settings)
        inputs.graph_inputs.cache_clear()
        targets[shard] = {one["name"] for one in phase1.task_trace() if one.get("name")}
        plan = inputs.graph_inputs(settings).plan
        assert plan is not None and (plan.shard is None) == (not shard)
        if shard:
            assert sorted(targets[shard]) == sorted(plan.shard.attempts)
            assert settings.given()["shard"] == shard  # recorded in the manifest's parameters
    shards = [targets[f"{index}/{SHARDS}"] for index in range(1, SHARDS + 1)]
    assert set().union(*shards) == targets[""] and sum(map(len, shards)) == len(targets[""])

    bad = flags.Settings(config=str(config), task_ids=TASKS, shard="9/3")
    monkeypatch.setattr(flags, "_override", bad)
    inputs.graph_inputs.cache_clear()
    (unavailable,) = list(phase1.task_trace())
    assert unavailable["basename"] == "trace" and "uptodate" in unavailable
    assert "--shard 9/3" in (inputs.graph_inputs(bad).error or "")
    inputs.graph_inputs.cache_clear()
