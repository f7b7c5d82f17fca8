"""Argument synthesis: a few argument sets per read-only tool, tried until the tool answers.

Why: one call with `"a"` for every string proves little on a real server: a
git server rightly refuses `"a"` as a repository, a filesystem server refuses
any path outside the directories it was given, a `get_item` refuses an id it
never issued. That refusal is no defect, and the success behind it is where
crashes and malformed results hide. In the spirit of property-based API testers
(Schemathesis for OpenAPI), each tool gets candidate argument sets, best first:

1. the arguments of a case of the cases file for this tool (known good);
2. values for each parameter, ranked: values other tools returned under a
   matching key (`list_items` → `{"id": "it-7"}` → `get_item(item_id="it-7")`),
   the schema's `const`, `enum` (each value), `default`, `examples`, a SELECT
   over a listed table for a SQL parameter, what the parameter's description
   and the tool's say of it (examples, allowed values, date templates,
   patterns: `check/hints.py`), a sample for its `format`, a string generated
   from its `pattern`, a day for a date-named parameter, its bounds, then the
   server's own paths, resources and time zones (`check/sources.py`) for
   parameters whose name or description asks for one, then any other value seen, then the
   minimal value (`check/argsgen.py`); an existing path comes last for any free
   string;
3. sets built from those: the best value of each required parameter, the same
   with the optional parameters that have a good value, then one parameter at
   a time moved to its next value.

A refusal is read too (`hints.refusal_values`): the values it says are
allowed, a match for the pattern it quotes, a date in the format it names, a
SELECT for a SQL error, a listed name for "no such X"; those sets go next,
ahead of the ranked ones (at most HINTED_PER_REFUSAL per refusal), so a tool
whose only documentation is its error is reached in two calls.

Tools are called in an order that lets results feed later tools: tools without
required parameters and those the schema alone satisfies first, then the
others; a tool refused every time is tried once more when other tools have
returned new values since, starting with its last refusal read again. Each
tool gets at most `check.synthesis_max_calls` calls (the refusals' sets
included) within `check.synthesis_time_s` (a call under way is never cut
short but by `check.call_timeout_s`), and stops at its first success, or after
three refusals with one message that quotes none of the arguments.

The verdict of each call (`judge_call`): a result without isError is a success;
an isError with an ordinary message or a JSON-RPC error that names the client's
mistake is a refusal (try the next set); a crash, a hang, a malformed result, a
JSON-RPC internal error, or an isError that looks like an unhandled exception
ends the tool's attempts as a failure; on a tool annotated `openWorldHint: true`,
an error about an unreachable host ends them as "needs network".

Safety is unchanged: only tools `CheckContext.may_call` allows are called.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import mcp_types
import pydantic
from mcp.shared.exceptions import MCPError

from mcpipechekr.check.answers import (
    NEEDS_NETWORK,
    SENSIBLE_ERROR_CODES,
    UNHANDLED,
    content_problem,
    halt_reason,
    is_open_world,
    one_line,
    text_of,
    unreached_in_success,
    validation_reason,
)
from mcpipechekr.check.argsgen import minimal_arguments
from mcpipechekr.check.candidates import _mentions, candidates, hinted_candidates
from mcpipechekr.check.cases import CasesFile
from mcpipechekr.check.context import CheckContext
from mcpipechekr.check.honesty import watching
from mcpipechekr.check.param_values import _kind
from mcpipechekr.check.reach import MINIMAL, Attempt, Candidate, Outcome, ToolReach
from mcpipechekr.check.sources import ValuePool, words
from mcpipechekr.errors import ServerHalt
from mcpipechekr.server.connection import StructuredContentMismatch


def judge_call(ctx: CheckContext, tool: mcp_types.Tool, candidate: Candidate) -> Attempt:
    """Call `tool` with one candidate and sort the answer: reached, refused, failed or needs network."""
    ctx.step(f"PC-10 calling {tool.name}")
    open_world = is_open_world(tool)
    with ctx.timed() as took:
        try:
            result: mcp_types.CallToolResult | None = ctx.server.call_tool(
                tool.name, candidate.arguments, ctx.call_timeout_s
            )
            error: Exception | None = None
        except (ServerHalt, pydantic.ValidationError, MCPError, StructuredContentMismatch) as exc:
            result, error = None, exc
    ms = took["ms"]

    def attempt(outcome: Outcome, message: str, **extra: Any) -> Attempt:
        return Attempt(candidate, outcome, message, ms, **extra)

    if isinstance(error, StructuredContentMismatch):
        return attempt("reached", "answered", mismatch=one_line(str(error)))
    if isinstance(error, ServerHalt):
        return attempt("failed", halt_reason(error), halted=True)
    if isinstance(error, pydantic.ValidationError):
        return attempt("failed", f"malformed answer (tools/call {tool.name}): {validation_reason(error)}")
    if isinstance(error, MCPError):
        code, message = error.error.code, error.error.message
        text = f"JSON-RPC error {code} ({message})"
        if open_world and NEEDS_NETWORK.search(message or ""):
            return attempt("needs_network", text)
        return attempt("refused" if code in SENSIBLE_ERROR_CODES else "failed", text)
    assert result is not None
    text = text_of(result)
    if result.is_error:
        if open_world and NEEDS_NETWORK.search(text):
            return attempt("needs_network", one_line(text), result=result)
        if UNHANDLED.search(text):
            return attempt("failed", f"looks like an unhandled exception: {one_line(text)}", result=result)
        return attempt("refused", one_line(text) or "isError with no text", result=result)
    if problem := content_problem(result):
        return attempt("failed", problem, result=result)
    if open_world and unreached_in_success(text):
        return attempt("needs_network", f"answered without isError: {one_line(text)}", result=result)
    return attempt("reached", "answered", result=result)


CaseArguments = Callable[[mcp_types.Tool], tuple[dict[str, Any], str] | None]
"""Arguments a cases file gives for a tool and the case id, or None."""


def case_arguments(cases: CasesFile | None) -> CaseArguments | None:
    """The known-good arguments of a cases file: the first plain success case of each tool."""
    if cases is None:
        return None

    def arguments_for(tool: mcp_types.Tool) -> tuple[dict[str, Any], str] | None:
        case = cases.case_for_tool(tool.name)
        return (dict(case.arguments), case.id) if case is not None else None

    return arguments_for


def reach_tools(
    ctx: CheckContext, tools: list[mcp_types.Tool], arguments_for: CaseArguments | None = None
) -> dict[str, ToolReach]:
    """Try every tool a probe may call until it answers; the outcome per tool name (also in ctx.coverage).

    Tools already in `ctx.coverage` are not called again.
    """
    settings = ctx.config.check
    synthesize = settings.synthesize
    limit = settings.synthesis_max_calls if synthesize else 1
    pool = ctx.value_pool() if synthesize else ValuePool()
    if synthesize and not pool.resources_listed:
        _take_resources(ctx, pool)
    reaches: dict[str, ToolReach] = {}
    tried: dict[str, set[bytes]] = {}
    tried_at: dict[str, int] = {}
    spent: dict[str, float] = {}
    order: list[mcp_types.Tool] = []
    for tool in tools:
        if tool.name in ctx.coverage:
            continue
        allowed, why_not = ctx.may_call(tool)
        if not allowed:
            reaches[tool.name] = ToolReach(tool, "not_called", f"not called: {why_not}")
        else:
            order.append(tool)
    order.sort(key=lambda tool: _needs_feeding(tool))

    def case_candidate(tool: mcp_types.Tool) -> Candidate | None:
        given = arguments_for(tool) if arguments_for is not None else None
        if given is None:
            return None
        arguments, case_id = given
        return Candidate(dict(arguments), dict.fromkeys(arguments, f"case {case_id}"), origin=case_id)

    def attempt_tool(tool: mcp_types.Tool, reach: ToolReach) -> None:
        seen = tried.setdefault(tool.name, set())
        tried_at[tool.name] = pool.version
        if synthesize:
            options = candidates(tool, pool, limit=limit + len(seen), case=case_candidate(tool))
        else:
            case = case_candidate(tool)
            minimal = minimal_arguments(tool.input_schema)
            fallback = Candidate(minimal, dict.fromkeys(minimal, MINIMAL)) if minimal is not None else None
            options = [option for option in (case or fallback,) if option is not None]
        options = [option for option in options if option.key() not in seen]
        last = reach.decisive
        if synthesize and last is not None and last.outcome == "refused":
            options = hinted_candidates(tool, last, pool) + options  # read again with what came since
        if not options and not reach.attempts:
            reach.status = "no_arguments"
            reach.reason = (
                "cannot generate arguments from its inputSchema; give a case for it in the cases file"
            )
            return
        started = time.monotonic() - spent.get(tool.name, 0.0)
        while options and len(reach.attempts) < limit:
            option = options.pop(0)
            if option.key() in seen:
                continue
            if ctx.server_lost is not None:
                reach.status, reach.reason = "not_called", ctx.server_lost
                return
            spent[tool.name] = time.monotonic() - started
            if reach.attempts and spent[tool.name] > settings.synthesis_time_s:
                break
            seen.add(option.key())
            attempt = judge_call(ctx, tool, option)
            spent[tool.name] = time.monotonic() - started
            reach.attempts.append(attempt)
            if attempt.halted:
                ctx.recover()
            if attempt.outcome == "reached":
                reach.status, reach.reason = "reached", ""
                if attempt.result is not None:
                    pool.add_result(tool.name, attempt.result)
                    ctx.observe(tool.name, option.origin, attempt.result)
                return
            if attempt.outcome in ("failed", "needs_network"):
                reach.status, reach.reason = attempt.outcome, attempt.message
                return
            reach.status, reach.reason = "not_reached", attempt.message
            if _refuses_regardless(reach.attempts):
                return
            if synthesize:  # what the refusal says is allowed goes next
                options[:0] = hinted_candidates(tool, attempt, pool)

    for tool in order:
        reach = ToolReach(tool, "not_reached")
        reaches[tool.name] = reach
        with watching(ctx, tool, reach):  # PC-12/PC-13: what the calls change, a second identical call
            attempt_tool(tool, reach)
    if synthesize:
        for tool in order:  # a second chance for tools refused before other tools fed the pool
            reach = reaches[tool.name]
            if (
                reach.status == "not_reached"
                and pool.version > tried_at.get(tool.name, 0)
                and len(reach.attempts) < limit
                and not _refuses_regardless(reach.attempts)
            ):
                with watching(ctx, tool, reach):
                    attempt_tool(tool, reach)
    ordered = {tool.name: reaches[tool.name] for tool in tools if tool.name in reaches}
    ctx.coverage.update(ordered)
    return ordered


def _take_resources(ctx: CheckContext, pool: ValuePool) -> None:
    """The first page of resources/list, when PC-07 did not list them (the quality layer alone).

    Best effort: a server that fails here is judged by PC-07 when the protocol
    layer runs, so a failure only costs the resource candidates.
    """
    pool.resources_listed = True
    try:
        if ctx.server_lost is not None or ctx.server.capabilities.resources is None:
            return
        page = ctx.server.request(
            "during resources/list", lambda client: client.list_resources(), ctx.call_timeout_s
        )
    except ServerHalt:
        ctx.recover()
        return
    except Exception:  # a JSON-RPC error or a malformed list: no resource candidates
        return
    pool.add_resources(list(page.resources))


SAME_REFUSALS = 3
"""Refusals in a row, with one message that names none of the arguments, after which a tool is left alone."""


def _refuses_regardless(attempts: list[Attempt]) -> bool:
    """True when the last refusals say the same thing whatever the arguments ("the archive is offline").

    A message that quotes an argument ("unknown id 'a'") depends on it, and the
    next value may be accepted; one that does not, repeated, will not change.
    """
    last = attempts[-SAME_REFUSALS:]
    if len(last) < SAME_REFUSALS or any(attempt.outcome != "refused" for attempt in last):
        return False
    if len({attempt.message for attempt in last}) != 1:
        return False
    message = last[0].message
    return not any(
        _mentions(message, str(value)) for attempt in last for value in attempt.candidate.arguments.values()
    )


def _needs_feeding(tool: mcp_types.Tool) -> int:
    """How many required parameters the schema alone cannot fill well (0: call it early)."""
    schema = tool.input_schema if isinstance(tool.input_schema, dict) else {}
    properties = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    count = 0
    for name in schema.get("required") or []:
        prop = properties.get(name) if isinstance(name, str) else None
        if not isinstance(prop, dict):
            count += 1
            continue
        intrinsic = any(key in prop for key in ("const", "enum", "default", "examples", "format", "pattern"))
        names_a_thing = _kind(words(name)) in ("id", "key", "revision", "uri", "path", "name")
        if not intrinsic and (prop.get("type") in ("string", None) or names_a_thing):
            count += 1
    return count
