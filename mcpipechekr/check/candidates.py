"""Argument sets to try on a tool: built from its parameters' ranked values, and read from its refusals.

Building a set never calls the server; which tool is called when, and how an
answer is judged, is check/synthesis.py's part.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import mcp_types

from mcpipechekr.check.answers import text_of
from mcpipechekr.check.argsgen import Unsatisfiable, minimal_arguments, resolve_ref
from mcpipechekr.check.hints import refusal_values, sql_like, tool_text_for
from mcpipechekr.check.param_values import (
    VALUES_PER_PARAMETER,
    _fits,
    _typed,
    _Value,
    parameter_values,
)
from mcpipechekr.check.reach import MINIMAL, Attempt, Candidate
from mcpipechekr.check.sources import ValuePool, words

HINTED_PER_REFUSAL = 4
"""Most argument sets one refusal's text adds ahead of the rest (within the tool's bound)."""


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


def _mentions(message: str, value: str) -> bool:
    """Whether an error message quotes a value: quoted at any length, or as a whole word of 2+ characters."""
    if not value:
        return False
    if any(f"{quote}{value}{quote}" in message for quote in ("'", '"', "`")):
        return True
    return len(value) > 1 and re.search(rf"(?<!\w){re.escape(value)}(?!\w)", message) is not None
