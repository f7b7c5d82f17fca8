"""Every file the pipeline writes: formats, run folders, and the one safe way to write them.

One module per file format (manifest, baseline, bug_report, tef_report,
trace), each a strict pydantic model whose JSON Schema is exported to
docs/schemas/. All writes go through ``atomic`` so no reader ever sees half a
file; run folders come from ``rundir`` so no run overwrites another.
"""

from mcpipechekr.artifacts._base import (
    FORMAT_VERSION,
    RUN_ID_PATTERN,
    SHA256_PATTERN,
    AcceptedRisk,
    ArtifactModel,
    utc_now,
)
from mcpipechekr.artifacts.atomic import (
    append_jsonl,
    atomic_open,
    atomic_write_bytes,
    atomic_write_json,
    atomic_write_text,
    dumps_json,
    is_temp_file,
    read_jsonl,
    read_model,
    write_model,
)
from mcpipechekr.artifacts.baseline import Baseline, BaselineEntry
from mcpipechekr.artifacts.bug_report import (
    BUG_ID_PREFIXES,
    Bug,
    BugReport,
    Evidence,
    TaskStats,
    bug_id,
)
from mcpipechekr.artifacts.check_report import (
    LAYERS,
    CheckReport,
    CheckResult,
    CheckStatus,
    CheckSummary,
    Layer,
    ResponseSize,
)
from mcpipechekr.artifacts.fix_record import (
    AgentRun,
    BugFix,
    FixHealth,
    FixRecord,
    FixStatus,
    read_fix_record,
)
from mcpipechekr.artifacts.manifest import ImportedSession, Manifest, PhaseProviders, ServerRef
from mcpipechekr.artifacts.review import Annotation, Review, ReviewDecision
from mcpipechekr.artifacts.rundir import (
    RunDir,
    baseline_path,
    create_run_dir,
    format_run_id,
    latest_run,
    list_runs,
    open_run,
    parse_run_id,
)
from mcpipechekr.artifacts.tef_report import (
    Confusion,
    Drift,
    Overlap,
    SecurityFinding,
    StaticFinding,
    TefReport,
    TefSummary,
    ToolChange,
    ToolEvaluation,
)
from mcpipechekr.artifacts.tools_snapshot import (
    ToolDefinition,
    ToolsSnapshot,
    snapshot_tools,
    tool_definition,
)
from mcpipechekr.artifacts.trace import (
    ModelTurn,
    ToolCall,
    Trace,
    TraceTotals,
    Usage,
    list_traces,
    measure_result,
    read_trace,
    safe_name,
    tool_call_from_result,
    trace_path,
    write_trace,
)

__all__ = [
    "LAYERS",
    "CheckReport",
    "CheckResult",
    "CheckStatus",
    "CheckSummary",
    "Layer",
    "ResponseSize",
    "ToolDefinition",
    "ToolsSnapshot",
    "snapshot_tools",
    "tool_definition",
    "BUG_ID_PREFIXES",
    "FORMAT_VERSION",
    "RUN_ID_PATTERN",
    "SCHEMA_MODELS",
    "SHA256_PATTERN",
    "AcceptedRisk",
    "AgentRun",
    "Annotation",
    "ArtifactModel",
    "Baseline",
    "BaselineEntry",
    "Bug",
    "BugFix",
    "BugReport",
    "Confusion",
    "Drift",
    "Evidence",
    "FixHealth",
    "FixRecord",
    "FixStatus",
    "ImportedSession",
    "Manifest",
    "ModelTurn",
    "Overlap",
    "PhaseProviders",
    "Review",
    "ReviewDecision",
    "RunDir",
    "SecurityFinding",
    "ServerRef",
    "StaticFinding",
    "TaskStats",
    "TefReport",
    "TefSummary",
    "ToolCall",
    "ToolChange",
    "ToolEvaluation",
    "Trace",
    "TraceTotals",
    "Usage",
    "append_jsonl",
    "atomic_open",
    "atomic_write_bytes",
    "atomic_write_json",
    "atomic_write_text",
    "baseline_path",
    "bug_id",
    "create_run_dir",
    "dumps_json",
    "export_schemas",
    "format_run_id",
    "is_temp_file",
    "latest_run",
    "list_runs",
    "list_traces",
    "measure_result",
    "open_run",
    "parse_run_id",
    "read_fix_record",
    "read_jsonl",
    "read_model",
    "read_trace",
    "safe_name",
    "stale_schemas",
    "tool_call_from_result",
    "trace_path",
    "utc_now",
    "write_model",
    "write_trace",
]


_SCHEMA_NAMES = ("SCHEMA_MODELS", "export_schemas", "stale_schemas")


def __getattr__(name: str) -> object:
    """The schema registry loads on first use: it lists models of other packages (findings) that are
    built on this one, so importing it with the package would be circular."""
    if name in _SCHEMA_NAMES:
        from mcpipechekr.artifacts import schemas

        return getattr(schemas, name)
    raise AttributeError(f"module 'mcpipechekr.artifacts' has no attribute {name!r}")
