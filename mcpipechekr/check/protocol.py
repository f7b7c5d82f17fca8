"""Layer 1, protocol compliance: what any MCP server must get right, checked with no configuration.

Four groups, each check with a stable id (docs/check.md lists them all):

- Discovery (PC-01…PC-08): the handshake, tools/list and each tool's definition
  (name format, description, input and output schemas, annotations), the tool
  set the config expects, and resources and prompts when the server declares them.
- Tool calls (PC-10…PC-13): every tool a probe may call is called with
  synthesized arguments until it answers (check/synthesis.py: a case's arguments
  first); every answer must be a well-formed CallToolResult, a tool that only
  refuses is "not reached", and a successful answer's structuredContent must
  match the tool's outputSchema. A tool annotated read-only must change nothing
  check can see, and one annotated idempotent must answer a second identical
  call alike (check/honesty.py).
- Error handling (PC-20…PC-24): an unknown tool, a missing required argument, a
  wrong argument type and an unknown resource must each get a structured error,
  and the server must still answer afterwards (check/protocol_errors.py).

Every check's id, name and group is in `CHECKS` (check/protocol_verdicts.py,
named here too), the lifecycle, feature and transport checks' included.

Why probes are careful: only a tool annotated `readOnlyHint: true` and not
`destructiveHint: true` is called (missing hints take the MCP defaults, so an
unannotated tool is not), unless the cases file opts it in
(`CheckContext.may_call`); any other tool is a SKIP, with no flag to override
that. A crash or hang on one tool is a FAIL for
that check; the server is restarted and the suite goes on. When it cannot be
restarted, every later check is a SKIP that says so.

Limits: "looks like an unhandled exception" is a heuristic over the error text
(a traceback, the SDKs' bare `Error executing tool NAME`, Python exception
names); a server that hides its crashes behind a polite message passes it.
"""

from __future__ import annotations

import re
from typing import Any

import jsonschema
import mcp_types
from mcp import Client
from mcp.shared.exceptions import MCPError

from mcpipechekr.artifacts.check_report import CheckStatus
from mcpipechekr.check.answers import (
    RESOURCE_NOT_FOUND,
    SENSIBLE_ERROR_CODES,
    UNHANDLED,
    one_line,
)
from mcpipechekr.check.context import CheckContext, all_pages
from mcpipechekr.check.honesty import honesty_verdicts, start_watch
from mcpipechekr.check.protocol_errors import (
    _check_bad_arguments,
    _check_still_answers,
    _check_unknown_resource,
    _check_unknown_tool,
)
from mcpipechekr.check.protocol_verdicts import (
    CHECKS,
    CheckSpec,
    _attempt,
    _capabilities,
    _failed,
    _lost,
    _session_call,
    _verdict,
)
from mcpipechekr.check.reach import ToolReach, attempts_detail
from mcpipechekr.check.spec_features import run_feature_checks
from mcpipechekr.check.spec_http import check_streamable_http
from mcpipechekr.check.spec_lifecycle import run_lifecycle_checks
from mcpipechekr.check.synthesis import CaseArguments, reach_tools

TOOL_NAME = re.compile(r"^[A-Za-z0-9_./-]{1,64}$")
"""The spec's tool-name rule: 1 to 64 characters of letters, digits, `_`, `-`, `.` and `/`."""

HINTS = (
    ("read_only_hint", "readOnlyHint"),
    ("destructive_hint", "destructiveHint"),
    ("idempotent_hint", "idempotentHint"),
    ("open_world_hint", "openWorldHint"),
)

STATE_CHANGE_HINTS = {"destructiveHint": "true", "idempotentHint": "false"}
"""The hints the MCP specification gives meaning only when readOnlyHint is false, with their defaults."""

ArgumentsFor = CaseArguments
"""Arguments a cases file gives for a tool (tried before synthesized ones) and the case id, or None."""

__all__ = ["CHECKS", "RESOURCE_NOT_FOUND", "SENSIBLE_ERROR_CODES", "UNHANDLED", "CheckSpec", "run_protocol"]


def run_protocol(ctx: CheckContext, *, arguments_for: ArgumentsFor | None = None) -> None:
    """Run every Layer 1 check against `ctx.server`, appending the verdicts to `ctx.results`."""
    _check_initialize(ctx)
    if not _check_tools_list(ctx):
        return
    for tool in ctx.tools:
        _check_definition(ctx, tool)
    _check_tool_names(ctx)
    for tool in ctx.tools:
        _check_annotations(ctx, tool)
    _check_expected_tools(ctx)
    _check_resources(ctx)
    _check_prompts(ctx)

    if ctx.server_lost is None:
        start_watch(ctx)  # PC-12 and PC-13 hold the annotations to what PC-10's calls do
    reaches = reach_tools(ctx, ctx.tools, arguments_for)
    halted: set[str] = set()
    for tool in ctx.tools:
        reach = reaches.get(tool.name) or ctx.coverage.get(tool.name)
        if reach is None or not _check_call(ctx, tool, reach):
            halted.add(tool.name)
        for check_id, status, reason, details in honesty_verdicts(ctx, tool):
            _verdict(ctx, check_id, tool.name, details=details)(status, reason)

    _check_unknown_tool(ctx)
    for tool in ctx.tools:
        _check_bad_arguments(ctx, tool, halted)
    _check_unknown_resource(ctx)
    _check_still_answers(ctx)
    run_lifecycle_checks(ctx)  # PC-30…PC-42 over a raw JSON-RPC session (check/spec_lifecycle.py)
    run_feature_checks(ctx)  # PC-50…PC-59: prompts, resources, completions, content (check/spec_features.py)
    check_streamable_http(ctx)  # PC-70…PC-79, in a session of their own (check/spec_http.py)


# --- Discovery ------------------------------------------------------------------------------------


def _check_initialize(ctx: CheckContext) -> None:
    """PC-01: the handshake succeeded (start() already proved that) and the server says who it is."""
    ctx.step("PC-01 initialize")
    health = ctx.server.health
    assert health is not None
    caps = _capabilities(ctx)
    declared = [
        kind for kind in ("tools", "resources", "prompts", "logging", "completions") if getattr(caps, kind)
    ]
    info, protocol = health.server_info, f"protocol {health.protocol_version}"
    verdict = _verdict(
        ctx,
        "PC-01",
        details={"protocol_version": health.protocol_version, "server_info": info, "capabilities": declared},
    )
    if not info.get("name"):
        verdict("WARN", f"the server did not identify itself (serverInfo); {protocol}")
        return
    who = f"{info['name']} {info['version']}" if info.get("version") else f"{info['name']} (no version)"
    if caps.tools is None:
        verdict("WARN", f"{who}, {protocol}, but the tools capability is not declared")
    else:
        verdict("PASS", f"{who}, {protocol}")


def _check_tools_list(ctx: CheckContext) -> bool:
    """PC-02: tools/list answers (all pages); fills `ctx.tools`. False when nothing more can be checked."""
    ctx.step("PC-02 tools/list")
    tools, error, ms = _attempt(ctx, lambda: ctx.server.list_tools(timeout_s=ctx.call_timeout_s))
    verdict = _verdict(ctx, "PC-02", duration_ms=ms)
    if error is not None or tools is None:
        _failed(ctx, verdict, error or RuntimeError("no answer"), "tools/list")
        return False
    ctx.use_tools(tools)
    names = ctx.listed_names
    if names:
        verdict("PASS", f"{len(names)} tool(s)", details={"tools": names})
    else:
        verdict("WARN", "the server lists no tools")
    return True


def _schema_problem(schema: Any, what: str) -> str | None:
    """Why `schema` is not a valid JSON Schema for an object, or None."""
    if not isinstance(schema, dict):
        return f"{what} is not a JSON object"
    validator = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        where = "/".join(str(part) for part in exc.absolute_path)
        return f"{what} is not a valid JSON Schema" + (f" at /{where}" if where else "") + f": {exc.message}"
    if schema.get("type") != "object":
        return f"{what} must have type: object (has {schema.get('type')!r})"
    return None


def _check_definition(ctx: CheckContext, tool: mcp_types.Tool) -> None:
    """PC-03: a description, a valid object inputSchema, and a valid outputSchema when one is declared."""
    verdict = _verdict(ctx, "PC-03", tool.name)
    problems = [_schema_problem(tool.input_schema, "inputSchema")]
    if tool.output_schema is not None:
        problems.append(_schema_problem(tool.output_schema, "outputSchema"))
    found = [problem for problem in problems if problem]
    if found:
        verdict("FAIL", "; ".join(found))
    elif not (tool.description or "").strip():
        verdict("WARN", "no description: an agent cannot tell when to use it")
    else:
        verdict(
            "PASS",
            "described; valid " + ("input and output schemas" if tool.output_schema else "inputSchema"),
        )


def _check_tool_names(ctx: CheckContext) -> None:
    """PC-04: every name follows the spec's format, and no two tools share one.

    A duplicated name is this one FAIL; the per-tool checks judge its first
    definition only (`CheckContext.use_tools`), so each of their ids appears once.
    """
    names = ctx.listed_names
    bad = list(dict.fromkeys(name for name in names if not TOOL_NAME.match(name)))
    duplicates = sorted({name for name in names if names.count(name) > 1})
    problems = []
    if bad:
        problems.append("not 1-64 characters of A-Za-z0-9_./-: " + ", ".join(repr(name) for name in bad))
    if duplicates:
        counted = ", ".join(f"{name} ({names.count(name)} times)" for name in duplicates)
        problems.append(
            f"listed more than once: {counted}; a client reaches only one of them, and the other "
            "checks judge the first definition of each name"
        )
    verdict = _verdict(ctx, "PC-04", details={"invalid": bad, "duplicates": duplicates})
    verdict("FAIL", "; ".join(problems)) if problems else verdict("PASS", f"{len(names)} valid, unique names")


def _check_annotations(ctx: CheckContext, tool: mcp_types.Tool) -> None:
    """PC-05: the hints a client needs to know what a call does, as the MCP specification defines them.

    WARN for a tool with no annotations at all, or for one that may change state
    (readOnlyHint false or absent, whose default is false) without
    destructiveHint or idempotentHint: their defaults (destructive, not
    idempotent) make clients ask before every call and retries unsafe. The
    specification gives those two hints meaning only when readOnlyHint is false,
    so a read-only tool need not declare them; a missing openWorldHint (default
    true) is only a note, since a client's decision to call rarely turns on it.
    """
    verdict = _verdict(ctx, "PC-05", tool.name)
    annotations = tool.annotations
    if annotations is None:
        verdict("WARN", "no annotations: clients must assume it writes, destroys and reaches the outside")
        return
    hints = {wire: getattr(annotations, attr) for attr, wire in HINTS}
    notes = []
    missing = []
    if hints["readOnlyHint"] is True:
        if hints["destructiveHint"] is True:
            notes.append(
                "destructiveHint=true means nothing for a read-only tool, but check does not call it"
            )
    else:
        if hints["readOnlyHint"] is None:
            notes.append("readOnlyHint absent (default false: it may change state)")
        missing = [wire for wire in STATE_CHANGE_HINTS if hints[wire] is None]
    if hints["openWorldHint"] is None:
        notes.append("openWorldHint absent (default true)")
    if missing:
        said = ", ".join(f"{wire} (default {STATE_CHANGE_HINTS[wire]})" for wire in missing)
        verdict("WARN", "; ".join([f"may change state but leaves out {said}", *notes]))
    else:
        declared = ", ".join(
            f"{wire}={str(value).lower()}" for wire, value in hints.items() if value is not None
        )
        verdict("PASS", "; ".join([declared or "no hints", *notes]))


def _check_expected_tools(ctx: CheckContext) -> None:
    """PC-06: the tool set matches config's check.expected_tool_count / check.expected_tools."""
    expected_count, expected = ctx.config.check.expected_tool_count, ctx.config.check.expected_tools
    names = [tool.name for tool in ctx.tools]
    missing = [name for name in expected if name not in names]
    extra = [name for name in names if expected and name not in expected]
    verdict = _verdict(ctx, "PC-06", details={"missing": missing, "unexpected": extra, "count": len(names)})
    if expected_count is None and not expected:
        verdict("SKIP", "not configured (check.expected_tool_count, check.expected_tools)")
        return
    failures = []
    if expected_count is not None and len(names) != expected_count:
        failures.append(f"{len(names)} tool(s) listed, {expected_count} expected")
    if missing:
        failures.append("missing: " + ", ".join(missing))
    warnings = ["not in check.expected_tools: " + ", ".join(extra)] if extra else []
    if failures or warnings:
        verdict("FAIL" if failures else "WARN", "; ".join(failures + warnings))
    else:
        verdict("PASS", f"{len(names)} tool(s) as configured")


def _check_resources(ctx: CheckContext) -> None:
    """PC-07: resources/list and resources/templates/list answer when the capability is declared."""
    verdict = _verdict(ctx, "PC-07")
    if _lost(ctx, verdict):
        return
    if _capabilities(ctx).resources is None:
        verdict("SKIP", "the server does not declare resources")
        return
    ctx.step("PC-07 resources/list")

    async def both(client: Client) -> tuple[list[Any], list[Any] | MCPError]:
        resources = await all_pages(
            lambda c: client.list_resources(cursor=c, cache_mode="refresh"), "resources"
        )
        try:
            templates: list[Any] | MCPError = await all_pages(
                lambda c: client.list_resource_templates(cursor=c, cache_mode="refresh"), "resource_templates"
            )
        except MCPError as exc:
            # Many servers (the Python SDK's low-level ones without a template handler) list
            # resources but answer -32601 here: told apart from a broken resources/list below.
            templates = exc
        return resources, templates

    lists, error, ms = _attempt(ctx, lambda: _session_call(ctx, "during resources/list", both))
    if error is not None or lists is None:
        _failed(ctx, verdict, error or RuntimeError("no answer"), "declares resources, but resources/list")
        return
    resources, templates = lists
    ctx.value_pool().add_resources(resources)  # their URIs and names are arguments for synthesis
    if isinstance(templates, MCPError):
        # Method not found is a missing optional method (WARN); any other error is a broken one.
        status: CheckStatus = "WARN" if templates.error.code == mcp_types.METHOD_NOT_FOUND else "FAIL"
        verdict(
            status,
            f"{len(resources)} resource(s); resources/templates/list: JSON-RPC error "
            f"{templates.error.code} ({templates.error.message}): clients that list templates get an error",
            duration_ms=ms,
        )
        return
    verdict("PASS", f"{len(resources)} resource(s), {len(templates)} template(s)", duration_ms=ms)


def _check_prompts(ctx: CheckContext) -> None:
    """PC-08: prompts/list answers when the capability is declared, and every prompt is described."""
    verdict = _verdict(ctx, "PC-08")
    if _lost(ctx, verdict):
        return
    if _capabilities(ctx).prompts is None:
        verdict("SKIP", "the server does not declare prompts")
        return
    ctx.step("PC-08 prompts/list")
    prompts, error, ms = _attempt(
        ctx,
        lambda: _session_call(
            ctx,
            "during prompts/list",
            lambda client: all_pages(
                lambda c: client.list_prompts(cursor=c, cache_mode="refresh"), "prompts"
            ),
        ),
    )
    if error is not None or prompts is None:
        _failed(ctx, verdict, error or RuntimeError("no answer"), "declares prompts, but prompts/list")
        return
    undescribed = [prompt.name for prompt in prompts if not (prompt.description or "").strip()]
    if undescribed:
        verdict("WARN", "no description: " + ", ".join(undescribed), duration_ms=ms)
    else:
        verdict("PASS", f"{len(prompts)} prompt(s), all described", duration_ms=ms)


# --- Tool calls -----------------------------------------------------------------------------------


def _check_call(ctx: CheckContext, tool: mcp_types.Tool, reach: ToolReach) -> bool:
    """PC-10 and PC-11 from what synthesis got from the tool. False when a call halted the server."""
    verdict = _verdict(ctx, "PC-10", tool.name)
    structured = _verdict(ctx, "PC-11", tool.name)
    no_schema = "declares no outputSchema"
    if reach.status == "not_called":
        verdict("SKIP", reach.reason)
        structured("SKIP", no_schema if tool.output_schema is None else reach.reason)
        return True
    if reach.status == "no_arguments":
        verdict("SKIP", reach.reason)
        structured("SKIP", no_schema if tool.output_schema is None else "not called: " + reach.reason)
        return True
    decisive = reach.decisive
    assert decisive is not None
    candidate = decisive.candidate
    calls = len(reach.attempts)
    tries = f" (call {calls} of {calls})" if calls > 1 else ""
    verdict = _verdict(
        ctx,
        "PC-10",
        tool.name,
        duration_ms=sum(attempt.ms for attempt in reach.attempts),
        details={
            "arguments": candidate.arguments,
            "arguments_source": candidate.origin,
            "sources": candidate.sources,
            "attempts": attempts_detail(reach),
        },
    )
    with_what = candidate.describe()
    if reach.status == "reached":
        result = decisive.result
        if result is None:  # the client refused its structured content: it answered, PC-11 says the rest
            verdict("PASS", f"answered with {with_what}{tries} (its structured content: see PC-11)")
        else:
            kinds = ", ".join(sorted({block.type for block in result.content})) or "none"
            verdict(
                "PASS",
                f"{len(result.content)} content block(s) ({kinds}) in {decisive.ms:.0f} ms "
                f"with {with_what}{tries}",
            )
        if decisive.mismatch is not None:
            structured("FAIL", decisive.mismatch)
        elif tool.output_schema is None:
            structured("SKIP", no_schema)
        elif result is not None:
            _check_structured(ctx, tool, result)
        return True
    if reach.status == "needs_network":
        verdict("SKIP", f"needs network: {one_line(reach.reason)} (with {with_what})")
        structured("SKIP", no_schema if tool.output_schema is None else "not reached: it needs network")
        return True
    if reach.status == "not_reached":
        last = f"after {calls} call(s), the last with {with_what}"
        verdict("SKIP", f"not reached: {one_line(reach.reason)} ({last})")
        structured("SKIP", no_schema if tool.output_schema is None else "not reached (see PC-10)")
        return True
    # failed: a crash, a hang, a malformed answer, an internal error or an unhandled exception
    reason = reach.reason
    if not decisive.halted:
        reason = f"{reason} (with {with_what}{tries})"
    else:
        reason = f"{reason}\n  with {with_what}{tries}"
    verdict("FAIL", reason)
    structured("SKIP", no_schema if tool.output_schema is None else "no successful result (PC-10 failed)")
    return not decisive.halted


def _check_structured(ctx: CheckContext, tool: mcp_types.Tool, result: mcp_types.CallToolResult) -> None:
    """PC-11: structuredContent is present and valid against the declared outputSchema."""
    verdict = _verdict(ctx, "PC-11", tool.name)
    if result.structured_content is None:
        verdict("FAIL", "declares an outputSchema but returned no structuredContent")
        return
    schema = tool.output_schema or {}
    try:
        validator = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)(
            schema
        )
        error = jsonschema.exceptions.best_match(validator.iter_errors(result.structured_content))
    except (jsonschema.SchemaError, jsonschema.exceptions.RefResolutionError) as exc:
        verdict("FAIL", f"its outputSchema cannot be used: {exc}")
        return
    if error is not None:
        verdict("FAIL", f"at /{'/'.join(str(part) for part in error.absolute_path)}: {error.message}")
    else:
        verdict("PASS", "valid")
