"""Layer 1, the server features beside tools: prompts, resources, completions, and content blocks.

PC-07 and PC-08 only list resources and prompts; a server could answer
prompts/get of a prompt that does not exist, return resource contents no
client can read, or declare completions and answer without a `completion`,
and get no finding. These checks (PC-50…PC-59, docs/check.md "Prompts,
resources, completions and content") use each declared feature the way a
client does and judge the answers against the specification: a MUST broken
is a FAIL, a SHOULD a WARN, and a feature the server does not declare a SKIP.

Why the answers are read raw: the SDK's result models are lax (pydantic
coerces `"5"` into a `total` of 5, `"false"` into an `isError` of False, and
lets 150 completion values through), so each request goes through
`session.send_request` with a plain-dict result type: the SDK still rejects
what its models cannot parse (a FAIL, "malformed answer"), and these checks
judge the JSON the server actually sent.

Bounds, so the checks stay fast on a server with thousands of resources: at
most `MAX_PROMPTS` prompts are fetched, `MAX_RESOURCES` resources read (and
no more once `READ_BUDGET_S` seconds or `READ_BUDGET_CHARS` characters were
spent), `MAX_TEMPLATES` templates tried, `MAX_COMPLETIONS` arguments
completed, and `MAX_RECALLS` tools called again. Nothing here calls a tool
that may change state: PC-58 calls again only tools PC-10 reached that are
annotated (or trusted) read-only, with PC-10's arguments.

Limits: a prompt argument gets the first value completion offers, else the
plain string `PLAIN_VALUE`, so a prompt that rightly refuses a guess is not
reached (and not judged); a template is filled from completion or from a
listed resource its pattern matches, else it is not read.
"""

from __future__ import annotations

import base64
import binascii
import re
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, unquote

import mcp_types
import pydantic
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcpipechekr.artifacts.check_report import CheckStatus
from mcpipechekr.check.answers import halt_reason, one_line, validation_reason
from mcpipechekr.check.context import CheckContext
from mcpipechekr.errors import ServerHalt
from mcpipechekr.server.annotations import write_risk

COMPLETIONS, PROMPTS, RESOURCES, CONTENT = "Completions", "Prompts", "Resources", "Content"

FEATURE_CHECKS: dict[str, tuple[str, str]] = {
    "PC-50": ("completion of a prompt argument", COMPLETIONS),
    "PC-51": ("completion of a template variable", COMPLETIONS),
    "PC-52": ("prompts/get of every prompt", PROMPTS),
    "PC-53": ("prompt without a required argument", PROMPTS),
    "PC-54": ("unknown prompt", PROMPTS),
    "PC-55": ("resources/read of listed resources", RESOURCES),
    "PC-56": ("resource template read", RESOURCES),
    "PC-57": ("resource subscription", RESOURCES),
    "PC-58": ("isError is a boolean", CONTENT),
    "PC-59": ("content blocks", CONTENT),
}
"""These checks' ids, names and report groups, in run order; check/protocol.py merges them into CHECKS."""

MAX_PROMPTS = 20
MAX_RESOURCES = 20
MAX_TEMPLATES = 3
MAX_COMPLETIONS = 10
MAX_RECALLS = 5
READ_BUDGET_S = 10.0
READ_BUDGET_CHARS = 8 * 1024 * 1024
MAX_COMPLETION_VALUES = 100
"""The specification's CompleteResult: `values` "Must not exceed 100 items"."""
PLAIN_VALUE = "example"
"""A prompt argument's value when completion offers none."""
UNKNOWN_PROMPT = "mcpipechekr_no_such_prompt"
MAX_LISTED_PROBLEMS = 3
"""A reason names this many problems; `details` holds them all."""

_RAW = pydantic.TypeAdapter(dict[str, Any])
_EXPRESSION = re.compile(r"\{([+#./;?&]?)([^}]*)\}")
_REQUIRED_OPERATORS = ("", "+", ".", "/")
"""URI-template expressions whose variables make the path; `?`, `&`, `#` and `;` ones may stay empty."""


@dataclass
class _Seen:
    """What the checks learn from the server and hand on to later checks."""

    prompts: list[mcp_types.Prompt] | None = None
    """None: prompts not declared or not listed (`prompts_why`)."""
    prompts_why: str = ""
    resources: list[mcp_types.Resource] | None = None
    templates: list[mcp_types.ResourceTemplate] = field(default_factory=list)
    resources_why: str = ""
    completions: dict[tuple[str, str, str], list[str]] = field(default_factory=dict)
    """(ref type, prompt name or uri template, argument) → the values completion offered."""
    completed: int = 0
    blocks: list[tuple[str, Any]] = field(default_factory=list)
    """(where, raw content block) of every result seen, for PC-59."""
    read_uris: list[str] = field(default_factory=list)


Answer = tuple[dict[str, Any] | None, Exception | None, float]


def run_feature_checks(ctx: CheckContext) -> None:
    """Run PC-50…PC-59 against `ctx.server`, appending their verdicts to `ctx.results`."""
    seen = _Seen()
    if ctx.server_lost is None:
        _list_features(ctx, seen)
    _check_prompt_completion(ctx, seen)
    _check_template_completion(ctx, seen)
    _check_prompts_get(ctx, seen)
    _check_missing_prompt_argument(ctx, seen)
    _check_unknown_prompt(ctx, seen)
    _check_resource_reads(ctx, seen)
    _check_template_read(ctx, seen)
    _check_subscription(ctx, seen)
    _check_is_error(ctx, seen)
    _check_content_blocks(ctx, seen)


# --- plumbing -------------------------------------------------------------------------------------


def _record(ctx: CheckContext, check_id: str, status: CheckStatus, reason: str, **extra: Any) -> None:
    name, group = FEATURE_CHECKS[check_id]
    ctx.record(check_id, name, "protocol", group, status, reason, **extra)


def _skipped(ctx: CheckContext, check_id: str, why: str | None = None) -> bool:
    """Record a SKIP when the server is gone for good or `why` is given; True if so."""
    why = ctx.server_lost or why
    if why:
        _record(ctx, check_id, "SKIP", why)
        return True
    return False


def _raw(ctx: CheckContext, during: str, request: Any) -> Answer:
    """Send one request and keep the JSON the server answered: (result, None, ms) or (None, error, ms)."""

    async def send(client: Client) -> dict[str, Any]:
        return await client.session.send_request(request, _RAW)

    with ctx.timed() as took:
        try:
            answer: dict[str, Any] | None = ctx.server.request(during, send, ctx.call_timeout_s)
            error: Exception | None = None
        except (ServerHalt, pydantic.ValidationError, MCPError) as exc:
            answer, error = None, exc
    return answer, error, took["ms"]


def _broken(ctx: CheckContext, error: Exception, what: str) -> str | None:
    """The FAIL reason for a halt (the server is then restarted) or a malformed answer; else None."""
    if isinstance(error, ServerHalt):
        reason = halt_reason(error)
        ctx.recover()
        return f"{what}: {reason}"
    if isinstance(error, pydantic.ValidationError):
        return f"{what}: malformed answer: {validation_reason(error)}"
    return None


def _rpc_error(error: Exception) -> str:
    if isinstance(error, MCPError):
        return f"JSON-RPC error {error.error.code} ({one_line(error.error.message)})"
    return one_line(str(error))


def _listed(problems: list[str]) -> str:
    shown = "; ".join(problems[:MAX_LISTED_PROBLEMS])
    more = len(problems) - MAX_LISTED_PROBLEMS
    return shown + (f"; and {more} more (see details)" if more > 0 else "")


async def _all_pages(fetch: Callable[[str | None], Awaitable[Any]], field_name: str) -> list[Any]:
    items: list[Any] = []
    cursor: str | None = None
    for _ in range(100):  # a paginator that never ends cannot hang the check
        page = await fetch(cursor)
        items.extend(getattr(page, field_name))
        cursor = page.next_cursor
        if not cursor:
            break
    return items


def _list_features(ctx: CheckContext, seen: _Seen) -> None:
    """Prompts, resources and templates, from the client's cache when PC-07/PC-08 just listed them."""
    caps = ctx.server.capabilities
    if caps.prompts is None:
        seen.prompts_why = "the server does not declare prompts"
    else:
        try:
            seen.prompts = ctx.server.request(
                "during prompts/list",
                lambda c: _all_pages(lambda cur: c.list_prompts(cursor=cur), "prompts"),
                ctx.call_timeout_s,
            )
        except (ServerHalt, pydantic.ValidationError, MCPError) as exc:
            seen.prompts_why = "prompts/list failed (PC-08)"
            if isinstance(exc, ServerHalt):
                ctx.recover()
    if caps.resources is None:
        seen.resources_why = "the server does not declare resources"
        return
    try:
        seen.resources = ctx.server.request(
            "during resources/list",
            lambda c: _all_pages(lambda cur: c.list_resources(cursor=cur), "resources"),
            ctx.call_timeout_s,
        )
        seen.templates = ctx.server.request(
            "during resources/templates/list",
            lambda c: _all_pages(lambda cur: c.list_resource_templates(cursor=cur), "resource_templates"),
            ctx.call_timeout_s,
        )
    except (ServerHalt, pydantic.ValidationError, MCPError) as exc:
        if seen.resources is None:
            seen.resources_why = "resources/list failed (PC-07)"
        if isinstance(exc, ServerHalt):
            ctx.recover()


# --- Completions ----------------------------------------------------------------------------------


def completion_problems(result: dict[str, Any]) -> list[str]:
    """What in a CompleteResult breaks the schema: `completion.values` strings (at most 100), typed hints.

    A `total` or `hasMore` of null counts as absent: servers that serialize
    their unset fields are common and no client is misled by it.
    """
    completion = result.get("completion")
    if not isinstance(completion, dict):
        return ["no `completion` object in the result"]
    problems = []
    values = completion.get("values")
    if not isinstance(values, list):
        problems.append(f"completion.values is not a list (got {type(values).__name__})")
    else:
        bad = [value for value in values if not isinstance(value, str)]
        if bad:
            problems.append(f"completion.values holds {len(bad)} non-string value(s), e.g. {bad[0]!r}")
        if len(values) > MAX_COMPLETION_VALUES:
            problems.append(f"completion.values has {len(values)} items; at most {MAX_COMPLETION_VALUES}")
    total, has_more = completion.get("total"), completion.get("hasMore")
    if total is not None and (isinstance(total, bool) or not isinstance(total, int)):
        problems.append(f"completion.total is not an integer (got {total!r})")
    if has_more is not None and not isinstance(has_more, bool):
        problems.append(f"completion.hasMore is not a boolean (got {has_more!r})")
    return problems


def _complete(ctx: CheckContext, seen: _Seen, ref: Any, argument: str) -> Answer:
    """completion/complete for one argument with an empty value; the values it offers are kept in `seen`."""
    key = (ref.type, getattr(ref, "name", None) or getattr(ref, "uri", ""), argument)
    request = mcp_types.CompleteRequest(
        params=mcp_types.CompleteRequestParams(
            ref=ref, argument=mcp_types.CompletionArgument(name=argument, value="")
        )
    )
    ctx.step(f"completion/complete {key[1]} {argument}")
    seen.completed += 1
    answer = _raw(ctx, "during completion/complete", request)
    result = answer[0]
    if result is not None and not completion_problems(result):
        seen.completions[key] = list(result["completion"]["values"])
    else:
        seen.completions[key] = []
    return answer


def _completion_value(ctx: CheckContext, seen: _Seen, ref: Any, argument: str) -> str | None:
    """The first value completion offers for an argument (asked once), or None."""
    if ctx.server.capabilities.completions is None or ctx.server_lost:
        return None
    key = (ref.type, getattr(ref, "name", None) or getattr(ref, "uri", ""), argument)
    if key not in seen.completions:
        if seen.completed >= MAX_COMPLETIONS:
            return None
        _complete(ctx, seen, ref, argument)
    values = seen.completions.get(key) or []
    return values[0] if values else None


def _judge_completion(ctx: CheckContext, check_id: str, what: str, answer: Answer) -> None:
    result, error, ms = answer
    if error is not None:
        broken = _broken(ctx, error, f"completion/complete for {what}")
        if broken:
            _record(ctx, check_id, "FAIL", broken, duration_ms=ms)
        elif isinstance(error, MCPError) and error.error.code == mcp_types.METHOD_NOT_FOUND:
            _record(
                ctx,
                check_id,
                "FAIL",
                f"declares completions, but completion/complete: {_rpc_error(error)}",
                duration_ms=ms,
            )
        else:
            _record(
                ctx, check_id, "WARN", f"completion/complete for {what}: {_rpc_error(error)}", duration_ms=ms
            )
        return
    assert result is not None
    problems = completion_problems(result)
    if problems:
        _record(
            ctx,
            check_id,
            "FAIL",
            f"completion/complete for {what}: {_listed(problems)}",
            duration_ms=ms,
            details={"problems": problems},
        )
        return
    values = result["completion"]["values"]
    shown = ", ".join(repr(value) for value in values[:3]) + (", …" if len(values) > 3 else "")
    _record(
        ctx,
        check_id,
        "PASS",
        f"{len(values)} value(s) for {what}" + (f": {shown}" if values else ""),
        duration_ms=ms,
    )


def _completions_skip(ctx: CheckContext) -> str | None:
    if ctx.server.capabilities.completions is None:
        return "the server does not declare completions"
    return None


def _check_prompt_completion(ctx: CheckContext, seen: _Seen) -> None:
    """PC-50: completion/complete for a prompt's argument answers a valid `completion`."""
    if _skipped(ctx, "PC-50", ctx.server_lost or _completions_skip(ctx) or _prompts_skip(seen)):
        return
    target = next(((p.name, a.name) for p in seen.prompts or [] for a in p.arguments or []), None)
    if target is None:
        _record(ctx, "PC-50", "SKIP", "no prompt has an argument to complete")
        return
    ref = mcp_types.PromptReference(type="ref/prompt", name=target[0])
    _judge_completion(
        ctx, "PC-50", f"prompt {target[0]!r}, argument {target[1]!r}", _complete(ctx, seen, ref, target[1])
    )


def template_variables(template: str, *, required_only: bool = False) -> list[str]:
    """The variable names of an RFC 6570 URI template, in order (`{+path}`, `{?q,lang}`, `{/seg*}`)."""
    names: list[str] = []
    for operator, varlist in _EXPRESSION.findall(template):
        if required_only and operator not in _REQUIRED_OPERATORS:
            continue
        for spec in varlist.split(","):
            name = spec.strip().rstrip("*").split(":")[0]
            if name and name not in names:
                names.append(name)
    return names


def _check_template_completion(ctx: CheckContext, seen: _Seen) -> None:
    """PC-51: completion/complete for a resource template's variable answers a valid `completion`."""
    if _skipped(ctx, "PC-51", ctx.server_lost or _completions_skip(ctx) or _resources_skip(seen)):
        return
    target = next(
        ((t.uri_template, v) for t in seen.templates for v in template_variables(t.uri_template)), None
    )
    if target is None:
        _record(ctx, "PC-51", "SKIP", "no resource template has a variable to complete")
        return
    ref = mcp_types.ResourceTemplateReference(type="ref/resource", uri=target[0])
    _judge_completion(
        ctx, "PC-51", f"template {target[0]!r}, variable {target[1]!r}", _complete(ctx, seen, ref, target[1])
    )


# --- Prompts --------------------------------------------------------------------------------------


def _prompts_skip(seen: _Seen) -> str | None:
    return seen.prompts_why if seen.prompts is None else None


def _prompt_arguments(ctx: CheckContext, seen: _Seen, prompt: mcp_types.Prompt, leave_out: str = "") -> dict:
    """A value for every required argument but `leave_out`: completion's first offer, else PLAIN_VALUE."""
    ref = mcp_types.PromptReference(type="ref/prompt", name=prompt.name)
    return {
        argument.name: _completion_value(ctx, seen, ref, argument.name) or PLAIN_VALUE
        for argument in prompt.arguments or []
        if argument.required and argument.name != leave_out
    }


def _get_prompt(ctx: CheckContext, name: str, arguments: dict[str, str]) -> Answer:
    ctx.step(f"prompts/get {name}")
    request = mcp_types.GetPromptRequest(
        params=mcp_types.GetPromptRequestParams(name=name, arguments=arguments or None)
    )
    return _raw(ctx, "during prompts/get", request)


def message_problems(result: dict[str, Any]) -> list[str]:
    """What in a GetPromptResult breaks the schema: `messages`, each with role user/assistant and a block."""
    messages = result.get("messages")
    if not isinstance(messages, list):
        return ["no `messages` list in the result"]
    problems = []
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            problems.append(f"messages[{index}] is not an object")
            continue
        if message.get("role") not in ("user", "assistant"):
            problems.append(f"messages[{index}].role is {message.get('role')!r}, not 'user' or 'assistant'")
        if not isinstance(message.get("content"), dict):
            problems.append(f"messages[{index}].content is not a content block object")
    return problems


def _check_prompts_get(ctx: CheckContext, seen: _Seen) -> None:
    """PC-52: prompts/get of every listed prompt (required arguments filled) answers well-formed messages."""
    if _skipped(ctx, "PC-52", _prompts_skip(seen)):
        return
    prompts = (seen.prompts or [])[:MAX_PROMPTS]
    if not prompts:
        _record(ctx, "PC-52", "SKIP", "the server lists no prompts")
        return
    failures: list[str] = []
    warnings: list[str] = []
    refused: list[str] = []
    answered: list[str] = []
    took = 0.0
    for prompt in prompts:
        if ctx.server_lost:
            break
        arguments = _prompt_arguments(ctx, seen, prompt)
        result, error, ms = _get_prompt(ctx, prompt.name, arguments)
        took += ms
        if error is not None:
            broken = _broken(ctx, error, f"{prompt.name!r}")
            if broken:
                failures.append(broken)
            elif arguments:
                refused.append(f"{prompt.name!r} {_rpc_error(error)}")
            else:
                warnings.append(f"{prompt.name!r} (no argument to get wrong) answered {_rpc_error(error)}")
            continue
        assert result is not None
        if result.get("resultType") == "input_required":
            refused.append(f"{prompt.name!r} asks the client for input (input_required)")
            continue
        problems = message_problems(result)
        failures.extend(f"{prompt.name!r}: {problem}" for problem in problems)
        for index, message in enumerate(result.get("messages") or []):
            if isinstance(message, dict) and isinstance(message.get("content"), dict):
                seen.blocks.append((f"prompt {prompt.name!r} messages[{index}]", message["content"]))
        if not problems:
            answered.append(prompt.name)
    details = {"answered": answered, "refused": refused, "problems": failures + warnings}
    more = f"; refused: {_listed(refused)}" if refused else ""
    bound = (
        f" (the first {MAX_PROMPTS} of {len(seen.prompts or [])})"
        if len(seen.prompts or []) > MAX_PROMPTS
        else ""
    )
    if failures:
        _record(ctx, "PC-52", "FAIL", _listed(failures), duration_ms=took, details=details)
    elif warnings:
        _record(ctx, "PC-52", "WARN", _listed(warnings), duration_ms=took, details=details)
    elif answered:
        _record(
            ctx,
            "PC-52",
            "PASS",
            f"{len(answered)} prompt(s){bound} answered well-formed messages{more}",
            duration_ms=took,
            details=details,
        )
    else:
        _record(
            ctx,
            "PC-52",
            "SKIP",
            f"not reached: every prompt refused the values given{more}",
            duration_ms=took,
            details=details,
        )


def _judge_refusal(ctx: CheckContext, check_id: str, what: str, answer: Answer) -> None:
    """A request the server must refuse: -32602 passes, another error code warns, an answer fails."""
    result, error, ms = answer
    if error is None:
        _record(ctx, check_id, "FAIL", f"answered {what} as if nothing were wrong", duration_ms=ms)
        return
    broken = _broken(ctx, error, what)
    if broken:
        _record(ctx, check_id, "FAIL", broken, duration_ms=ms)
    elif isinstance(error, MCPError) and error.error.code == mcp_types.INVALID_PARAMS:
        _record(ctx, check_id, "PASS", f"{_rpc_error(error)}", duration_ms=ms)
    else:
        _record(
            ctx,
            check_id,
            "WARN",
            f"{_rpc_error(error)} for {what}; the specification asks for -32602",
            duration_ms=ms,
        )


def _check_missing_prompt_argument(ctx: CheckContext, seen: _Seen) -> None:
    """PC-53: prompts/get without a required argument is refused (-32602)."""
    if _skipped(ctx, "PC-53", _prompts_skip(seen)):
        return
    target = next(((p, a.name) for p in seen.prompts or [] for a in p.arguments or [] if a.required), None)
    if target is None:
        _record(ctx, "PC-53", "SKIP", "no prompt has a required argument")
        return
    prompt, left_out = target
    arguments = _prompt_arguments(ctx, seen, prompt, leave_out=left_out)
    answer = _get_prompt(ctx, prompt.name, arguments)
    _judge_refusal(ctx, "PC-53", f"prompts/get of {prompt.name!r} without its required {left_out!r}", answer)


def _check_unknown_prompt(ctx: CheckContext, seen: _Seen) -> None:
    """PC-54: prompts/get of a prompt that does not exist is refused (-32602)."""
    if _skipped(ctx, "PC-54", _prompts_skip(seen)):
        return
    name = f"{UNKNOWN_PROMPT}_{uuid.uuid4().hex[:8]}"
    _judge_refusal(ctx, "PC-54", f"prompts/get of the unknown prompt {name!r}", _get_prompt(ctx, name, {}))


# --- Resources ------------------------------------------------------------------------------------


def _resources_skip(seen: _Seen) -> str | None:
    return seen.resources_why if seen.resources is None else None


def _base64_problem(data: Any, what: str) -> str | None:
    if not isinstance(data, str):
        return f"{what} is not a string"
    try:
        base64.b64decode(re.sub(r"\s+", "", data), validate=True)
    except (binascii.Error, ValueError):
        return f"{what} is not valid base64"
    return None


def contents_problems(item: Any, where: str) -> list[str]:
    """What in one resource contents object breaks the schema: uri, text or base64 blob, mimeType."""
    if not isinstance(item, dict):
        return [f"{where} is not an object"]
    problems = []
    if not isinstance(item.get("uri"), str) or not item.get("uri"):
        problems.append(f"{where} has no uri")
    if "text" in item:
        if not isinstance(item["text"], str):
            problems.append(f"{where}.text is not a string")
    elif "blob" in item:
        problem = _base64_problem(item["blob"], f"{where}.blob")
        if problem:
            problems.append(problem)
    else:
        problems.append(f"{where} has neither text nor blob")
    if "mimeType" in item and item["mimeType"] is not None and not isinstance(item["mimeType"], str):
        problems.append(f"{where}.mimeType is not a string")
    return problems


def _read(ctx: CheckContext, uri: str) -> Answer:
    ctx.step(f"resources/read {uri}")
    request = mcp_types.ReadResourceRequest(params=mcp_types.ReadResourceRequestParams(uri=uri))
    return _raw(ctx, "during resources/read", request)


def _read_problems(result: dict[str, Any], uri: str) -> list[str]:
    contents = result.get("contents")
    if not isinstance(contents, list):
        return [f"{uri}: no `contents` list in the result"]
    return [
        problem
        for index, item in enumerate(contents)
        for problem in contents_problems(item, f"{uri}: contents[{index}]")
    ]


def _size(result: dict[str, Any]) -> int:
    return sum(
        len(item.get("text") or item.get("blob") or "")
        for item in result.get("contents") or []
        if isinstance(item, dict) and isinstance(item.get("text") or item.get("blob") or "", str)
    )


def _check_resource_reads(ctx: CheckContext, seen: _Seen) -> None:
    """PC-55: every listed resource (bounded) reads as contents with a uri and a text or base64 blob."""
    if _skipped(ctx, "PC-55", _resources_skip(seen)):
        return
    resources = seen.resources or []
    if not resources:
        _record(ctx, "PC-55", "SKIP", "the server lists no resources")
        return
    failures: list[str] = []
    errors: list[str] = []
    started, chars, took = time.monotonic(), 0, 0.0
    for resource in resources[:MAX_RESOURCES]:
        if ctx.server_lost or time.monotonic() - started > READ_BUDGET_S or chars > READ_BUDGET_CHARS:
            break
        result, error, ms = _read(ctx, resource.uri)
        took += ms
        seen.read_uris.append(resource.uri)
        if error is not None:
            broken = _broken(ctx, error, resource.uri)
            (failures if broken else errors).append(broken or f"{resource.uri}: {_rpc_error(error)}")
            continue
        assert result is not None
        chars += _size(result)
        failures.extend(_read_problems(result, resource.uri))
    read = len(seen.read_uris)
    bound = (
        f" (the first {read} of {len(resources)}: at most {MAX_RESOURCES}, {READ_BUDGET_S:.0f} s)"
        if read < len(resources)
        else ""
    )
    details = {"read": seen.read_uris, "problems": failures, "errors": errors}
    if failures:
        _record(ctx, "PC-55", "FAIL", _listed(failures), duration_ms=took, details=details)
    elif errors:
        _record(
            ctx,
            "PC-55",
            "WARN",
            "listed but not readable: " + _listed(errors),
            duration_ms=took,
            details=details,
        )
    else:
        _record(
            ctx,
            "PC-55",
            "PASS",
            f"{read} resource(s) read{bound}, every contents well-formed",
            duration_ms=took,
            details=details,
        )


def template_pattern(template: str) -> re.Pattern[str] | None:
    """A regex matching the URIs a template expands to (simple and `+` expressions only), or None."""
    parts, names, last = [], [], 0
    for match in _EXPRESSION.finditer(template):
        operator, varlist = match.groups()
        if operator not in ("", "+") or "," in varlist:
            return None
        parts.append(re.escape(template[last : match.start()]))
        names.append(varlist.strip().rstrip("*").split(":")[0])
        parts.append(f"(?P<v{len(names) - 1}>{'.+' if operator == '+' else '[^/?#]+'})")
        last = match.end()
    if not names:
        return None
    parts.append(re.escape(template[last:]))
    return re.compile("".join(parts) + r"\Z")


def expand_template(template: str, values: dict[str, str]) -> str:
    """RFC 6570 expansion with one string per variable; a variable with no value expands to nothing."""
    prefixes = {
        "": ("", ","),
        "+": ("", ","),
        "#": ("#", ","),
        ".": (".", "."),
        "/": ("/", "/"),
        ";": (";", ";"),
        "?": ("?", "&"),
        "&": ("&", "&"),
    }

    def expand(match: re.Match[str]) -> str:
        operator, varlist = match.groups()
        safe = ":/?#[]@!$&'()*+,;=" if operator in ("+", "#") else ""
        named = operator in (";", "?", "&")
        parts = []
        for spec in varlist.split(","):
            name = spec.strip().rstrip("*").split(":")[0]
            if name in values:
                value = quote(values[name], safe=safe)
                parts.append(f"{name}={value}" if named else value)
        prefix, separator = prefixes[operator]
        return prefix + separator.join(parts) if parts else ""

    return _EXPRESSION.sub(expand, template)


def _template_values(ctx: CheckContext, seen: _Seen, template: str) -> tuple[dict[str, str], list[str]]:
    """Values for a template's variables, from completion or a listed resource; and the variables left."""
    values: dict[str, str] = {}
    pattern = template_pattern(template)
    for resource in seen.resources or []:
        match = pattern.match(resource.uri) if pattern else None
        if match:
            names = template_variables(template)
            for index, name in enumerate(names):
                values[name] = unquote(match.group(f"v{index}"))
            break
    ref = mcp_types.ResourceTemplateReference(type="ref/resource", uri=template)
    for name in template_variables(template, required_only=True):
        if name not in values:
            value = _completion_value(ctx, seen, ref, name)
            if value is not None:
                values[name] = value
    missing = [name for name in template_variables(template, required_only=True) if name not in values]
    return values, missing


def _check_template_read(ctx: CheckContext, seen: _Seen) -> None:
    """PC-56: a template filled with the server's own values (completion or a listed resource) reads well."""
    if _skipped(ctx, "PC-56", _resources_skip(seen)):
        return
    templates = [t for t in seen.templates if template_variables(t.uri_template)][:MAX_TEMPLATES]
    if not templates:
        _record(
            ctx, "PC-56", "SKIP", "no resource template has a variable" if seen.templates else "no templates"
        )
        return
    unfilled = []
    for template in templates:
        values, missing = _template_values(ctx, seen, template.uri_template)
        if missing:
            unfilled.append(f"{template.uri_template} ({', '.join(missing)})")
            continue
        uri = expand_template(template.uri_template, values)
        result, error, ms = _read(ctx, uri)
        details = {"template": template.uri_template, "values": values, "uri": uri}
        seen.read_uris.append(uri)
        if error is not None:
            broken = _broken(ctx, error, uri)
            if broken:
                _record(ctx, "PC-56", "FAIL", broken, duration_ms=ms, details=details)
            else:
                _record(
                    ctx,
                    "PC-56",
                    "WARN",
                    f"{uri}, filled with the server's own values: {_rpc_error(error)}",
                    duration_ms=ms,
                    details=details,
                )
            return
        assert result is not None
        problems = _read_problems(result, uri)
        if problems:
            _record(
                ctx,
                "PC-56",
                "FAIL",
                _listed(problems),
                duration_ms=ms,
                details={**details, "problems": problems},
            )
        else:
            _record(
                ctx,
                "PC-56",
                "PASS",
                f"read {uri} (from {template.uri_template})",
                duration_ms=ms,
                details=details,
            )
        return
    _record(
        ctx,
        "PC-56",
        "SKIP",
        "no value for the variables of "
        + "; ".join(unfilled)
        + ": neither completion nor a listed resource offers one",
    )


def _check_subscription(ctx: CheckContext, seen: _Seen) -> None:
    """PC-57: with `resources.subscribe` declared, subscribing to a resource (and unsubscribing) answers."""
    caps = ctx.server.capabilities.resources if ctx.server_lost is None else None
    skip = _resources_skip(seen) or (
        None if caps and caps.subscribe else "the server does not declare subscribe"
    )
    if _skipped(ctx, "PC-57", skip):
        return
    uri = next(iter([r.uri for r in seen.resources or []] + seen.read_uris), None)
    if uri is None:
        _record(ctx, "PC-57", "SKIP", "no resource to subscribe to: none listed, no template read")
        return
    health = ctx.server.health
    modern = health is not None and health.protocol_version in MODERN_PROTOCOL_VERSIONS
    ctx.step(f"PC-57 subscribe {uri}")
    with ctx.timed() as took:
        try:
            if modern:
                said = ctx.server.request(
                    "during subscriptions/listen", lambda c: _listen(c, uri), ctx.call_timeout_s
                )
            else:
                for method, request in (
                    (
                        "resources/subscribe",
                        mcp_types.SubscribeRequest(params=mcp_types.SubscribeRequestParams(uri=uri)),
                    ),
                    (
                        "resources/unsubscribe",
                        mcp_types.UnsubscribeRequest(params=mcp_types.UnsubscribeRequestParams(uri=uri)),
                    ),
                ):
                    _, error, _ = _raw(ctx, f"during {method}", request)
                    if error is not None:
                        raise error
                said = "resources/subscribe and resources/unsubscribe answered"
            failure = None
        except (ServerHalt, pydantic.ValidationError, MCPError, RuntimeError) as exc:
            failure = _broken(ctx, exc, f"subscribing to {uri}") or (
                f"declares subscribe, but subscribing to {uri}: {_rpc_error(exc)}"
            )
    if failure:
        _record(ctx, "PC-57", "FAIL", failure, duration_ms=took["ms"])
    else:
        _record(ctx, "PC-57", "PASS", f"{said} for {uri}", duration_ms=took["ms"])


async def _listen(client: Client, uri: str) -> str:
    """Open a 2026-07-28 subscriptions/listen stream for one resource, await its acknowledgment, close."""
    async with client.listen(resource_subscriptions=[uri]) as subscription:
        honored = subscription.honored
    kept = (honored.resource_subscriptions or []) if honored is not None else []
    return "subscriptions/listen acknowledged" + ("" if uri in kept else " (the resource not honored)")


# --- Content --------------------------------------------------------------------------------------


def _check_is_error(ctx: CheckContext, seen: _Seen) -> None:
    """PC-58: a tool result's isError, when present, is a JSON boolean (read-only tools PC-10 reached)."""
    if _skipped(ctx, "PC-58"):
        return
    tools = []
    for tool in ctx.tools:
        reach = ctx.coverage.get(tool.name)
        if reach is None or reach.status != "reached" or reach.decisive is None:
            continue
        if write_risk(tool, trusted=tool.name in ctx.read_only) is None:
            tools.append((tool.name, reach.decisive.candidate.arguments))
    if not tools:
        _record(ctx, "PC-58", "SKIP", "no tool PC-10 reached may be called again without changing state")
        return
    problems: list[str] = []
    took = 0.0
    called = []
    for name, arguments in tools[:MAX_RECALLS]:
        if ctx.server_lost:
            break
        ctx.step(f"PC-58 calling {name}")
        request = mcp_types.CallToolRequest(
            params=mcp_types.CallToolRequestParams(name=name, arguments=arguments)
        )
        result, error, ms = _raw(ctx, "during tools/call", request)
        took += ms
        if error is not None:
            broken = _broken(ctx, error, f"{name} called again")
            if broken:
                problems.append(broken)
            continue
        assert result is not None
        called.append(name)
        if "isError" in result and result["isError"] is not None and not isinstance(result["isError"], bool):
            problems.append(f"{name}: isError is {result['isError']!r}, not a boolean")
        for index, block in enumerate(result.get("content") or []):
            seen.blocks.append((f"tool {name} content[{index}]", block))
    details = {"called": called, "problems": problems}
    if problems:
        _record(ctx, "PC-58", "FAIL", _listed(problems), duration_ms=took, details=details)
    elif called:
        _record(
            ctx,
            "PC-58",
            "PASS",
            f"{len(called)} read-only tool(s) called again: isError well-typed",
            duration_ms=took,
            details=details,
        )
    else:
        _record(ctx, "PC-58", "SKIP", "no second call answered", duration_ms=took, details=details)


def block_problems(block: Any, where: str) -> list[str]:
    """What in one content block breaks the schema (text, image, audio, resource_link, resource)."""
    if not isinstance(block, dict):
        return [f"{where} is not an object"]
    kind = block.get("type")
    if kind == "text":
        return [] if isinstance(block.get("text"), str) else [f"{where} (text) has no string text"]
    if kind in ("image", "audio"):
        problems = [_base64_problem(block.get("data"), f"{where} ({kind}) data")]
        if not isinstance(block.get("mimeType"), str) or not block.get("mimeType"):
            problems.append(f"{where} ({kind}) has no mimeType")
        return [problem for problem in problems if problem]
    if kind == "resource_link":
        return [
            f"{where} (resource_link) has no {key}"
            for key in ("uri", "name")
            if not isinstance(block.get(key), str) or not block.get(key)
        ]
    if kind == "resource":
        return contents_problems(block.get("resource"), f"{where} (resource).resource")
    return [f"{where} has an unknown type {kind!r}"]


def _check_content_blocks(ctx: CheckContext, seen: _Seen) -> None:
    """PC-59: every content block seen (tool results, prompt messages) is valid against the schema."""
    blocks = list(seen.blocks)
    for response in ctx.responses:
        for index, block in enumerate(response.result.content):
            dumped = block.model_dump(by_alias=True, mode="json", exclude_none=True)
            blocks.append((f"tool {response.tool} content[{index}]", dumped))
    if not blocks:
        _record(ctx, "PC-59", "SKIP", "no content block seen (no tool reached, no prompt answered)")
        return
    problems = list(dict.fromkeys(p for where, block in blocks for p in block_problems(block, where)))
    kinds = sorted({block.get("type") for _, block in blocks if isinstance(block, dict)} - {None})
    details = {"blocks": len(blocks), "types": kinds, "problems": problems}
    if problems:
        _record(ctx, "PC-59", "FAIL", _listed(problems), details=details)
    else:
        _record(ctx, "PC-59", "PASS", f"{len(blocks)} block(s) valid ({', '.join(kinds)})", details=details)
