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

import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import mcp_types
import orjson
import pydantic
from mcp.shared.exceptions import MCPError

from mcpipechekr.artifacts.check_report import Coverage, ToolCoverage
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
from mcpipechekr.check.argsgen import Unsatisfiable, minimal_arguments, resolve_ref
from mcpipechekr.check.cases import CasesFile
from mcpipechekr.check.context import CheckContext
from mcpipechekr.check.hints import (
    described_values,
    generate_matching,
    refusal_values,
    sql_like,
    sql_values,
    tool_text_for,
)
from mcpipechekr.check.honesty import watching
from mcpipechekr.check.sources import Found, ValuePool, words
from mcpipechekr.errors import ServerHalt
from mcpipechekr.server.connection import StructuredContentMismatch

MINIMAL = "minimal"
"""The source label of the minimal value of a parameter (check/argsgen.py)."""

PATHISH = re.compile(r"path|dir|folder|file|repo|root|location|workspace|project|cwd", re.IGNORECASE)
DIRISH = re.compile(r"dir|folder|repo|root|workspace|project|cwd", re.IGNORECASE)
FILEISH = re.compile(r"file", re.IGNORECASE)
URIISH = re.compile(r"uri|url|link|href|resource", re.IGNORECASE)
TIMEZONISH = re.compile(r"time_?zone|\btz\b|_tz$|^tz", re.IGNORECASE)
FORMAT_SAMPLES = {
    "date": "2020-01-01",
    "date-time": "2020-01-01T00:00:00Z",
    "time": "12:00:00",
    "email": "someone@example.com",
    "idn-email": "someone@example.com",
    "uri": "https://example.com/",
    "url": "https://example.com/",
    "iri": "https://example.com/",
    "uri-reference": "https://example.com/",
    "uuid": "00000000-0000-0000-0000-000000000000",
    "ipv4": "127.0.0.1",
    "ipv6": "::1",
    "hostname": "localhost",
    "idn-hostname": "localhost",
    "duration": "P1D",
}
VALUES_PER_PARAMETER = 8
DATE_SAMPLE = "2020-01-15"
"""A day for a parameter whose name asks for one (`start_date`) when nothing says its format."""
HINTED_PER_REFUSAL = 4
"""Most argument sets one refusal's text adds ahead of the rest (within the tool's bound)."""


# --- candidates ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Candidate:
    """One argument set to try, with where each value came from."""

    arguments: dict[str, Any]
    sources: dict[str, str]
    """Parameter → source label (`schema enum`, `result of list_items`, `server command line`, …)."""
    origin: str = "generated"
    """`generated`, or the id of the case whose arguments these are."""

    def describe(self) -> str:
        """`item_id from the result of list_items, format from the schema enum`, or the case."""
        if self.origin != "generated":
            return f"the arguments of case {self.origin!r}"
        if not self.arguments:
            return "no arguments"
        telling = {name: label for name, label in self.sources.items() if label != MINIMAL}
        if not telling:
            return "minimal generated arguments"
        return ", ".join(f"{name} from {_the(label)}" for name, label in telling.items())

    def key(self) -> bytes:
        return orjson.dumps(self.arguments, option=orjson.OPT_SORT_KEYS, default=str)


def _the(label: str) -> str:
    return label if label.startswith(("the ", "a ", "an ")) else f"the {label}"


@dataclass(frozen=True)
class _Value:
    value: Any
    source: str
    good: bool = True
    """False for the fallbacks (minimal value, a path offered to a parameter that did not ask for one)."""


def candidates(
    tool: mcp_types.Tool, pool: ValuePool, *, limit: int, case: Candidate | None = None
) -> list[Candidate]:
    """Up to `limit` distinct argument sets for `tool`, best first (the case's, when given, first).

    A schema too odd for the generator (a bound that is no number, a length that
    is no integer) costs its synthesized sets, never the check: what was built
    before it, and the minimal arguments, are still offered.
    """
    schema = tool.input_schema if isinstance(tool.input_schema, dict) else {}
    out: list[Candidate] = [case] if case is not None else []
    try:
        _synthesize(tool, schema, pool, limit, out)
    except (TypeError, ValueError, ArithmeticError, RecursionError):
        pass
    try:
        minimal = minimal_arguments(schema)
    except (TypeError, ValueError, ArithmeticError, RecursionError):
        minimal = None
    if minimal is not None and len(out) < limit:
        candidate = Candidate(minimal, dict.fromkeys(minimal, MINIMAL))
        if candidate.key() not in {existing.key() for existing in out}:
            out.append(candidate)
    return out


def _synthesize(
    tool: mcp_types.Tool, schema: dict[str, Any], pool: ValuePool, limit: int, out: list[Candidate]
) -> None:
    """Append to `out` the synthesized argument sets, best first, up to `limit` in all."""
    seen = {candidate.key() for candidate in out}

    def add(candidate: Candidate) -> None:
        key = candidate.key()
        if key not in seen and len(out) < limit:
            seen.add(key)
            out.append(candidate)

    try:
        root = resolve_ref(schema, schema)
    except Unsatisfiable:
        return
    properties = root.get("properties") if isinstance(root.get("properties"), dict) else {}
    required = [name for name in root.get("required") or [] if isinstance(name, str)]
    ranked: dict[str, list[_Value]] = {}
    only = len(properties) == 1

    def values_of(name: str, prop: Any) -> list[_Value]:
        told = tool_text_for(name, tool.description, only)
        return _values_of(name, prop, schema, pool, tool.name, told)

    for name in required:
        values = values_of(name, properties.get(name, {}))
        if not values:
            return  # a required parameter nothing can fill
        ranked[name] = values
    optional: dict[str, _Value] = {}
    for name, prop in properties.items():
        if name in required or not isinstance(name, str):
            continue
        good = [value for value in values_of(name, prop) if value.good]
        if good and good[0].source != "schema default":
            optional[name] = good[0]

    base = {name: values[0] for name, values in ranked.items()}
    add(_candidate(base))
    if optional:
        add(_candidate({**base, **optional}))
    for name, index in _one_at_a_time(ranked):
        add(_candidate({**base, name: ranked[name][index]}))
        if len(out) >= limit:
            break
    depth = max((len(values) for values in ranked.values()), default=0)
    for index in range(1, depth):
        add(_candidate({name: values[min(index, len(values) - 1)] for name, values in ranked.items()}))
    if optional:
        for name, index in _one_at_a_time(ranked):
            add(_candidate({**base, **optional, name: ranked[name][index]}))


def _values_of(
    name: str, schema: Any, root: dict[str, Any], pool: ValuePool, tool: str, told: str
) -> list[_Value]:
    """`parameter_values`, or none for a parameter whose schema the generator cannot read."""
    try:
        return parameter_values(name, schema, root, pool, tool, told=told)
    except (TypeError, ValueError, ArithmeticError, RecursionError):
        return []


def _candidate(values: dict[str, _Value]) -> Candidate:
    return Candidate({n: v.value for n, v in values.items()}, {n: v.source for n, v in values.items()})


def _one_at_a_time(ranked: dict[str, list[_Value]]) -> Iterator[tuple[str, int]]:
    """(parameter, index of its next value), round-robin over the parameters."""
    for index in range(1, VALUES_PER_PARAMETER):
        for name, values in ranked.items():
            if index < len(values):
                yield name, index


def parameter_values(
    name: str, schema: Any, root: dict[str, Any], pool: ValuePool, tool: str, depth: int = 0, told: str = ""
) -> list[_Value]:
    """The values worth trying for one parameter, best first, each valid for its schema as far as known.

    `told` is what the tool's description says about the parameter (`hints.tool_text_for`): a FastMCP
    tool's docstring holds its parameters' descriptions there, not in the schema.
    """
    if depth > 8:
        return []
    if schema is True or schema == {} or schema is None:
        schema = {"type": "string"}
    if not isinstance(schema, dict):
        return []
    try:
        schema = resolve_ref(schema, root)
    except Unsatisfiable:
        return []
    if "const" in schema:
        return [_Value(schema["const"], "schema const")]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        enum = list(schema["enum"])
        default = schema.get("default")
        ordered = ([default] if default in enum else []) + [v for v in enum if v != default]
        return [_Value(value, "schema enum") for value in ordered[:VALUES_PER_PARAMETER]]
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            merged: list[_Value] = []
            for option in options:
                if isinstance(option, dict) and option.get("type") == "null":
                    continue
                extra = {k: v for k, v in schema.items() if k not in (key, "type")}
                branch = {**extra, **option} if isinstance(option, dict) else option
                merged.extend(parameter_values(name, branch, root, pool, tool, depth + 1, told))
            return _dedupe(merged)
    if isinstance(schema.get("allOf"), list):
        combined: dict[str, Any] = {}
        for part in schema["allOf"]:
            if isinstance(part, dict):
                try:
                    combined.update(resolve_ref(part, root))
                except Unsatisfiable:
                    return []
        rest = {k: v for k, v in schema.items() if k != "allOf"}
        return parameter_values(name, {**combined, **rest}, root, pool, tool, depth + 1, told)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    if kind is None:
        kind = "object" if "properties" in schema else "string"
    values: list[_Value] = []
    if "default" in schema:
        values.append(_Value(schema["default"], "schema default"))
    for example in schema.get("examples") or [] if isinstance(schema.get("examples"), list) else []:
        values.append(_Value(example, "schema example"))
    if "example" in schema:
        values.append(_Value(schema["example"], "schema example"))
    if kind == "string":
        values = _string_values(name, schema, pool, values, tool, told)
    elif kind in ("integer", "number"):
        values = _number_values(name, schema, kind, pool, values, told)
    elif kind == "boolean":
        values += [_Value(False, MINIMAL, good=False), _Value(True, MINIMAL, good=False)]
    elif kind == "array":
        items = parameter_values(name, schema.get("items", {}), root, pool, tool, depth + 1)
        count = max(1, int(schema.get("minItems") or 0))
        for item in items[:3]:
            values.append(_Value([item.value] * count, item.source, item.good))
        if not schema.get("minItems"):
            values.append(_Value([], MINIMAL, good=False))
    elif kind == "object":
        nested = {}
        props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
        for inner in schema.get("required") or []:
            inner_values = parameter_values(inner, props.get(inner, {}), root, pool, tool, depth + 1)
            if not inner_values:
                return values
            nested[inner] = inner_values[0].value
        values.append(_Value(nested, MINIMAL, good=False))
    elif kind == "null":
        values.append(_Value(None, MINIMAL, good=False))
    return _dedupe([value for value in values if _fits(value.value, schema, kind)])[:VALUES_PER_PARAMETER]


def _string_values(
    name: str, schema: dict[str, Any], pool: ValuePool, values: list[_Value], tool: str, told: str = ""
) -> list[_Value]:
    description = str(schema.get("description") or "")
    words = f"{name} {schema.get('title') or ''} {description}"
    fed = [_Value(f.value, f.source) for f in _matching(name, pool) if isinstance(f.value, str)]
    paths = _paths_for(f"{words} {tool}", pool)
    if DIRISH.search(name):
        fed, not_directories = _directories_first(fed)
    else:
        not_directories = []
    out = fed + values
    sql = sql_like(name, f"{description}\n{told}")
    if sql:  # a SELECT over a table another tool listed, before examples that may name no real table
        out += [_Value(value, label) for value, label in sql_values(pool)[:-1]]
    out += [_Value(value, "parameter description") for value in described_values(description)]
    out += [_Value(value, "tool description") for value in described_values(told)]
    if sql:
        out += [_Value(value, label) for value, label in sql_values(pool)[-1:]]
    fmt = schema.get("format")
    if isinstance(fmt, str) and fmt in FORMAT_SAMPLES:
        if fmt in ("uri", "url", "iri", "uri-reference"):
            out += [_Value(f.value, f.source) for f in pool.resources if f.key == "uri"]
        out.append(_Value(FORMAT_SAMPLES[fmt], "schema format"))
    if isinstance(schema.get("pattern"), str):
        generated = generate_matching(schema["pattern"])
        if generated is not None:
            out.append(_Value(generated, "schema pattern"))
    if _names_a_date(name):
        out.append(_Value(DATE_SAMPLE, "a date"))
    if TIMEZONISH.search(name) or "time zone" in description.lower() or "timezone" in description.lower():
        out += [_Value(f.value, f.source) for f in pool.time_zones]
        out.append(_Value("UTC", "a time zone"))
    if URIISH.search(name) or URIISH.search(schema.get("title") or ""):
        out += [_Value(f.value, f.source) for f in pool.resources if f.key == "uri"]
    if PATHISH.search(name) or PATHISH.search(schema.get("title") or ""):
        out += paths
    elif PATHISH.search(description):
        out += paths[:2]
    out += not_directories
    out += [_Value(f.value, f.source) for f in pool.resources if f.key == "name" and _word_in("name", name)]
    out += _loose(pool)
    length = max(1, int(schema.get("minLength") or 1))
    out.append(_Value("a" * length, MINIMAL, good=False))
    out += [_Value(path.value, path.source, good=False) for path in paths[:1]]
    return out


def _directories_first(fed: list[_Value]) -> tuple[list[_Value], list[_Value]]:
    """Split values fed to a parameter that names a directory (`repo_path`, `root_dir`): those that may be
    one, and those that cannot (a file name from a status line, `/dev/null` from a diff header), which
    rank after the directories the server was started with."""
    may, cannot = [], []
    for value in fed:
        text = str(value.value)
        local = Path(text)
        if not local.is_absolute() or (local.exists() and not local.is_dir()):
            cannot.append(value)
        else:
            may.append(value)
    return may, cannot


def _number_values(
    name: str, schema: dict[str, Any], kind: str, pool: ValuePool, values: list[_Value], told: str = ""
) -> list[_Value]:
    fed = [
        _Value(found.value, found.source)
        for found in _matching(name, pool)
        if isinstance(found.value, int | float)
        and not isinstance(found.value, bool)
        or isinstance(found.value, str)
        and found.value.isdigit()
        and kind == "integer"
    ]
    fed = [_Value(int(v.value), v.source) if isinstance(v.value, str) else v for v in fed]
    texts = ((str(schema.get("description") or ""), "parameter description"), (told, "tool description"))
    described = [
        _Value(typed, label)
        for text, label in texts
        for value in described_values(text)
        if (typed := _typed(value, kind)) is not None
    ]
    out = fed + values + described
    low, high = _number(schema.get("minimum")), _number(schema.get("maximum"))
    if low is None and _number(schema.get("exclusiveMinimum")) is not None:
        low = schema["exclusiveMinimum"] + 1
    if high is None and _number(schema.get("exclusiveMaximum")) is not None:
        high = schema["exclusiveMaximum"] - 1
    if low is not None:
        out.append(_Value(low, "schema bounds"))
    if low is not None and high is not None:
        out.append(_Value((low + high) // 2 if kind == "integer" else (low + high) / 2, "schema bounds"))
    out += [_Value(1, MINIMAL, good=False), _Value(10, MINIMAL, good=False), _Value(0, MINIMAL, good=False)]
    if high is not None:
        out.append(_Value(high, "schema bounds"))
    return [
        _Value(int(v.value), v.source, v.good)
        if kind == "integer" and isinstance(v.value, float) and v.value.is_integer()
        else v
        for v in out
    ]


def _typed(value: Any, kind: str) -> Any:
    """A value read from text, as the parameter's type wants it (`"50"` for an integer is 50), or None
    when it is not one (a date is no integer)."""
    if kind == "string":
        return value if isinstance(value, str) else None
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return value if kind == "boolean" and isinstance(value, bool) else None
    text = str(value).strip()
    if kind == "integer" and re.fullmatch(r"-?\d{1,18}", text):
        return int(text)
    if kind == "number" and re.fullmatch(r"-?\d{1,18}(?:\.\d+)?", text):
        return float(text) if "." in text else int(text)
    if kind == "boolean" and text.lower() in ("true", "false"):
        return text.lower() == "true"
    return None


def _names_a_date(name: str) -> bool:
    """`date`, `start_date`, `day`, `since`, `until`: a parameter that takes a day when nothing says how."""
    parts = words(name)
    return bool(parts) and (parts[-1] in ("date", "day") or parts[0] in ("since", "until"))


def _number(value: Any) -> int | float | None:
    """A bound that is a number (Draft 4's boolean `exclusiveMinimum` is not one)."""
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def _fits(value: Any, schema: dict[str, Any], kind: str) -> bool:
    """Whether a value keeps the constraints synthesis can check (type, length, pattern, bounds)."""
    if kind == "string":
        if not isinstance(value, str):
            return False
        if len(value) < int(schema.get("minLength") or 0):
            return False
        if "maxLength" in schema and len(value) > int(schema["maxLength"]):
            return False
        pattern = schema.get("pattern")
        if isinstance(pattern, str):
            try:
                return re.search(pattern, value) is not None
            except re.error:
                return True
        return True
    if kind in ("integer", "number"):
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        if kind == "integer" and not float(value).is_integer():
            return False
        for bound, ok in (
            ("minimum", lambda b: value >= b),
            ("maximum", lambda b: value <= b),
            ("exclusiveMinimum", lambda b: value > b),
            ("exclusiveMaximum", lambda b: value < b),
        ):
            if _number(schema.get(bound)) is not None and not ok(schema[bound]):
                return False
        return True
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "array":
        return isinstance(value, list)
    if kind == "object":
        return isinstance(value, dict)
    return True


def _dedupe(values: list[_Value]) -> list[_Value]:
    seen: set[str] = set()
    out = []
    for value in values:
        key = repr(value.value)
        if key not in seen:
            seen.add(key)
            out.append(value)
    return out


SAME_THING = {
    "sha": "revision",
    "commit": "revision",
    "hash": "revision",
    "ref": "revision",
    "rev": "revision",
    "url": "uri",
    "link": "uri",
    "href": "uri",
    "filepath": "path",
    "filename": "path",
    "file": "path",
    "identifier": "id",
    "uuid": "id",
}
"""Last words of a key and a parameter that name the same thing (`commit` in a log, `revision` wanted)."""


def _kind(words: list[str]) -> str:
    return SAME_THING.get(words[-1], words[-1]) if words else ""


def _word_in(word: str, name: str) -> bool:
    return word in words(name)


def _matching(name: str, pool: ValuePool) -> list[Found]:
    """Values other tools returned under a key that matches this parameter, best match first."""
    wanted = words(name)
    if not wanted:
        return []
    scored: list[tuple[int, int, Found]] = []
    for order, found in enumerate(pool.harvested):
        if found.key is None:
            continue
        have = words(found.key)
        if not have:
            continue
        same = _kind(have) == _kind(wanted)
        if have == wanted:
            score = 3
        elif same and set(wanted[:-1]) <= set(have) | set(words(found.context)):
            score = 2
        elif same or (len(wanted) > 1 and wanted[0] == have[-1] and len(have) == 1):
            score = 1
        else:
            continue
        scored.append((-score, order, found))
    return [found for _, _, found in sorted(scored, key=lambda item: (item[0], item[1]))]


def _loose(pool: ValuePool) -> list[_Value]:
    """A few values seen under id- or name-like keys, or alone in text, for a parameter nothing matched.

    Values under a key that names an identifier (`id`, `key`, `uri`, or a commit, sha or hash) come
    first: a `target` or `ref` parameter no key matches by name still takes a commit a log listed.
    """
    identifiers: list[_Value] = []
    others: list[_Value] = []
    for found in pool.harvested:
        if not isinstance(found.value, str):
            continue
        kind = _kind(words(found.key)) if found.key is not None else None
        if kind in ("id", "key", "uri", "revision"):
            identifiers.append(_Value(found.value, found.source, good=False))
        elif found.key is None or kind == "name":
            others.append(_Value(found.value, found.source, good=False))
    return _dedupe(identifiers)[:3] + _dedupe(others)[:3]


def _paths_for(words: str, pool: ValuePool) -> list[_Value]:
    directories = [_Value(f.value, f.source) for f in pool.directories]
    files = [_Value(f.value, f.source) for f in pool.files]
    if FILEISH.search(words) and not DIRISH.search(words):
        return files + directories
    return directories + files


# --- calling -------------------------------------------------------------------------------------

Outcome = Literal["reached", "refused", "failed", "needs_network"]


@dataclass
class Attempt:
    """One call of a tool with one candidate, and how it went."""

    candidate: Candidate
    outcome: Outcome
    message: str
    ms: float
    result: mcp_types.CallToolResult | None = None
    mismatch: str | None = None
    """The client's complaint about structuredContent that does not match the outputSchema (PC-11)."""
    halted: bool = False


@dataclass
class ToolReach:
    """What synthesis got from one tool: its attempts and the one that decided."""

    tool: mcp_types.Tool
    status: Literal["reached", "not_reached", "failed", "needs_network", "no_arguments", "not_called"]
    reason: str = ""
    """Why it was not called, or the last refusal, failure or network error."""
    attempts: list[Attempt] = field(default_factory=list)

    @property
    def decisive(self) -> Attempt | None:
        return self.attempts[-1] if self.attempts else None

    @property
    def halted(self) -> bool:
        return any(attempt.halted for attempt in self.attempts)


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


def hinted_candidates(tool: mcp_types.Tool, refused: Attempt, pool: ValuePool) -> list[Candidate]:
    """Argument sets a refusal points to: the refused set with one parameter moved to a value its error
    names (an allowed value, a match for its pattern, a date in its format, a SELECT over a listed table
    for a SQL parameter, a name another tool listed for "no such X"), typed and checked against the schema.

    The parameter is the one the error names, or whose value it quotes; else each one that was sent.
    At most HINTED_PER_REFUSAL sets, so a wordy error cannot crowd out the ranked candidates.
    """
    text = text_of(refused.result) if refused.result is not None else refused.message
    schema = tool.input_schema if isinstance(tool.input_schema, dict) else {}
    try:
        root = resolve_ref(schema, schema)
    except Unsatisfiable:
        return []
    properties = root.get("properties") if isinstance(root.get("properties"), dict) else {}
    sent = refused.candidate.arguments
    names = [name for name in properties if isinstance(name, str)]
    named = [
        name
        for name in names
        if _names_parameter(text, name) or (name in sent and _mentions(text, str(sent[name])))
    ]
    out: list[Candidate] = []
    for name in named or [name for name in names if name in sent] or names:
        try:
            prop = resolve_ref(properties[name], schema) if isinstance(properties[name], dict) else {}
        except Unsatisfiable:
            continue
        kind = _type_of(prop)
        told = tool_text_for(name, tool.description, len(properties) == 1)
        sql = kind == "string" and sql_like(name, f"{prop.get('description') or ''}\n{told}")
        for value, label in refusal_values(text, sent.get(name), sql, pool):
            typed = _typed(value, kind)
            if typed is None or not _fits(typed, prop, kind):
                continue
            arguments = {**sent, name: typed}
            out.append(Candidate(arguments, {**refused.candidate.sources, name: label}))
    return out[:HINTED_PER_REFUSAL]


def _names_parameter(text: str, name: str) -> bool:
    """Whether an error names a parameter: `start_date`, or its words (`start date`)."""
    spoken = " ".join(words(name)) if len(words(name)) > 1 else name
    return any(
        re.search(rf"(?<![\w]){re.escape(form)}(?![\w])", text, re.IGNORECASE) for form in {name, spoken}
    )


def _type_of(schema: dict[str, Any]) -> str:
    """The JSON type of a parameter's schema (the first that is not null), `string` when it says none."""
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    if kind is None:
        for key in ("anyOf", "oneOf"):
            options = schema.get(key)
            if isinstance(options, list):
                kinds = [o.get("type") for o in options if isinstance(o, dict) and o.get("type") != "null"]
                kind = next((k for k in kinds if isinstance(k, str)), None)
    return kind if isinstance(kind, str) else "string"


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


def _mentions(message: str, value: str) -> bool:
    """Whether an error message quotes a value: quoted at any length, or as a whole word of 2+ characters."""
    if not value:
        return False
    if any(f"{quote}{value}{quote}" in message for quote in ("'", '"', "`")):
        return True
    return len(value) > 1 and re.search(rf"(?<!\w){re.escape(value)}(?!\w)", message) is not None


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


def attempts_detail(reach: ToolReach) -> list[dict[str, Any]]:
    """The attempts as JSON for a report's details: arguments, where they came from, and how it went."""
    return [
        {
            "arguments": attempt.candidate.arguments,
            "sources": attempt.candidate.sources,
            "outcome": attempt.outcome,
            "message": one_line(attempt.message),
        }
        for attempt in reach.attempts
    ]


def coverage_of(reaches: dict[str, ToolReach], tools: list[mcp_types.Tool]) -> Coverage | None:
    """The report's coverage section: per tool check may call, reached or not, with what or why not."""
    if not reaches:
        return None
    entries: list[ToolCoverage] = []
    for tool in tools:
        reach = reaches.get(tool.name)
        if reach is None or (
            reach.status == "not_called" and not reach.attempts and reach.reason.startswith("not called:")
        ):
            continue  # a tool check may not call is outside the figure
        decisive = reach.decisive
        entries.append(
            ToolCoverage(
                tool=tool.name,
                status=reach.status,
                calls=len(reach.attempts),
                arguments=decisive.candidate.arguments if decisive is not None else None,
                sources=decisive.candidate.sources if decisive is not None else {},
                error=None if reach.status == "reached" else one_line(reach.reason) or None,
            )
        )
    return Coverage(
        callable_tools=len(entries),
        reached=sum(1 for entry in entries if entry.status == "reached"),
        tools=entries,
    )
