"""The server's own vocabulary: every name a description may use without meaning another server's tool.

A description speaks of far more than its parameters: the fields of its
result ("if `has_more` is true, call again"), the values of its own enums
("when operation is delete_note …"), its settings, the other tools of the same
server by name or by title ("call 'Resolve Context7 Library ID' first"). The
attack rules must not read any of these as another server's tool, and
TEF-D005 must not read them as a missing parameter. `ServerVocabulary.of`
collects them once per server, from the schemas and from what the
descriptions themselves present as results:

- tool names and titles, parameter names, outputSchema properties (nested and
  `$defs` included) and every enum or const value of any schema;
- names a description gives as part of what comes back: in a docstring
  `Returns:` section, in a sentence that says "returns"/"result"/"response"
  … "with"/"including", or next to a word that makes it data ("the
  `next_token` field", "`has_more` is true", "has_more=true").

Docstring sections (`Args:`, `Returns:`, `Raises:`, …) are read as lists, one
item a line, never as one sentence: `docstring_lines` cuts them so.

Limits: a result field that no schema declares and no description presents
as data is not known; a name that only a description of another tool
mentions, in passing, counts as the server's own once presented as data
anywhere.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from mcpipechekr.artifacts.tools_snapshot import ToolDefinition
from mcpipechekr.lint._text import all_property_names, schema_properties

_F = re.IGNORECASE
# A name as code writes it: snake_case, camelCase, or a dotted path of them.
CODE_NAME = r"[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+|[a-z][a-z0-9]*(?:[A-Z][a-z0-9]*)+"
_NAME = re.compile(rf"`?\b({CODE_NAME})\b`?")
SECTION = re.compile(
    r"^[ \t]*(Args|Arguments|Parameters|Params|Returns?|Yields?|Raises|Errors|Examples?|Notes?|Output|"
    r"Response)[ \t]*:[ \t]*$",
    re.IGNORECASE | re.MULTILINE,
)
_RESULT_SECTIONS = {"return", "returns", "yield", "yields", "output", "response"}
PARAMETER_SECTIONS = {"args", "arguments", "parameters", "params"}
# "returns … with X", "the response includes X", "result: X"
_RESULT_SENTENCE = re.compile(
    r"\b(?:returns?|returned|returning|results?|responses?|outputs?|yields?|reports?|contains?|includ(?:es|ing))\b",
    _F,
)
# What makes a name data: after it "=x", ": true", "is true/empty/set …", "field", "flag", "setting" …;
# before it "the field …". Matched at each name _NAME finds (one pass, no backtracking over the text).
_DATA_AFTER = re.compile(
    r"`?[ \t]*(?:=[ \t]*\w|:[ \t]*(?:true|false|null|\d)|"
    r"(?:is|are|was|becomes|equals)[ \t]+(?:not[ \t]+)?(?:true|false|null|none|empty|set|present|missing|"
    r"absent|zero|non-?empty|an?[ \t]+\w|\d)|[`'\"]?[ \t]*(?:field|flag|key|property|attribute|column|value|"
    r"status|entry|marker|setting|config)s?\b)",
    _F,
)
_DATA_BEFORE = re.compile(r"\b(?:field|flag|key|property|attribute|column|status|marker)s?[ \t]+`?$", _F)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n")


@dataclass(frozen=True)
class ServerVocabulary:
    """Names the server's own descriptions may use: lower-cased for comparison."""

    names: frozenset[str]
    """Tools, titles, parameters, output fields, enum values, and names presented as result data."""
    parameters: frozenset[str]
    """Every parameter name of every tool."""

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.strip("`'\"").lower() in self.names

    @classmethod
    def of(cls, tools: Sequence[ToolDefinition]) -> ServerVocabulary:
        names: set[str] = set()
        parameters: set[str] = set()
        for tool in tools:
            names.add(tool.name)
            if tool.title:
                names.add(tool.title)
            params = schema_properties(tool.input_schema)
            parameters.update(params)
            names.update(all_property_names(tool.input_schema))
            names.update(all_property_names(tool.output_schema))
            names.update(_values(tool.input_schema))
            names.update(_values(tool.output_schema))
            for text in _texts(tool):
                names.update(result_names(text))
        return cls(frozenset(n.lower() for n in names), frozenset(parameters))


def _texts(tool: ToolDefinition) -> Iterator[str]:
    yield tool.description or ""
    for prop in schema_properties(tool.input_schema).values():
        if isinstance(prop.get("description"), str):
            yield prop["description"]


def _values(schema: Any) -> Iterator[str]:
    """Every enum and const value anywhere in a schema, as text."""
    if isinstance(schema, dict):
        for value in schema.get("enum") or []:
            if isinstance(value, str | int | float):
                yield str(value)
        if isinstance(schema.get("const"), str | int | float):
            yield str(schema["const"])
        for value in schema.values():
            yield from _values(value)
    elif isinstance(schema, list):
        for value in schema:
            yield from _values(value)


def sections(text: str) -> Iterator[tuple[str, int, int]]:
    """(section name lower-cased, start, end) of each docstring section (`Args:` … up to the next one)."""
    heads = list(SECTION.finditer(text))
    for index, head in enumerate(heads):
        end = heads[index + 1].start() if index + 1 < len(heads) else len(text)
        yield head.group(1).lower(), head.end(), end


def result_names(text: str) -> set[str]:
    """Code names a description presents as part of the tool's result or as data, never as a tool."""
    found = set()
    for name, start, end in sections(text):
        if name in _RESULT_SECTIONS:
            found.update(m.group(1) for m in _NAME.finditer(text, start, end))
    for match in _NAME.finditer(text):
        start, end = match.span(1)
        as_data = _DATA_AFTER.match(text, end) or _DATA_BEFORE.search(text, max(0, start - 20), start)
        if as_data and not in_tool_role(text, start, end):
            found.add(match.group(1))
    position = 0
    for cut in [*_SENTENCE_END.finditer(text), None]:
        sentence = text[position : cut.start() if cut else len(text)]
        if _RESULT_SENTENCE.search(sentence):
            for m in _NAME.finditer(sentence):
                called = _CALLED.search(sentence, max(0, m.start(1) - 20), m.start(1))
                if (
                    not called
                    and not _TOOL_AFTER.match(sentence[m.end(1) : m.end(1) + 40])
                    and not (ARGUMENT_AFTER.match(sentence[m.end(1) : m.end(1) + 20]))
                ):
                    found.add(m.group(1))
        position = cut.end() if cut else len(text)
    return found


def docstring_items(text: str) -> Iterable[tuple[str, int, int]]:
    """(section, start, end) of every line of a docstring section: each item read on its own."""
    for name, start, end in sections(text):
        position = start
        for line in text[start:end].split("\n"):
            if line.strip():
                yield name, position, position + len(line)
            position += len(line) + 1


_CALLED = re.compile(r"\b(?:call|calls|calling|use|using|invoke|invoking|run|running)\s+[`'\"]?$", _F)
ARGUMENT_AFTER = re.compile(
    r"^[`'\"]?\s*(?:(?:parameter|argument|arg|param|option|input|filter)s?\b|=)", re.IGNORECASE
)
"""A word after a name that makes it an argument: "the `limit` parameter", "limit=10"."""
_TOOL_BEFORE = re.compile(
    r"\b(?:call|calls|calling|use|uses|using|invoke|invokes|invoking|run|runs|running|with|via|through|"
    r"prefer|avoid|over|of)\s+(?:the\s+)?[`'\"]?$|\w's\s+[`'\"]?$",
    _F,
)
_TOOL_AFTER = re.compile(
    r"^[`'\"]?(?:\(|\s+(?:mcp\s+)?(?:tool|function|server|integration|plugin|connector|command)s?\b|"
    r"\s+(?:is|are|gets?)\s+(?:being\s+)?(?:used|called|invoked|run|executed|deprecated|broken|unsafe)\b|"
    r"\s+(?:calls?|runs|executes|fires|is\s+about\s+to)\b)",
    _F,
)


def in_tool_role(text: str, start: int, end: int) -> bool:
    """Whether the name at text[start:end] is used as a tool: called, used, named a tool, or called with (…).

    "call send_email", "the send_email tool", "when send_email is used", "send_email(…)" are; a name
    in "if has_more is true", "when operation is delete_note" or "cursor: the next_token" is not.
    """
    before = _TOOL_BEFORE.search(text, max(0, start - 30), start)
    return bool(before or _TOOL_AFTER.match(text[end : end + 40]))
