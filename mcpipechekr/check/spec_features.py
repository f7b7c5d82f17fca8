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

import time
import uuid
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

import mcp_types
import pydantic
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcpipechekr.artifacts.check_report import CheckStatus
from mcpipechekr.check.answers import halt_reason, one_line, validation_reason
from mcpipechekr.check.context import SLOW_TO_CALL_AGAIN_MS, CheckContext, all_pages
from mcpipechekr.check.spec_shapes import (
    block_problems,
    completion_problems,
    expand_template,
    message_problems,
    read_problems,
    template_pattern,
    template_variables,
)
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
PLAIN_VALUE = "example"
"""A prompt argument's value when completion offers none."""
UNKNOWN_PROMPT = "mcpipechekr_no_such_prompt"
MAX_LISTED_PROBLEMS = 3
"""A reason names this many problems; `details` holds them all."""

_RAW = pydantic.TypeAdapter(dict[str, Any])


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


def _settle(
    ctx: CheckContext,
    check_id: str,
    failures: list[str],
    warnings: list[str],
    ok: tuple[CheckStatus, str],
    **extra: Any,
) -> None:
    """One verdict: FAIL naming the failures, else WARN naming the warnings, else `ok`."""
    status, reason = (
        ("FAIL", _listed(failures)) if failures else ("WARN", _listed(warnings)) if warnings else ok
    )
    _record(ctx, check_id, status, reason, **extra)


def _list_features(ctx: CheckContext, seen: _Seen) -> None:
    """Prompts, resources and templates, from the client's cache when PC-07/PC-08 just listed them."""
    caps = ctx.server.capabilities
    if caps.prompts is None:
        seen.prompts_why = "the server does not declare prompts"
    else:
        try:
            seen.prompts = ctx.server.request(
                "during prompts/list",
                lambda c: all_pages(lambda cur: c.list_prompts(cursor=cur), "prompts"),
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
            lambda c: all_pages(lambda cur: c.list_resources(cursor=cur), "resources"),
            ctx.call_timeout_s,
        )
        seen.templates = ctx.server.request(
            "during resources/templates/list",
            lambda c: all_pages(lambda cur: c.list_resource_templates(cursor=cur), "resource_templates"),
            ctx.call_timeout_s,
        )
    except (ServerHalt, pydantic.ValidationError, MCPError) as exc:
        if seen.resources is None:
            seen.resources_why = "resources/list failed (PC-07)"
        if isinstance(exc, ServerHalt):
            ctx.recover()


# --- Completions ----------------------------------------------------------------------------------


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
    """A valid `completion` passes; a malformed one, a halt or -32601 fails; another error warns."""
    result, error, ms = answer
    failures, warnings = [], []
    if error is not None:
        broken = _broken(ctx, error, f"completion/complete for {what}")
        if broken:
            failures.append(broken)
        elif isinstance(error, MCPError) and error.error.code == mcp_types.METHOD_NOT_FOUND:
            failures.append(f"declares completions, but completion/complete: {_rpc_error(error)}")
        else:
            warnings.append(f"completion/complete for {what}: {_rpc_error(error)}")
    problems = completion_problems(result) if result is not None else []
    failures.extend(f"completion/complete for {what}: {problem}" for problem in problems)
    values = (result or {}).get("completion", {}).get("values") or [] if not failures else []
    shown = ", ".join(repr(value) for value in values[:3]) + (", …" if len(values) > 3 else "")
    ok = f"{len(values)} value(s) for {what}" + (f": {shown}" if values else "")
    _settle(ctx, check_id, failures, warnings, ("PASS", ok), duration_ms=ms, details={"problems": problems})


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


def _no_prompts_skip(seen: _Seen) -> str | None:
    """Why PC-53/PC-54 do not probe: prompts not declared, or none listed (no client would ask for one).

    The Python SDK declares prompts on every server and answers an unknown
    prompt with -32603; probing a server that lists no prompts would warn
    about every such server for a request no client makes.
    """
    return _prompts_skip(seen) or (None if seen.prompts else "the server lists no prompts")


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
    ok: tuple[CheckStatus, str] = (
        ("PASS", f"{len(answered)} prompt(s){bound} answered well-formed messages{more}")
        if answered
        else ("SKIP", f"not reached: every prompt refused the values given{more}")
    )
    _settle(ctx, "PC-52", failures, warnings, ok, duration_ms=took, details=details)


def _judge_refusal(ctx: CheckContext, check_id: str, what: str, answer: Answer) -> None:
    """A request the server must refuse: -32602 passes, another error code warns, an answer fails."""
    _, error, ms = answer
    if error is None:
        status, reason = "FAIL", f"answered {what} as if nothing were wrong"
    elif isinstance(error, pydantic.ValidationError):  # an answer all the same, and a malformed one
        status, reason = "FAIL", f"answered {what} as if nothing were wrong ({validation_reason(error)})"
    elif broken := _broken(ctx, error, what):
        status, reason = "FAIL", broken
    elif isinstance(error, MCPError) and error.error.code == mcp_types.INVALID_PARAMS:
        status, reason = "PASS", _rpc_error(error)
    else:
        status, reason = "WARN", f"{_rpc_error(error)} for {what}; the specification asks for -32602"
    _record(ctx, check_id, status, reason, duration_ms=ms)


def _check_missing_prompt_argument(ctx: CheckContext, seen: _Seen) -> None:
    """PC-53: prompts/get without a required argument is refused (-32602)."""
    if _skipped(ctx, "PC-53", _no_prompts_skip(seen)):
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
    if _skipped(ctx, "PC-54", _no_prompts_skip(seen)):
        return
    name = f"{UNKNOWN_PROMPT}_{uuid.uuid4().hex[:8]}"
    _judge_refusal(ctx, "PC-54", f"prompts/get of the unknown prompt {name!r}", _get_prompt(ctx, name, {}))


# --- Resources ------------------------------------------------------------------------------------


def _resources_skip(seen: _Seen) -> str | None:
    return seen.resources_why if seen.resources is None else None


def _read(ctx: CheckContext, uri: str) -> Answer:
    ctx.step(f"resources/read {uri}")
    request = mcp_types.ReadResourceRequest(params=mcp_types.ReadResourceRequestParams(uri=uri))
    return _raw(ctx, "during resources/read", request)


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
        failures.extend(read_problems(result, resource.uri))
    read = len(seen.read_uris)
    bound = (
        f" (the first {read} of {len(resources)}: at most {MAX_RESOURCES}, {READ_BUDGET_S:.0f} s)"
        if read < len(resources)
        else ""
    )
    details = {"read": seen.read_uris, "problems": failures, "errors": errors}
    errors = [f"listed but not readable: {error}" for error in errors]
    ok: tuple[CheckStatus, str] = ("PASS", f"{read} resource(s) read{bound}, every contents well-formed")
    _settle(ctx, "PC-55", failures, errors, ok, duration_ms=took, details=details)


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
        failures, warnings = [], []
        if error is not None:
            broken = _broken(ctx, error, uri)
            failures += [broken] if broken else []
            warnings += [] if broken else [f"{uri}, filled with the server's own values: {_rpc_error(error)}"]
        failures += read_problems(result, uri) if result is not None else []
        ok: tuple[CheckStatus, str] = ("PASS", f"read {uri} (from {template.uri_template})")
        _settle(
            ctx, "PC-56", failures, warnings, ok, duration_ms=ms, details={**details, "problems": failures}
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
        slow = reach.decisive.ms > SLOW_TO_CALL_AGAIN_MS  # a long-running operation is not called twice
        if write_risk(tool, trusted=tool.name in ctx.read_only) is None and not slow:
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
    ok: tuple[CheckStatus, str] = (
        ("PASS", f"{len(called)} read-only tool(s) called again: isError well-typed")
        if called
        else ("SKIP", "no second call answered")
    )
    _settle(ctx, "PC-58", problems, [], ok, duration_ms=took, details=details)


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
