"""`mcpipechekr schema`: checked-in schemas stay current, writes are minimal, files validate."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import orjson
import pytest
from click.testing import CliRunner

from mcpipechekr.artifacts.schemas import SCHEMA_MODELS, export_schemas, stale_schemas
from mcpipechekr.cli import main

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_artifacts import SAMPLES  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
NAMES = sorted(f"{name}.schema.json" for name in SCHEMA_MODELS)


def test_checked_in_schemas_are_current() -> None:
    stale = stale_schemas(REPO / "docs" / "schemas")
    assert stale == [], f"run `mcpipechekr schema --out docs/schemas`; stale: {stale}"


@pytest.mark.slow
def test_check_flag_from_a_separate_process() -> None:
    command = [sys.executable, "-m", "mcpipechekr", "schema", "--check"]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "up to date" in done.stdout


def test_export_writes_all_then_nothing_and_keeps_mtimes(tmp_path: Path) -> None:
    out = tmp_path / "schemas"
    cli = CliRunner()
    first = cli.invoke(main, ["schema", "--out", str(out)])
    assert first.exit_code == 0, first.output
    assert sorted(p.name for p in out.iterdir()) == NAMES
    assert first.output.count("wrote ") == len(NAMES)
    old = {p: p.stat().st_mtime_ns for p in out.iterdir()}
    for path in out.iterdir():
        os.utime(path, ns=(1, 1))  # any rewrite would move the time forward again
    second = cli.invoke(main, ["schema", "--out", str(out)])
    assert second.exit_code == 0 and "wrote" not in second.output and "up to date" in second.output
    assert all(p.stat().st_mtime_ns == 1 for p in old)
    assert export_schemas(out) == []


def test_check_names_stale_and_missing_files_and_export_fixes_only_them(tmp_path: Path) -> None:
    out = tmp_path / "schemas"
    export_schemas(out)
    trace = out / "trace.schema.json"
    trace.write_text(trace.read_text().replace("Model turns", "Old wording"))
    (out / "baseline.schema.json").unlink()
    (out / "extra.schema.json").write_text("{}")  # not ours: neither checked nor removed
    result = CliRunner().invoke(main, ["schema", "--out", str(out), "--check"])
    assert result.exit_code == 1
    assert "trace.schema.json" in result.output and "baseline.schema.json" in result.output
    assert "manifest.schema.json" not in result.output and "extra.schema.json" not in result.output
    assert f"mcpipechekr schema --out {out}" in result.output
    written = export_schemas(out)
    assert sorted(p.name for p in written) == ["baseline.schema.json", "trace.schema.json"]
    assert stale_schemas(out) == [] and (out / "extra.schema.json").exists()
    ok = CliRunner().invoke(main, ["schema", "--out", str(out), "--check"])
    assert ok.exit_code == 0


@pytest.mark.parametrize("name", sorted(SCHEMA_MODELS))
def test_sample_files_validate_against_exported_schemas(name: str) -> None:
    schema = orjson.loads((REPO / "docs" / "schemas" / f"{name}.schema.json").read_bytes())
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(
        schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
    )
    document = SAMPLES[name]().model_dump(mode="json")
    validator.validate(document)
    document["unexpected"] = True
    with pytest.raises(jsonschema.ValidationError):
        validator.validate(document)
