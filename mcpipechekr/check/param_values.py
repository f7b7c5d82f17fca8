"""The values worth trying for one parameter, best first: where synthesis finds argument values.

Ranking one parameter's values (what other tools returned under a matching
key, the schema, the descriptions, the server's paths and resources, the
fallbacks) reads only the schema and the pool and never calls the server;
the argument sets (check/candidates.py) and the calls (check/synthesis.py)
build on it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcpipechekr.check.argsgen import Unsatisfiable, resolve_ref
from mcpipechekr.check.hints import described_values, generate_matching, sql_like, sql_values
from mcpipechekr.check.reach import MINIMAL
from mcpipechekr.check.sources import Found, ValuePool, words

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


@dataclass(frozen=True)
class _Value:
    value: Any
    source: str
    good: bool = True
    """False for the fallbacks (minimal value, a path offered to a parameter that did not ask for one)."""


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
