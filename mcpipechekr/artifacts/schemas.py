"""JSON Schemas of the artifact formats, for editors, other tools and docs/schemas/.

The schemas are generated from the pydantic models, never edited by hand, and a
schema file is rewritten only when its content changes, so file times and doit
hashes stay put when nothing did.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel

from mcpipechekr.artifacts.atomic import atomic_write_bytes
from mcpipechekr.artifacts.baseline import Baseline
from mcpipechekr.artifacts.bug_report import BugReport
from mcpipechekr.artifacts.call_record import CallRecord
from mcpipechekr.artifacts.check_report import CheckReport
from mcpipechekr.artifacts.comparison import Comparison
from mcpipechekr.artifacts.description_suggestions import DescriptionSuggestions
from mcpipechekr.artifacts.findings import FindingsList
from mcpipechekr.artifacts.fix_record import FixRecord
from mcpipechekr.artifacts.handover import Handover
from mcpipechekr.artifacts.kpi import KpiReport
from mcpipechekr.artifacts.manifest import Manifest
from mcpipechekr.artifacts.review import Review
from mcpipechekr.artifacts.server_starts import ServerStarts
from mcpipechekr.artifacts.tef_report import TefReport
from mcpipechekr.artifacts.tools_snapshot import ToolsSnapshot
from mcpipechekr.artifacts.trace import Trace

JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"

SCHEMA_MODELS: dict[str, type[BaseModel]] = {
    "manifest": Manifest,
    "baseline": Baseline,
    "bug_report": BugReport,
    "tef_report": TefReport,
    "kpi": KpiReport,
    "description_suggestions": DescriptionSuggestions,
    "trace": Trace,
    "tools_snapshot": ToolsSnapshot,
    "check_report": CheckReport,
    "review": Review,
    "fix_record": FixRecord,
    "findings": FindingsList,
    "call_record": CallRecord,
    "comparison": Comparison,
    "server_starts": ServerStarts,
    "handover": Handover,
}
"""File-format name -> model; each becomes `<name>.schema.json`."""


def schema_for(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON Schema of what a reader accepts (validation mode), tagged with its dialect."""
    schema = model.model_json_schema(mode="validation")
    return {"$schema": JSON_SCHEMA_DIALECT, **schema}


def render_schema(model: type[BaseModel]) -> bytes:
    """The exact bytes of a schema file: two-space indent and a trailing newline, stable across runs."""
    return orjson.dumps(schema_for(model), option=orjson.OPT_INDENT_2) + b"\n"


def schema_files(out_dir: str | Path) -> dict[Path, bytes]:
    """Every schema file ``export_schemas`` writes, with its expected content."""
    out = Path(out_dir)
    return {out / f"{name}.schema.json": render_schema(model) for name, model in SCHEMA_MODELS.items()}


def stale_schemas(out_dir: str | Path) -> list[Path]:
    """Schema files that are missing or differ from the models (other files are not looked at)."""
    stale = []
    for path, content in schema_files(out_dir).items():
        try:
            if path.read_bytes() == content:
                continue
        except FileNotFoundError:
            pass
        stale.append(path)
    return stale


def export_schemas(out_dir: str | Path) -> list[Path]:
    """Write the schema files that are missing or out of date; returns the ones written."""
    files = schema_files(out_dir)
    written = []
    for path in stale_schemas(out_dir):
        atomic_write_bytes(path, files[path])
        written.append(path)
    return written
