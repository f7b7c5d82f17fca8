"""The functional layer: run every case of a cases file and judge each answer against its `expect`.

One CheckResult per case (`FC:<case id>`). A case's steps run in order and
stop at the first step whose answer misses an expectation (later steps usually
need its result); its `cleanup` calls then run whatever happened, so write
tools can be tested without leaving data behind. A call that hangs or a server
that dies (`ServerHalt`) fails the case with the halt message; the server is
restarted, cleanup runs against the new process, and the suite goes on. If the
restart itself fails (`ctx.server_lost`), the remaining cases are skipped with
that reason: there is nothing left to call.

Every expectation is checked, and every one that fails is listed in the
reason with the value seen, so one run shows the whole picture.

Blind spots: a cleanup step whose `${steps…}` reference points at a step that
never ran is skipped (there is nothing to clean up), which also means a cleanup
mistaken about what the steps create goes unnoticed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import mcp_types
import pydantic
from mcp.shared.exceptions import MCPError

from mcpipechekr.check.cases import Case, CasesFile, Expect, Step, TopKContains
from mcpipechekr.check.context import CheckContext
from mcpipechekr.check.pointer import (
    PointerError,
    describe_value,
    error_document,
    resolve_pointer,
    result_document,
    result_text,
    step_references,
    substitute,
)
from mcpipechekr.errors import ServerHalt

_TEXT_SHOWN = 200


@dataclass
class Answer:
    """What one call got back, in the shape expectations read."""

    document: Any
    """The pointer root: the result's wire JSON, or `{"error": {...}}` for a JSON-RPC error."""
    text: str
    """Text blocks joined, or the JSON-RPC error message."""
    is_error: bool
    error_code: int | None = None
    result: mcp_types.CallToolResult | None = None
    invalid: str | None = None
    """Set when the result failed the MCP SDK's validation: nothing else can be judged."""

    @property
    def outcome(self) -> str:
        return "invalid" if self.invalid else "error" if self.is_error else "ok"


def call(ctx: CheckContext, tool: str, arguments: dict[str, Any], timeout_s: float) -> Answer:
    """Call a tool and turn every answer into an Answer; only a ServerHalt escapes."""
    try:
        result = ctx.server.call_tool(tool, arguments, timeout_s)
    except MCPError as exc:
        return Answer(error_document(exc.code, exc.message, exc.data), exc.message, True, exc.code)
    except pydantic.ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(part) for part in first["loc"])
        invalid = f"the result failed the MCP SDK's validation ({where}: {first['msg']})"
        return Answer({}, "", True, invalid=invalid)
    return Answer(result_document(result), result_text(result), bool(result.is_error), result=result)


# --- expectations --------------------------------------------------------------------------------


def evaluate(expect: Expect, answer: Answer) -> list[str]:
    """Every expectation the answer misses, each with the value seen; empty when all hold."""
    if answer.invalid:
        return [answer.invalid]
    failures: list[str] = []
    if expect.outcome == "ok" and answer.is_error:
        failures.append(f"outcome: expected ok, got an error: {_clip(answer.text)}")
    elif expect.outcome == "error" and not answer.is_error:
        failures.append(f"outcome: expected error, got ok: {_clip(answer.text)}")
    if expect.error_code is not None and answer.error_code != expect.error_code:
        got = (
            f"JSON-RPC error {answer.error_code}"
            if answer.error_code is not None
            else "a tool result with isError: true"
            if answer.is_error
            else "a successful result"
        )
        failures.append(f"error_code: expected {expect.error_code}, got {got}")
    failures.extend(_structured_failures(expect, answer))
    for pointer in expect.required_result_paths:
        try:
            resolve_pointer(answer.document, pointer)
        except PointerError as exc:
            failures.append(f"required_result_paths '{pointer}': {exc}")
    for pointer, wanted in expect.equals_paths.items():
        try:
            seen = resolve_pointer(answer.document, pointer)
        except PointerError as exc:
            failures.append(f"equals_paths '{pointer}': {exc}")
            continue
        if not _same(seen, wanted):
            failures.append(
                f"equals_paths '{pointer}': expected {describe_value(wanted)}, got {describe_value(seen)}"
            )
    for kind, bounds in (("min_items", expect.min_items), ("max_items", expect.max_items)):
        for pointer, bound in bounds.items():
            failures.extend(_count_failure(kind, pointer, bound, answer.document))
    for text in expect.contains:
        if text not in answer.text:
            failures.append(f"contains {describe_value(text)}: not in the text ({_clip(answer.text)})")
    if expect.sorted_by is not None:
        failures.extend(_sorted_failures(expect, answer.document))
    if expect.top_k_contains is not None:
        failures.extend(_top_k_failures(expect.top_k_contains, answer.document))
    return failures


def _structured_failures(expect: Expect, answer: Answer) -> list[str]:
    if not expect.required_result_fields and not expect.equals:
        return []
    structured = answer.document.get("structuredContent") if isinstance(answer.document, dict) else None
    if not isinstance(structured, dict):
        return ["required_result_fields/equals: the result has no structured content (structuredContent)"]
    failures = []
    missing = [name for name in expect.required_result_fields if name not in structured]
    if missing:
        failures.append(
            f"required_result_fields: missing {', '.join(repr(name) for name in missing)} "
            f"(has: {', '.join(structured) or 'nothing'})"
        )
    for key, wanted in expect.equals.items():
        if key not in structured:
            failures.append(f"equals '{key}': missing from the structured result")
        elif not _same(structured[key], wanted):
            failures.append(
                f"equals '{key}': expected {describe_value(wanted)}, got {describe_value(structured[key])}"
            )
    return failures


def _count_failure(kind: str, pointer: str, bound: int, document: Any) -> list[str]:
    try:
        value = resolve_pointer(document, pointer)
    except PointerError as exc:
        return [f"{kind} '{pointer}': {exc}"]
    if not isinstance(value, list):
        return [f"{kind} '{pointer}': expected a list, got {describe_value(value)}"]
    if kind == "min_items" and len(value) < bound:
        return [f"min_items '{pointer}': expected at least {bound} item(s), got {len(value)}"]
    if kind == "max_items" and len(value) > bound:
        return [f"max_items '{pointer}': expected at most {bound} item(s), got {len(value)}"]
    return []


def _items(pointer: str, key: str, document: Any, label: str) -> tuple[list[Any], list[str]]:
    """The values at `key` inside each item of the list at `pointer`, or the failures that prevent it."""
    try:
        items = resolve_pointer(document, pointer)
    except PointerError as exc:
        return [], [f"{label}: {exc}"]
    if not isinstance(items, list):
        return [], [f"{label}: expected a list at '{pointer}', got {describe_value(items)}"]
    values, failures = [], []
    for index, item in enumerate(items):
        try:
            values.append(resolve_pointer(item, key))
        except PointerError as exc:
            failures.append(f"{label}: item {index}: {exc}")
    return values, failures


def _sorted_failures(expect: Expect, document: Any) -> list[str]:
    spec = expect.sorted_by
    assert spec is not None
    label = f"sorted_by '{spec.path}' by '{spec.key or '(item)'}' {spec.order}"
    values, failures = _items(spec.path, spec.key, document, label)
    if failures:
        return failures
    broken = []
    for index in range(len(values) - 1):
        first, second = values[index], values[index + 1]
        try:
            wrong = first > second if spec.order == "asc" else first < second
        except TypeError:
            return [
                f"{label}: items {index} and {index + 1} cannot be compared "
                f"({describe_value(first)} and {describe_value(second)})"
            ]
        if wrong:
            broken.append(index)
    if not broken:
        return []
    index = broken[0]
    return [
        f"{label}: item {index} ({describe_value(values[index])}) comes before item {index + 1} "
        f"({describe_value(values[index + 1])}); {len(broken)} of {len(values) - 1} neighbouring pair(s) "
        "out of order"
    ]


def _top_k_failures(spec: TopKContains, document: Any) -> list[str]:
    label = f"top_k_contains '{spec.path}' k={spec.k} by '{spec.key or '(item)'}'"
    try:
        items = resolve_pointer(document, spec.path)
    except PointerError as exc:
        return [f"{label}: {exc}"]
    if not isinstance(items, list):
        return [f"{label}: expected a list, got {describe_value(items)}"]
    top = []
    for item in items[: spec.k]:
        try:
            top.append(resolve_pointer(item, spec.key))
        except PointerError:
            top.append(None)
    missing = [
        wanted for wanted in spec.values if not any(_matches(seen, wanted, spec.match) for seen in top)
    ]
    if not missing:
        return []
    shown = ", ".join(describe_value(value, 60) for value in top) or "no items"
    return [
        f"{label}: missing {', '.join(describe_value(value) for value in missing)} (top {len(top)}: {shown})"
    ]


def _matches(seen: Any, wanted: Any, how: str) -> bool:
    if how == "contains":
        return isinstance(seen, str) and str(wanted).lower() in seen.lower()
    return _same(seen, wanted)


def _same(seen: Any, wanted: Any) -> bool:
    """Equality as JSON means it: 1 equals 1.0, but true is not 1."""
    if isinstance(seen, bool) != isinstance(wanted, bool):
        return False
    return seen == wanted


def _clip(text: str) -> str:
    return describe_value(text, _TEXT_SHOWN)


# --- running cases -------------------------------------------------------------------------------


@dataclass
class _CaseRun:
    failures: list[str]
    steps: list[dict[str, Any]]
    restart_failed: str | None = None


def run_functional(ctx: CheckContext, cases: CasesFile) -> None:
    """Run every case; record one `FC:<case id>` result each and observe every tool result for sizing."""
    ctx.opted_in |= cases.opt_in_tools
    tools = {tool.name: tool for tool in ctx.tools}
    for case in cases.cases:
        check_id, name = f"FC:{case.id}", _name(case)
        tool = case.tool if case.single else None
        if ctx.server_lost is not None:
            ctx.record(
                check_id, name, "functional", case.group, "SKIP", f"not run: {ctx.server_lost}", tool=tool
            )
            continue
        blocked = _blocked(ctx, case, tools)
        if blocked is not None:
            status, reason = blocked
            ctx.record(check_id, name, "functional", case.group, status, reason, tool=tool)
            continue
        ctx.step(check_id)
        with ctx.timed() as timer:
            run = _run_case(ctx, case)
        details = ctx.config.redactor.redact({"steps": run.steps, "failures": run.failures})
        ctx.record(
            check_id,
            name,
            "functional",
            case.group,
            "FAIL" if run.failures else "PASS",
            "; ".join(run.failures),
            tool=tool,
            duration_ms=timer["ms"],
            details=details,
        )


def _name(case: Case) -> str:
    if case.description.strip():
        return case.description.strip().splitlines()[0]
    return f"case {case.id} ({' -> '.join(case.tools())})"


def _blocked(ctx: CheckContext, case: Case, tools: dict[str, mcp_types.Tool]) -> tuple[str, str] | None:
    """SKIP when a tool may not be called, FAIL when the server does not list it; None to run the case."""
    for name in case.tools():
        tool = tools.get(name)
        if tool is None:
            if tools:
                return "FAIL", f"the server lists no tool '{name}' (it lists: {', '.join(tools)})"
            continue
        allowed, why = ctx.may_call(tool)
        if not allowed:
            return "SKIP", f"tool '{name}' is not called: {why}"
    return None


def _timeout(ctx: CheckContext, case: Case, step: Step) -> float:
    return step.timeout_s or case.timeout_s or ctx.call_timeout_s


def _run_case(ctx: CheckContext, case: Case) -> _CaseRun:
    run = _CaseRun(failures=[], steps=[])
    documents: dict[str, Any] = {}
    for step in case.calls():
        prefix = "" if case.single else f"step '{step.id}': "
        try:
            failures = _run_step(ctx, case, step, documents, run)
        except ServerHalt as halt:
            run.failures.append(f"{prefix}{halt}")
            _restart(ctx, run)
            break
        if failures:
            run.failures.extend(prefix + failure for failure in failures)
            break
    for step in case.cleanup:
        prefix = f"cleanup '{step.id}': "
        if run.restart_failed is not None:
            run.failures.append(f"{prefix}not run: the server could not be restarted")
            continue
        unmet = [body for _, body in step_references(step.arguments) if _names_missing(body, documents)]
        if unmet:
            run.steps.append(
                {
                    "id": step.id,
                    "tool": step.tool,
                    "cleanup": True,
                    "outcome": "skipped",
                    "why": "it references a step that did not run",
                }
            )
            continue
        try:
            failures = _run_step(ctx, case, step, documents, run, cleanup=True)
        except ServerHalt as halt:
            run.failures.append(f"{prefix}{halt}")
            _restart(ctx, run)
            continue
        run.failures.extend(prefix + failure for failure in failures)
    return run


def _names_missing(body: str, documents: dict[str, Any]) -> bool:
    head = body.strip().split(".")
    return len(head) >= 2 and head[0] == "steps" and head[1] not in documents


def _run_step(
    ctx: CheckContext,
    case: Case,
    step: Step,
    documents: dict[str, Any],
    run: _CaseRun,
    *,
    cleanup: bool = False,
) -> list[str]:
    """Make one call and judge it; a ServerHalt propagates after the step is noted."""
    entry: dict[str, Any] = {"id": step.id, "tool": step.tool}
    if cleanup:
        entry["cleanup"] = True
    run.steps.append(entry)
    try:
        arguments = substitute(step.arguments, documents)
        expect = step.expect
        if step_references(expect.model_dump(mode="json")):
            expect = Expect.model_validate(substitute(expect.model_dump(mode="json"), documents))
    except (PointerError, pydantic.ValidationError) as exc:
        entry["outcome"] = "not called"
        return [f"cannot resolve a reference: {exc}"]
    entry["arguments"] = arguments
    started = time.perf_counter()
    try:
        answer = call(ctx, step.tool, arguments, _timeout(ctx, case, step))
    except ServerHalt:
        entry["outcome"] = "server halted"
        raise
    finally:
        entry["ms"] = round((time.perf_counter() - started) * 1000, 1)
    entry["outcome"] = answer.outcome
    documents[step.id] = answer.document
    if answer.result is not None:
        ctx.observe(step.tool, case.source_for(step), answer.result)
    failures = evaluate(expect, answer)
    if failures:
        entry["failures"] = failures
    return failures


def _restart(ctx: CheckContext, run: _CaseRun) -> None:
    """Restart after a halt (ctx.recover); when that fails, the rest of the suite is skipped."""
    if not ctx.recover():
        run.restart_failed = ctx.server_lost or "the server could not be restarted"
        run.failures.append(run.restart_failed)
