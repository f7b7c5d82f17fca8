"""Minimal valid arguments for a tool, generated from its inputSchema.

Why minimal: a protocol probe wants to prove the tool can be called and
answers well-formed, not to exercise it. Only required properties are filled,
each with the simplest value its schema allows (enum's first value, const,
default, example, the lower bound of a range, a date for `format: date`). The
generator never invents values for optional properties, so a probe does as
little as the tool permits. Schemas it cannot satisfy (unsupported `$ref`s,
contradictory constraints) produce `None`, and the caller reports a SKIP.
"""

from __future__ import annotations

from typing import Any

_FORMAT_SAMPLES = {
    "date": "2020-01-01",
    "date-time": "2020-01-01T00:00:00Z",
    "time": "00:00:00",
    "email": "someone@example.com",
    "uri": "https://example.com/",
    "url": "https://example.com/",
    "uuid": "00000000-0000-0000-0000-000000000000",
    "ipv4": "127.0.0.1",
}


class Unsatisfiable(Exception):
    """The schema asks for something the generator cannot produce."""


def minimal_arguments(input_schema: dict[str, Any]) -> dict[str, Any] | None:
    """Arguments satisfying the schema's required properties, or None if the generator cannot."""
    try:
        value = _value(input_schema or {"type": "object"}, input_schema or {}, depth=0)
    except Unsatisfiable:
        return None
    return value if isinstance(value, dict) else None


def resolve_ref(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    """The schema a local `$ref` (`#/$defs/Item`) points to, or `schema` itself; Unsatisfiable otherwise."""
    ref = schema.get("$ref")
    if not isinstance(ref, str):
        return schema
    if not ref.startswith("#/"):
        raise Unsatisfiable(f"external $ref {ref}")
    target: Any = root
    for part in ref[2:].split("/"):
        if not isinstance(target, dict) or part not in target:
            raise Unsatisfiable(f"dangling $ref {ref}")
        target = target[part]
    if not isinstance(target, dict):
        raise Unsatisfiable(f"$ref {ref} is not a schema")
    return target


def _value(schema: Any, root: dict[str, Any], depth: int) -> Any:
    if depth > 20:
        raise Unsatisfiable("schema nests too deeply")
    if schema is True or schema == {}:
        return "x"
    if not isinstance(schema, dict):
        raise Unsatisfiable("schema is not an object")
    schema = resolve_ref(schema, root)
    for key in ("const",):
        if key in schema:
            return schema[key]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    if "default" in schema:
        return schema["default"]
    if isinstance(schema.get("examples"), list) and schema["examples"]:
        return schema["examples"][0]
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            non_null = [o for o in options if not (isinstance(o, dict) and o.get("type") == "null")]
            return _value((non_null or options)[0], root, depth + 1)
    if isinstance(schema.get("allOf"), list):
        merged: dict[str, Any] = {}
        for part in schema["allOf"]:
            merged.update(resolve_ref(part, root) if isinstance(part, dict) else {})
        return _value({**merged, **{k: v for k, v in schema.items() if k != "allOf"}}, root, depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), kind[0] if kind else None)
    if kind is None and "properties" in schema:
        kind = "object"
    if kind == "object" or kind is None and "required" in schema:
        properties = schema.get("properties") or {}
        out: dict[str, Any] = {}
        for name in schema.get("required") or []:
            out[name] = _value(properties.get(name, {}), root, depth + 1)
        return out
    if kind == "array":
        count = int(schema.get("minItems") or 0)
        return [_value(schema.get("items", {}), root, depth + 1) for _ in range(count)]
    if kind == "string":
        if schema.get("format") in _FORMAT_SAMPLES:
            return _FORMAT_SAMPLES[schema["format"]]
        if "pattern" in schema:
            raise Unsatisfiable(f"string pattern {schema['pattern']!r}")
        length = int(schema.get("minLength") or 1)
        return "a" * max(1, length)
    if kind in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum"))
        if low is None:
            return 1
        value = low + 1 if "exclusiveMinimum" in schema and "minimum" not in schema else low
        return int(value) if kind == "integer" else value
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    if kind == "object" or kind is None:
        return {}
    raise Unsatisfiable(f"unknown type {kind!r}")
