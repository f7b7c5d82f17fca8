"""What a well-formed answer looks like, for the checks of check/spec_features.py: pure functions over JSON.

Each `…_problems` function takes the JSON a server sent (a dict, not the SDK's
model: those coerce wrong types) and returns what in it breaks the MCP
schema, one sentence per problem, empty when there is none. The URI-template
helpers fill a resource template (RFC 6570) with values the server offered.

Limits: only what the schema requires is checked, not what a field means (a
mimeType is a string, not necessarily a registered type), and a template is
matched against listed URIs only through its simple and `+` expressions.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any
from urllib.parse import quote

MAX_COMPLETION_VALUES = 100
"""The specification's CompleteResult: `values` "Must not exceed 100 items"."""

_EXPRESSION = re.compile(r"\{([+#./;?&]?)([^}]*)\}")
_REQUIRED_OPERATORS = ("", "+", ".", "/")
"""URI-template expressions whose variables make the path; `?`, `&`, `#` and `;` ones may stay empty."""


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


def base64_problem(data: Any, what: str) -> str | None:
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
        problem = base64_problem(item["blob"], f"{where}.blob")
        if problem:
            problems.append(problem)
    else:
        problems.append(f"{where} has neither text nor blob")
    if "mimeType" in item and item["mimeType"] is not None and not isinstance(item["mimeType"], str):
        problems.append(f"{where}.mimeType is not a string")
    return problems


def read_problems(result: dict[str, Any], uri: str) -> list[str]:
    contents = result.get("contents")
    if not isinstance(contents, list):
        return [f"{uri}: no `contents` list in the result"]
    return [
        problem
        for index, item in enumerate(contents)
        for problem in contents_problems(item, f"{uri}: contents[{index}]")
    ]


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


def block_problems(block: Any, where: str) -> list[str]:
    """What in one content block breaks the schema (text, image, audio, resource_link, resource)."""
    if not isinstance(block, dict):
        return [f"{where} is not an object"]
    kind = block.get("type")
    if kind == "text":
        return [] if isinstance(block.get("text"), str) else [f"{where} (text) has no string text"]
    if kind in ("image", "audio"):
        problems = [base64_problem(block.get("data"), f"{where} ({kind}) data")]
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
