"""Addressing values inside a tool result: JSON Pointers, and `${steps.ID.path}` references.

Both address the same document: the CallToolResult as the wire carries it
(`content`, `structuredContent`, `isError`, `_meta`), so a case author reads one
raw result and can write either form. A JSON-RPC error has no result; its
document is `{"error": {"code", "message", "data"}}`.

- A JSON Pointer (RFC 6901) is for expectations: `/structuredContent/emails/0/id`,
  `/content/0/text`. `~1` is `/` and `~0` is `~` inside a key; `""` is the
  whole document.
- A `${steps.ID.a.b.0}` reference is for arguments of a later step: a dotted path
  into the result of the step `ID` of the same case (digits index lists). A string
  that is exactly one reference takes the referenced JSON value with its type (an
  id stays a number); a reference inside longer text is written into it (strings
  as they are, anything else as compact JSON). `$${` writes a literal `${`.
  Keys that contain a dot cannot be reached by a reference; copy them with a
  pointer-based expectation instead.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import orjson

_MISSING = object()
REFERENCE = re.compile(r"\$\$\{|\$\{([^}]*)\}")
_STEP_REFERENCE = re.compile(r"^steps\.([A-Za-z0-9][A-Za-z0-9_-]*)((?:\.[^.]+)*)$")


class PointerError(ValueError):
    """A JSON Pointer that is malformed, or that leads nowhere in the document."""


def check_pointer(pointer: str) -> str:
    """Validate the syntax of a JSON Pointer (for the cases file's models); return it unchanged."""
    if pointer and not pointer.startswith("/"):
        raise ValueError(f"JSON Pointer '{pointer}' must start with '/' (e.g. /structuredContent/total)")
    if re.search(r"~(?![01])", pointer):
        raise ValueError(f"JSON Pointer '{pointer}' has a '~' not followed by 0 or 1 (write ~0 for '~')")
    return pointer


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def resolve_pointer(document: Any, pointer: str) -> Any:
    """The value at `pointer`; raises PointerError naming the first step that leads nowhere."""
    check_pointer(pointer)
    if pointer == "":
        return document
    value = document
    walked = ""
    for raw in pointer[1:].split("/"):
        token = _unescape(raw)
        if isinstance(value, Mapping):
            if token not in value:
                raise PointerError(f"{walked or 'the result'} has no key '{token}'")
            value = value[token]
        elif isinstance(value, list):
            if not token.isdigit() or (len(token) > 1 and token.startswith("0")):
                raise PointerError(f"{walked or 'the result'} is a list; '{token}' is not an index")
            index = int(token)
            if index >= len(value):
                raise PointerError(f"{walked or 'the result'} has {len(value)} item(s), no index {index}")
            value = value[index]
        else:
            raise PointerError(f"{walked or 'the result'} is {describe_value(value)}, not an object or list")
        walked += "/" + raw
    return value


def describe_value(value: Any, limit: int = 80) -> str:
    """A short rendering of a value for a failure reason: JSON, cut to `limit` characters."""
    text = orjson.dumps(value, default=str).decode()
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --- ${steps.ID.path} references ------------------------------------------------------------------


def step_references(value: Any) -> list[tuple[str, str]]:
    """Every `${...}` reference in a JSON value, as (whole reference text, body); `$${` is skipped."""
    found: list[tuple[str, str]] = []
    if isinstance(value, str):
        for match in REFERENCE.finditer(value):
            if match.group(1) is not None:
                found.append((match.group(0), match.group(1)))
    elif isinstance(value, Mapping):
        for item in value.values():
            found.extend(step_references(item))
    elif isinstance(value, list):
        for item in value:
            found.extend(step_references(item))
    return found


def parse_reference(body: str) -> tuple[str, list[str]]:
    """`steps.create.structuredContent.id` -> ('create', ['structuredContent', 'id']).

    Raises ValueError when the text is not a step reference.
    """
    match = _STEP_REFERENCE.match(body.strip())
    if match is None:
        raise ValueError(
            f"reference '${{{body}}}' is not of the form ${{steps.STEP_ID.path.to.value}} "
            "(write $${ for a literal '${')"
        )
    path = [part for part in match.group(2).split(".") if part]
    return match.group(1), path


def _walk_dotted(document: Any, step_id: str, path: list[str]) -> Any:
    value = document
    for depth, part in enumerate(path):
        here = ".".join(path[:depth]) or "the result"
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            raise PointerError(f"step '{step_id}': {here} has no '{part}'")
    return value


def substitute(value: Any, documents: Mapping[str, Any]) -> Any:
    """Replace `${steps.ID.path}` references in a JSON value with values from earlier steps' results.

    `documents` maps step ids to their result documents. Raises PointerError when
    a reference names a step that has not run or a path its result lacks.
    """
    if isinstance(value, Mapping):
        return {key: substitute(item, documents) for key, item in value.items()}
    if isinstance(value, list):
        return [substitute(item, documents) for item in value]
    if not isinstance(value, str) or "${" not in value:
        return value
    whole = REFERENCE.fullmatch(value)
    if whole is not None and whole.group(1) is not None:
        return _lookup(whole.group(1), documents)

    def one(match: re.Match[str]) -> str:
        if match.group(1) is None:
            return "${"
        found = _lookup(match.group(1), documents)
        return found if isinstance(found, str) else orjson.dumps(found, default=str).decode()

    return REFERENCE.sub(one, value)


def _lookup(body: str, documents: Mapping[str, Any]) -> Any:
    try:
        step_id, path = parse_reference(body)
    except ValueError as exc:
        raise PointerError(str(exc)) from None
    if step_id not in documents:
        raise PointerError(f"reference '${{{body}}}': step '{step_id}' has no result (it did not run)")
    return _walk_dotted(documents[step_id], step_id, path)


# --- the documents pointers address -----------------------------------------------------------------


def result_document(result: Any) -> Any:
    """A CallToolResult as the JSON the wire carries (`structuredContent`, `isError`, …): the pointer root."""
    return result.model_dump(mode="json", by_alias=True, exclude_none=True)


def error_document(code: int, message: str, data: Any = None) -> dict[str, Any]:
    """The pointer root of a JSON-RPC error answer, which has no result."""
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"error": error}


def result_text(result: Any) -> str:
    """Every text block of a result, joined by newlines: what `contains` and the text checks read."""
    return "\n".join(block.text for block in result.content if getattr(block, "type", None) == "text")
