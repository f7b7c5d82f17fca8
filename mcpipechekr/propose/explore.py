"""Exploring a server for `tasks propose`: real entities and values, from read-only calls only.

Why: a proposed task is only worth writing when its answer is real. The
exploration starts where `check` stops: argument synthesis
(`check.synthesis.reach_tools`) reaches every tool a probe may call, then a
few more calls feed the records it found back into the tools: a search
parameter gets a record's name, a parameter named like a record's key (`isbn`,
or `recipe_id` for a record's `id`) gets that key's value. Every call goes
through `CheckContext.may_call`, so only tools annotated `readOnlyHint: true`
and not `destructiveHint: true` are ever called, as in `check`.

Blind spots: a result that is plain text (not JSON, no structuredContent) is
kept for no template; parameters that match no record key get only what
synthesis gave them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import mcp_types
import orjson

from mcpipechekr.check.context import CheckContext
from mcpipechekr.check.synthesis import MINIMAL, reach_tools
from mcpipechekr.config import Config
from mcpipechekr.errors import ServerHalt
from mcpipechekr.server.lifecycle import ServerUnderTest

SEARCH_WORDS = {"query", "q", "text", "search", "keyword", "keywords", "term", "terms", "name", "title"}
"""Words of a string parameter that takes free text to look records up by."""
ID_WORDS = {"id", "key", "uuid", "slug", "code", "isbn", "sku", "number"}
NAME_KEYS = ("title", "name", "subject", "label", "display_name", "full_name")
"""Record fields that name a record for a person, best first."""
RECORDS_PER_LIST = 3
"""Records of each list fed back into other tools."""
MAX_FOLLOW_UP_CALLS = 40


def words(name: str) -> list[str]:
    """`sender_name` → [sender, name]; `recipeId` → [recipe, id]."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return [word.lower() for word in re.split(r"[^A-Za-z0-9]+", spaced) if word]


def singular(word: str) -> str:
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("ches", "shes", "sses", "xes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith("ss") and len(word) > 3:
        return word[:-1]
    return word


@dataclass(frozen=True)
class Observation:
    """A successful read-only call: the tool, its arguments and its result as JSON."""

    tool: str
    arguments: dict[str, Any]
    document: Any
    placeholders: frozenset[str] = frozenset()
    """Arguments that hold synthesis's minimal value (`"a"`, `0`): no real entity, nothing to ask about."""


@dataclass(frozen=True)
class RecordList:
    """Records (mappings) a result holds: at its top, or under a key (`books`, `items`)."""

    observation: Observation
    key: str | None
    records: list[dict[str, Any]]


@dataclass
class Exploration:
    """What exploring found: the tools, the ones that may be called, and every successful call."""

    tools: list[mcp_types.Tool]
    callable: dict[str, mcp_types.Tool]
    observations: list[Observation] = field(default_factory=list)

    def record_lists(self) -> list[RecordList]:
        return [found for obs in self.observations if (found := record_list(obs)) is not None]


def document_of(result: mcp_types.CallToolResult) -> Any:
    """The result as JSON: structuredContent, else the first text block that parses; None for text."""
    if result.structured_content is not None:
        return result.structured_content
    for block in result.content:
        if isinstance(block, mcp_types.TextContent):
            try:
                return orjson.loads(block.text)
            except orjson.JSONDecodeError:
                return None
    return None


def record_list(obs: Observation) -> RecordList | None:
    """The first list of mappings in a result, at its top or one key down."""
    doc = obs.document
    if _records(doc):
        return RecordList(obs, None, doc)
    if isinstance(doc, dict):
        for key, value in doc.items():
            if _records(value):
                return RecordList(obs, str(key), value)
    return None


def _records(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(item, dict) for item in value)


def name_key(record: dict[str, Any]) -> str | None:
    """The field that names a record for a person (`title`, `name`, …), if it has one."""
    for key in NAME_KEYS:
        if isinstance(record.get(key), str) and record[key].strip():
            return key
    for key, value in record.items():
        if isinstance(value, str) and words(key)[-1:] in (["name"], ["title"]) and value.strip():
            return key
    return None


def is_id_name(name: str) -> bool:
    parts = words(name)
    return bool(parts) and parts[-1] in ID_WORDS


def parameters(tool: mcp_types.Tool) -> dict[str, dict[str, Any]]:
    schema = tool.input_schema if isinstance(tool.input_schema, dict) else {}
    props = schema.get("properties")
    return {str(k): v for k, v in props.items() if isinstance(v, dict)} if isinstance(props, dict) else {}


def required(tool: mcp_types.Tool) -> list[str]:
    schema = tool.input_schema if isinstance(tool.input_schema, dict) else {}
    return [name for name in schema.get("required") or [] if isinstance(name, str)]


def search_parameter(tool: mcp_types.Tool) -> str | None:
    """A string parameter that takes free text to find records by (`query`, `text`, `keywords`, …)."""
    for name, schema in parameters(tool).items():
        if (
            schema.get("type") in ("string", None)
            and "enum" not in schema
            and set(words(name)) & SEARCH_WORDS
        ):
            if not is_id_name(name):
                return name
    return None


def key_parameter(tool: mcp_types.Tool, key: str) -> str | None:
    """The parameter that takes a record's `key`: the same name, or `<thing>_id` for a record's `id`."""
    key_words = words(key)
    for name in parameters(tool):
        name_words = words(name)
        if name_words == key_words:
            return name
        if is_id_name(key) and len(key_words) == 1 and name_words[-1:] == key_words:
            return name
    return None


def explore(config: Config, server: ServerUnderTest, timeout_s: float) -> Exploration:
    """Reach every callable tool with synthesized arguments, then feed found records back into them."""
    ctx = CheckContext(config=config, server=server, call_timeout_s=timeout_s)
    ctx.use_tools(server.list_tools(timeout_s=timeout_s))
    callable_tools = {tool.name: tool for tool in ctx.tools if ctx.may_call(tool)[0]}
    found = Exploration(ctx.tools, callable_tools)
    reaches = reach_tools(ctx, ctx.tools)
    seen: set[bytes] = set()

    def keep(
        tool: str, arguments: dict[str, Any], result: mcp_types.CallToolResult | None, minimal: frozenset[str]
    ) -> None:
        if result is None or result.is_error:
            return
        document = document_of(result)
        if document is not None:
            found.observations.append(Observation(tool, dict(arguments), document, minimal))

    for name, reach in reaches.items():
        decisive = reach.decisive
        if reach.status == "reached" and decisive is not None:
            candidate = decisive.candidate
            seen.add(_key(name, candidate.arguments))
            minimal = frozenset(k for k, label in candidate.sources.items() if label == MINIMAL)
            keep(name, candidate.arguments, decisive.result, minimal)
    base = {  # what else a tool needs, without the placeholders a follow-up replaces or drops
        name: {
            k: v
            for k, v in reach.decisive.candidate.arguments.items()
            if reach.decisive.candidate.sources.get(k) != MINIMAL or k in required(reach.tool)
        }
        for name, reach in reaches.items()
        if reach.status == "reached" and reach.decisive is not None
    }
    calls = 0
    for listing in found.record_lists():
        shared = shared_values(listing.records)
        for record in [*listing.records[:RECORDS_PER_LIST], *({"": value} for value in shared)]:
            for tool in callable_tools.values():
                for arguments in _follow_ups(tool, record, base.get(tool.name, {})):
                    key = _key(tool.name, arguments)
                    if key in seen or calls >= MAX_FOLLOW_UP_CALLS or ctx.server_lost is not None:
                        continue
                    seen.add(key)
                    calls += 1
                    try:
                        result = server.call_tool(tool.name, arguments, timeout_s)
                    except ServerHalt:
                        ctx.recover()
                        continue
                    except Exception:  # a refusal of these arguments: the tool was reached before
                        continue
                    keep(tool.name, arguments, result, frozenset())
    return found


def shared_values(records: list[dict[str, Any]], limit: int = 2) -> list[str]:
    """Short strings two records or more share (an author, a sender): search text that finds several."""
    counts: dict[str, int] = {}
    for record in records:
        for key, value in record.items():
            if (
                isinstance(value, str)
                and 2 < len(value) <= 60
                and not is_id_name(key)
                and key != name_key(record)
            ):
                counts[value] = counts.get(value, 0) + 1
    return sorted((value for value, n in counts.items() if n > 1), key=lambda v: (-counts[v], v))[:limit]


def _follow_ups(tool: mcp_types.Tool, record: dict[str, Any], base: dict[str, Any]) -> list[dict[str, Any]]:
    """Arguments that look the record up with this tool: by its key, or its name as search text.

    A record `{"": value}` stands for a value several records share: it is only searched for.
    Sets that leave a required parameter out are dropped.
    """
    out = []
    search = search_parameter(tool)
    if "" in record:
        if search:
            out.append({**base, search: record[""]})
    else:
        for key, value in record.items():
            param = key_parameter(tool, key)
            if param and isinstance(value, str | int) and not isinstance(value, bool):
                out.append({**base, param: value})
        named = name_key(record)
        if search and named and len(str(record[named])) <= 80:
            out.append({**base, search: record[named]})
    required_names = required(tool)
    return [args for args in out if all(name in args for name in required_names)]


def _key(tool: str, arguments: dict[str, Any]) -> bytes:
    return tool.encode() + b"\0" + orjson.dumps(arguments, option=orjson.OPT_SORT_KEYS)
