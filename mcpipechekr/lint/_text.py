"""Words from tool definitions: the one tokenizer the overlap score and the lexical selector share.

Names are split at `_`, `-`, `.` and camelCase humps, so `query_email_database`
and `queryEmailDatabase` yield the same words. Words are lower-cased, common
English function words are dropped, and a plural `s` and `-ing`/`-ed` endings
are stripped (`emails` -> `email`, `returning` -> `return`): cheap stemming that
matches what a reader would call the same word, without a stemmer dependency.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

_WORD = re.compile(r"[A-Za-z][a-z]+|[A-Z]+(?![a-z])|[a-z]+|\d+")
STOPWORDS = frozenset(
    """a about above after again all also an and any are as at be because been before being below between
    both but by can could did do does doing down during each few for from further had has have having he her
    here hers him his how i if in into is it its itself just me more most my no nor not now of off on once
    only or other our out over own same she should so some such than that the their them then there these
    they this those through to too under until up very was we were what when where which while who whom why
    will with would you your yours one e g eg ie etc""".split()
)


def _stem(word: str) -> str:
    """Strip a plural `s` and an `-ing`/`-ed` ending from longer words: `returning` -> `return`."""
    if len(word) > 6 and word.endswith("ing"):
        word = word[:-3]
    elif len(word) > 5 and word.endswith("ed") and not word.endswith("eed"):
        word = word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    return word


def words(text: str | None) -> list[str]:
    """Content words of a text or identifier, in order, repeated as they occur."""
    if not text:
        return []
    out = []
    for match in _WORD.finditer(text):
        word = match.group(0).lower()
        if word in STOPWORDS or len(word) < 2:
            continue
        word = _stem(word)
        out.append(word)
    return out


def schema_properties(schema: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    """Top-level properties of an object schema (what a tool's arguments are)."""
    props = (schema or {}).get("properties")
    return (
        {str(k): v if isinstance(v, dict) else {} for k, v in props.items()}
        if isinstance(props, dict)
        else {}
    )


def all_property_names(schema: Any) -> Iterator[str]:
    """Every property name anywhere in a JSON Schema, `$defs` included."""
    if isinstance(schema, dict):
        props = schema.get("properties")
        if isinstance(props, dict):
            yield from (str(name) for name in props)
        for value in schema.values():
            yield from all_property_names(value)
    elif isinstance(schema, list):
        for value in schema:
            yield from all_property_names(value)


def tool_text(definition: Any, *, with_parameters: bool = True) -> str:
    """Name, description and (optionally) parameter names and descriptions as one text."""
    parts = [definition.name, definition.title or "", definition.description or ""]
    if with_parameters:
        for name, prop in schema_properties(definition.input_schema).items():
            parts.append(name)
            if isinstance(prop.get("description"), str):
                parts.append(prop["description"])
    return "\n".join(parts)
