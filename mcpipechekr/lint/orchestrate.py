"""Phase 0.5 in one call: `run_lint(config, …)` lints the server's tools into a TefReport.

Order of work: read the tools (tools/list, or the definitions a caller already
has), then — unless a cached result for exactly these inputs exists — the
static rules, overlap, security scan and selection test; then, every time,
drift against the pinned definitions and the accepted risks.

Reuse: the expensive part (above all the selection test, which may call a paid
model) depends only on the tool definitions' hashes, the selection queries,
the selector (provider), `repeat`, the thresholds and this module's
LINT_VERSION. Their hash keys a cached report under `paths.home/cache/`, so a
second lint of an unchanged server does nothing beyond tools/list. Drift and
acceptances are never cached: they depend on what happened since.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcpipechekr._util.hashing import sha256_json
from mcpipechekr._util.yamlsrc import ConfigFileError
from mcpipechekr.artifacts._base import AcceptedRisk, utc_now
from mcpipechekr.artifacts.atomic import read_model, write_model
from mcpipechekr.artifacts.tef_report import TefReport
from mcpipechekr.artifacts.tools_snapshot import ToolDefinition, ToolsSnapshot, tool_definition
from mcpipechekr.config import Config
from mcpipechekr.errors import UserError
from mcpipechekr.lint.metrics import predictions, score_tools
from mcpipechekr.lint.overlap import find_overlaps
from mcpipechekr.lint.pinning import check_drift
from mcpipechekr.lint.report import build_report, precision_warnings, selection_notes
from mcpipechekr.lint.risks import apply_accepted_risks, lint_gate, parse_accept_risk, record_acceptances
from mcpipechekr.lint.rules import lint_tools
from mcpipechekr.lint.security import scan_tools
from mcpipechekr.lint.selection import (
    LEXICAL,
    SelectionQuery,
    Selector,
    first_tool,
    make_selector,
    selection_queries,
)
from mcpipechekr.providers import ProviderSpec
from mcpipechekr.server.lifecycle import server_under_test
from mcpipechekr.tasks import TaskFile, load_tasks

LINT_VERSION = 4  # 2: TEF-S007 … TEF-S010; 3: the BM25F lexical selector; 4: the server vocabulary
log = logging.getLogger(__name__)


@dataclass
class LintOutcome:
    """A lint's report and what the caller may want to say about it."""

    report: TefReport
    reused: bool
    warnings: list[str] = field(default_factory=list)
    """A model's selection findings that ask the author to look at a description."""
    blocking: list[str] = field(default_factory=list)
    selector_invocations: int = 0
    notes: list[str] = field(default_factory=list)
    """The lexical selector's low-precision tools: a rough signal that asks nothing of the author."""


def run_lint(
    config: Config,
    *,
    repeat: int = 1,
    accept_risks: Iterable[str | AcceptedRisk] = (),
    **options: Any,
) -> TefReport:
    """Lint the configured server's tools; see `lint` for the options."""
    return lint(config, repeat=repeat, accept_risks=accept_risks, **options).report


def lint(
    config: Config,
    *,
    repeat: int = 1,
    accept_risks: Iterable[str | AcceptedRisk] = (),
    accept_reason: str | None = None,
    tools: Sequence[Any] | ToolsSnapshot | None = None,
    taskfile: TaskFile | None = None,
    selector: Selector | None = None,
    use_cache: bool = True,
) -> LintOutcome:
    """Lint the server's tools and return the report with its warnings and blocking reasons.

    The selection test's model is the config's `providers.phase05` (a flag that
    overrides it is applied when the config is loaded); `demo` means the
    offline lexical selector.
    tools: definitions to lint (a ToolsSnapshot, ToolDefinitions, `mcp_types.Tool`s
      or tools/list dicts); default: start the server and list them.
    taskfile: the selection queries' source; default: `paths.tasks` if it exists.
    accept_risks: `TOOL` or `TOOL:RULE` strings (or AcceptedRisk), stored under
      paths.home so later lints of the same definitions honour them.
    selector: replaces the one the provider names (tests, other callers).
    Raises UserError (exit 2) for bad input or an unreachable server.
    """
    if repeat < 1:
        raise UserError(f"repeat must be >= 1, got {repeat}")
    spec = config.providers.phase05
    definitions = _definitions(config, tools)
    if taskfile is None and config.paths.tasks.exists():
        taskfile = load_tasks(config.paths.tasks)
    queries = selection_queries(taskfile)
    _check_expected_tools(taskfile, definitions)
    label = selector.label if selector is not None else (LEXICAL if spec.is_demo else f"llm:{spec}")
    tools_hash = sha256_json([d.definition_hash for d in definitions])
    key = sha256_json(
        {
            "lint_version": LINT_VERSION,
            "tools_hash": tools_hash,
            "queries": [[q.text, q.expected_tool] for q in queries],
            "selector": label,
            "endpoint": _endpoint_key(config, spec),
            "repeat": repeat,
            "thresholds": config.thresholds.model_dump(mode="json"),
        }
    )
    cache_file = config.paths.home / "cache" / f"lint-{key.removeprefix('sha256:')[:32]}.json"
    raw = _read_cache(cache_file) if use_cache else None
    reused = raw is not None and raw.tools_hash == tools_hash and raw.server == config.server.name
    invocations = 0
    if not reused:
        if selector is None and queries:
            selector = make_selector(spec, config)
        raw = _analyse(config, definitions, tools_hash, queries, selector, label, repeat)
        invocations = 1 if queries else 0
        write_model(cache_file, raw)
    assert raw is not None
    drift = check_drift(config.paths.home, config.server.name, definitions)
    risks = [r if isinstance(r, AcceptedRisk) else parse_accept_risk(r, accept_reason) for r in accept_risks]
    accepted = record_acceptances(config.paths.home, config.server.name, risks, definitions)
    report = raw.model_copy(update={"generated_at": utc_now(), "drift": drift})
    report = apply_accepted_risks(TefReport.model_validate(report.model_dump(exclude={"summary"})), accepted)
    warnings = precision_warnings(report, config.thresholds.tef_precision_warning)
    for warning in warnings:
        log.warning(warning)
    notes = selection_notes(report, config.thresholds.tef_precision_warning)
    return LintOutcome(report, reused, warnings, lint_gate(report), invocations, notes)


def _endpoint_key(config: Config, spec: ProviderSpec) -> str | None:
    endpoint = config.providers.endpoint_for(spec)
    return endpoint.base_url if endpoint is not None else None


def _definitions(config: Config, tools: Sequence[Any] | ToolsSnapshot | None) -> list[ToolDefinition]:
    if isinstance(tools, ToolsSnapshot):
        return list(tools.tools)
    if tools is None:
        with server_under_test(config, share=True) as live:
            tools = live.list_tools()
    return [tool if isinstance(tool, ToolDefinition) else tool_definition(tool) for tool in tools]


def _check_expected_tools(taskfile: TaskFile | None, definitions: Sequence[ToolDefinition]) -> None:
    """A selection query's tool the server does not list is a mistake in tasks.yaml, reported at its line."""
    if taskfile is None:
        return
    names = {d.name for d in definitions}
    listed = ", ".join(sorted(names))
    problems = []
    for index, task in enumerate(taskfile.tasks):
        first = first_tool(task)
        if first is not None and first[0] not in names:
            loc = (
                ("tasks", index, "expected_tool")
                if first[1] == "expected_tool"
                else ("tasks", index, "reference_calls", 0, "tool")
            )
            problems.append(taskfile.problem(loc, f"the server lists no tool '{first[0]}' (tools: {listed})"))
    for index, case in enumerate(taskfile.selection_cases):
        if case.expected_tool not in names:
            problems.append(
                taskfile.problem(
                    ("selection_cases", index, "expected_tool"),
                    f"the server lists no tool '{case.expected_tool}' (tools: {listed})",
                )
            )
    if problems:
        raise ConfigFileError(problems)


def _read_cache(path: Path) -> TefReport | None:
    if not path.exists():
        return None
    try:
        return read_model(path, TefReport)
    except Exception:  # a damaged or outdated cache entry is recomputed, never an error
        return None


def _analyse(
    config: Config,
    definitions: list[ToolDefinition],
    tools_hash: str,
    queries: list[SelectionQuery],
    selector: Selector | None,
    label: str,
    repeat: int,
) -> TefReport:
    names = [d.name for d in definitions]
    scores = {}
    if queries and selector is not None:
        answers = selector.select(queries, definitions, repeat)
        scores = score_tools(
            names,
            predictions(queries, answers),
            Counter(q.expected_tool for q in queries),
            misleading_share=config.thresholds.misleading_confidence,
        )
    return build_report(
        server=config.server.name,
        tools_hash=tools_hash,
        selector=label,
        generated_at=utc_now(),
        tool_names=names,
        findings=lint_tools(definitions),
        scores=scores,
        overlaps=find_overlaps(definitions, config.thresholds.overlap),
        security=scan_tools(definitions),
        selection_cases=len(queries),
        repeat=repeat,
    )
