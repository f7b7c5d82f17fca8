"""The quality layer: how much of an agent's context each tool response takes, and its shape.

Sizes come from the successful responses the other layers already received
(`ctx.responses`), so a tool is not called twice for the same answer; an error
message says nothing about what a tool's answers cost an agent, so it is not
measured. When the layer runs alone there are none, and it calls each tool the
context allows (`ctx.may_call`) itself: first the single-call cases that carry
a `quality:` block, then, for every tool still unseen, arguments synthesized as
PC-10 does (check/synthesis.py: a case's known-good arguments first).

A response's size is what the wire puts in front of a model: its text blocks,
its structured content as compact JSON, and any other block as JSON. Tokens are
estimated by `mcpipechekr._util.tokens.estimate_tokens`, the project's one
estimator. Checks:

- `QC-01:<tool>`: the tool's largest successful response against its budget
  (`check.tool_budgets[tool]`, else `check.budget_tokens`); over is a WARN.
  Every listed tool gets a line: a SKIP that says why when no call of it
  succeeded (not callable, not reached, failed).
- `QC-02:<source>` has_headers, `QC-03:<source>` list_formatting,
  `QC-04:<source>` consistent_items: a case's `quality:` block; FAIL or PASS.
  `<source>` is the case id, or `case/step` for a workflow step.
"""

from __future__ import annotations

import re
from typing import Any

import mcp_types
import orjson

from mcpipechekr._util.tokens import estimate_tokens
from mcpipechekr.artifacts.check_report import ResponseSize
from mcpipechekr.check.answers import one_line
from mcpipechekr.check.cases import CasesFile
from mcpipechekr.check.context import CheckContext, ObservedResponse
from mcpipechekr.check.pointer import (
    PointerError,
    describe_value,
    resolve_pointer,
    result_document,
    result_text,
)
from mcpipechekr.check.reach import ToolReach
from mcpipechekr.check.synthesis import CaseArguments, case_arguments, reach_tools
from mcpipechekr.errors import ServerHalt

SIZE_GROUP = "Response size"
SHAPE_GROUP = "Response structure"
_HEADER = re.compile(r"^\s{0,3}#{1,6}\s+\S")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+\S")


def response_payload(result: mcp_types.CallToolResult) -> str:
    """The text a response puts in front of a model: text blocks, structured content, other blocks as JSON."""
    parts = []
    for block in result.content:
        if getattr(block, "type", None) == "text":
            parts.append(block.text)
        else:
            parts.append(
                orjson.dumps(block.model_dump(mode="json", by_alias=True, exclude_none=True)).decode()
            )
    if result.structured_content is not None:
        parts.append(orjson.dumps(result.structured_content, default=str).decode())
    return "".join(parts)


def budget_for(ctx: CheckContext, tool: str) -> tuple[int, str]:
    """The token budget of a tool's responses and the setting it came from."""
    budgets = ctx.config.check.tool_budgets
    if tool in budgets:
        return budgets[tool], f"check.tool_budgets.{tool}"
    return ctx.config.check.budget_tokens, "check.budget_tokens"


def measure(ctx: CheckContext, response: ObservedResponse) -> ResponseSize:
    payload = response_payload(response.result)
    tokens = estimate_tokens(payload)
    budget, _ = budget_for(ctx, response.tool)
    return ResponseSize(
        tool=response.tool,
        source=response.source,
        chars=len(payload),
        tokens_estimated=tokens,
        budget_tokens=budget,
        over_budget=tokens > budget,
    )


def run_quality(
    ctx: CheckContext, cases: CasesFile | None, *, arguments_for: CaseArguments | None = None
) -> list[ResponseSize]:
    """Size every successful response, warn about tools over budget, run the cases' structural checks.

    `arguments_for` gives known-good arguments when the layer calls tools itself
    (default: the cases file's). Returns the sizes largest first: the responses
    most likely to crowd an agent's context lead the table.
    """
    unsized: dict[str, str] = {}
    if ctx.responses:
        responses = list(ctx.responses)
    else:
        responses = _probe(ctx, cases, arguments_for or case_arguments(cases), unsized)
    # The protocol layer may reuse a case's arguments, so the same call can be observed twice:
    # one row per tool and source, keeping the larger answer.
    by_source: dict[tuple[str, str], ResponseSize] = {}
    successes = [response for response in responses if not response.result.is_error]
    for size in (measure(ctx, response) for response in successes):
        key = (size.tool, size.source)
        if key not in by_source or size.tokens_estimated > by_source[key].tokens_estimated:
            by_source[key] = size
    sizes = list(by_source.values())
    _record_budgets(ctx, sizes, unsized)
    if cases is not None:
        _record_structure(ctx, cases, responses)
    return sorted(sizes, key=lambda size: (-size.tokens_estimated, -size.chars, size.tool, size.source))


def _record_budgets(ctx: CheckContext, sizes: list[ResponseSize], unsized: dict[str, str]) -> None:
    """One QC-01 line per tool: its largest successful response against the budget, or why none."""
    largest: dict[str, ResponseSize] = {}
    for size in sizes:
        if size.tool not in largest or size.tokens_estimated > largest[size.tool].tokens_estimated:
            largest[size.tool] = size
    listed = [tool.name for tool in ctx.tools]
    for tool in listed + [name for name in largest if name not in listed]:
        size = largest.get(tool)
        if size is None:
            _skip(ctx, tool, unsized.get(tool) or _why_unsized(ctx, tool))
            continue
        _, setting = budget_for(ctx, tool)
        seen = (
            f"largest response {size.tokens_estimated:,} estimated tokens "
            f"({size.chars:,} chars, {_from(size)})"
        )
        if size.over_budget:
            status, reason = "WARN", f"{seen} exceeds the budget of {size.budget_tokens:,} ({setting})"
        else:
            status, reason = "PASS", f"{seen} is within the budget of {size.budget_tokens:,} ({setting})"
        ctx.record(
            f"QC-01:{tool}",
            "Response fits the token budget",
            "quality",
            SIZE_GROUP,
            status,
            reason,
            tool=tool,
            details={
                "tokens_estimated": size.tokens_estimated,
                "chars": size.chars,
                "budget_tokens": size.budget_tokens,
                "source": size.source,
            },
        )


def _from(size: ResponseSize) -> str:
    return "generated arguments" if size.source == "generated" else f"case '{size.source}'"


# --- structural checks ---------------------------------------------------------------------------

_CHECKS = (
    ("has_headers", "QC-02", "Text has markdown headers"),
    ("list_formatting", "QC-03", "Text is formatted as a list"),
    ("consistent_items", "QC-04", "List items have the same keys"),
)


def _record_structure(ctx: CheckContext, cases: CasesFile, responses: list[ObservedResponse]) -> None:
    by_source = {response.source: response for response in responses}
    for case in cases.cases:
        for step in case.calls():
            quality = step.quality
            if quality is None:
                continue
            source = case.source_for(step)
            response = by_source.get(source)
            for field, code, name in _CHECKS:
                setting = getattr(quality, field)
                if setting is None:
                    continue
                check_id = f"{code}:{source}"
                if response is None:
                    ctx.record(
                        check_id,
                        name,
                        "quality",
                        SHAPE_GROUP,
                        "SKIP",
                        f"no response of case '{source}' was received (the call was not made or failed "
                        "before a result)",
                        tool=step.tool,
                    )
                    continue
                if response.result.is_error:
                    ctx.record(
                        check_id,
                        name,
                        "quality",
                        SHAPE_GROUP,
                        "SKIP",
                        "the call answered with an error; only successful answers are checked "
                        f"for shape ({describe_value(result_text(response.result))})",
                        tool=step.tool,
                    )
                    continue
                failure = _shape_failure(field, setting, response)
                ctx.record(
                    check_id,
                    name,
                    "quality",
                    SHAPE_GROUP,
                    "FAIL" if failure else "PASS",
                    failure or _passed(field, setting),
                    tool=step.tool,
                )


def _passed(field: str, setting: Any) -> str:
    if field == "consistent_items":
        return f"every item of '{setting}' has the same keys"
    wanted = {"has_headers": "markdown headers", "list_formatting": "list formatting"}[field]
    return f"the text has {wanted}" if setting else f"the text has no {wanted}"


def _shape_failure(field: str, setting: Any, response: ObservedResponse) -> str:
    if field == "consistent_items":
        return consistent_items_failure(result_document(response.result), setting)
    text = result_text(response.result)
    lines = [line for line in text.splitlines() if line.strip()]
    if field == "has_headers":
        headers = [line for line in lines if _HEADER.match(line)]
        if setting and not headers:
            return f"no markdown header (a line starting with '#') in the text ({describe_value(text)})"
        if not setting and headers:
            return f"expected no markdown headers, found {len(headers)}: {describe_value(headers[0])}"
        return ""
    return list_formatting_failure(lines, bool(setting), text)


def list_formatting_failure(lines: list[str], wanted: bool, text: str) -> str:
    """A list: each non-blank line is an item (`-`, `*`, `+`, `1.`), a header, or an indented continuation."""
    if not lines:
        return "the response has no text" if wanted else ""
    stray = [
        line for line in lines if not (_LIST_ITEM.match(line) or _HEADER.match(line) or line[:1].isspace())
    ]
    items = [line for line in lines if _LIST_ITEM.match(line)]
    is_list = bool(items) and not stray
    if wanted and not is_list:
        if not items:
            return f"no list items in the text ({describe_value(text)})"
        return (
            f"{len(stray)} of {len(lines)} non-blank line(s) are not list items, "
            f"first: {describe_value(stray[0])}"
        )
    if not wanted and is_list:
        return (
            f"expected text that is not a list, but all {len(lines)} non-blank line(s) are list items "
            "or headers"
        )
    return ""


def consistent_items_failure(document: Any, pointer: str) -> str:
    """Empty when every item of the list at `pointer` is an object with the first item's keys."""
    try:
        items = resolve_pointer(document, pointer)
    except PointerError as exc:
        return f"'{pointer}': {exc}"
    if not isinstance(items, list):
        return f"'{pointer}' is not a list: {describe_value(items)}"
    if not items:
        return ""
    if not all(isinstance(item, dict) for item in items):
        kinds = sorted({type(item).__name__ for item in items})
        return f"'{pointer}' holds items that are not objects ({', '.join(kinds)})"
    keys = set(items[0])
    differ = []
    for index, item in enumerate(items[1:], start=1):
        missing, extra = sorted(keys - set(item)), sorted(set(item) - keys)
        if missing or extra:
            parts = ([f"missing {', '.join(missing)}"] if missing else []) + (
                [f"extra {', '.join(extra)}"] if extra else []
            )
            differ.append(f"item {index} {'; '.join(parts)}")
    if not differ:
        return ""
    shown = "; ".join(differ[:3]) + (f"; and {len(differ) - 3} more" if len(differ) > 3 else "")
    return f"'{pointer}': {len(differ)} of {len(items)} item(s) differ from item 0's keys: {shown}"


# --- calling tools when no other layer did -------------------------------------------------------


def _why_unsized(ctx: CheckContext, tool: str) -> str:
    """Why a tool has no successful response to size, from what PC-10's synthesis got (if it ran)."""
    reach: ToolReach | None = ctx.coverage.get(tool)
    if reach is None:
        return "no successful response was received (only successful answers are sized)"
    reason = one_line(reach.reason)
    if reach.status == "reached":
        return "its answer was refused by the client (structuredContent, see PC-11): nothing to size"
    if reach.status == "not_reached":
        return f"not reached: {reason}"
    if reach.status == "failed":
        return f"no successful response (PC-10 failed: {reason})"
    if reach.status == "needs_network":
        return f"needs network: {reason}"
    return reach.reason  # not called, no arguments: our own words, kept whole


def _probe(
    ctx: CheckContext, cases: CasesFile | None, arguments_for: CaseArguments | None, unsized: dict[str, str]
) -> list[ObservedResponse]:
    """Call what the quality layer needs itself: cases with quality blocks, then every unseen tool."""
    tools = {tool.name: tool for tool in ctx.tools}
    if cases is not None:
        ctx.opted_in |= cases.opt_in_tools
    planned: list[tuple[str, str, dict[str, Any]]] = []
    if cases is not None:
        for case in cases.cases:
            if case.single and case.quality is not None and case.tool in tools:
                planned.append((case.tool, case.id, case.arguments))
    for name, source, arguments in planned:
        if ctx.server_lost is not None:
            unsized[name] = f"not called: {ctx.server_lost}"
            continue
        allowed, why = ctx.may_call(tools[name])
        if not allowed:
            unsized[name] = f"not called: {why}"
            continue
        ctx.step(f"QC-01:{name}")
        try:
            result = ctx.server.call_tool(name, arguments, ctx.call_timeout_s)
        except ServerHalt as halt:
            unsized[name] = f"no response to size: {halt}"
            ctx.recover()
            continue
        except Exception as exc:  # a JSON-RPC error or an invalid result: nothing to size
            unsized[name] = f"no response to size: {type(exc).__name__}: {exc}"
            continue
        ctx.observe(name, source, result)
    called = {name for name, _, _ in planned}
    reach_tools(ctx, [tool for tool in ctx.tools if tool.name not in called], arguments_for)
    return list(ctx.responses)


def _skip(ctx: CheckContext, tool: str, reason: str) -> None:
    ctx.record(
        f"QC-01:{tool}", "Response fits the token budget", "quality", SIZE_GROUP, "SKIP", reason, tool=tool
    )
