"""Exploring a server for `tasks propose`: its content, read with read-only calls only.

Why: a proposed task is only worth writing when it asks about what the server
holds and its answer is real. The exploration starts where `check` stops:
argument synthesis (`check.synthesis.reach_tools`) reaches every tool a probe
may call; every result, JSON or text, is read into records
(`propose/reading.py`). Then, for a few rounds, the records found are fed back
into the tools, so a listing leads to its items and an item to its details:

- a record's key into a parameter of the same name (`isbn`), its `id` into a
  `<thing>_id` parameter;
- its name, a value several records share (an author), or a word of its text
  into a free-text parameter (`query`, `search`, …), and `--about`'s words too;
- its name into a path parameter, joined to the folder that listed it
  (`list_directory(path=docs)` → `[FILE] readme.md` → `read_file(path=docs/readme.md)`),
  and into a list parameter of names (`open_nodes(names=[…])`);
- its identifier (`Commit: 4f2a…`, a slug) into a required text parameter no
  other rule fills (`revision`): tried once, and kept for the other records
  when the server answers.

A tool whose one enum parameter synthesis gave one value is called with each of
the others (a weather tool's cities, a listing's statuses).

A tool synthesis could not reach is tried once more with the server's folder
(its command line's, or its working directory) in every path parameter, as a
server that asks for "the path of the repository" on each call wants.

Every call goes through `CheckContext.may_call`, so only tools annotated
`readOnlyHint: true` and not `destructiveHint: true` are ever called, as in
`check`. Calls are bounded (`MAX_FOLLOW_UP_CALLS`, `FOLLOW_UP_TIME_S`).

Blind spots: a parameter that takes something no record holds (a date range,
a number of lines) keeps what synthesis gave it; prose results give no records.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field
from typing import Any

import mcp_types
import orjson

from mcpipechekr.check.context import CheckContext
from mcpipechekr.check.param_values import FILEISH, PATHISH
from mcpipechekr.check.reach import MINIMAL
from mcpipechekr.check.synthesis import reach_tools
from mcpipechekr.config import Config
from mcpipechekr.errors import ServerHalt
from mcpipechekr.propose.reading import Reading, Table, is_id_name, read_result, result_text, words
from mcpipechekr.server.lifecycle import ServerUnderTest

SEARCH_WORDS = {"query", "q", "text", "search", "keyword", "keywords", "term", "terms", "pattern", "filter"}
"""Words of a string parameter that takes free text to look records up by."""
NAME_KEYS = (
    "title",
    "name",
    "subject",
    "label",
    "display_name",
    "full_name",
    "message",
    "summary",
    "headline",
)
"""Record fields that name a record for a person, best first."""
RECORDS_PER_TABLE = 4
"""Records of each table fed back into other tools."""
MAX_FOLLOW_UP_CALLS = 200
FOLLOW_UP_TIME_S = 90.0
ROUNDS = 3
MAX_PAGE = 4
MAX_SWEEP = 6
"""Values of an enum parameter called in turn at most."""
"""Pages of one listing followed at most."""
IDENTIFIER = re.compile(r"^(?:[0-9a-f]{7,64}|[0-9a-f-]{36}|[a-z0-9]+(?:[-_][a-z0-9]+)+|[A-Z]{1,5}-\d{1,6})$")
"""A value that looks like an identifier: a hash, a uuid, a slug, a ticket key."""
STOP_WORDS = frozenset(
    "about after again also because been before being between both could does during each from have into "
    "just more most other over same some such than that their them then there these they this those "
    "through under very were what when where which while will with would your".split()
)


def singular(word: str) -> str:
    if word == "people":
        return "person"
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("ches", "shes", "sses", "xes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")) and len(word) > 3:
        return word[:-1]
    return word


@dataclass(frozen=True)
class Observation:
    """A successful read-only call: the tool, its arguments and its result read as records."""

    tool: str
    arguments: dict[str, Any]
    reading: Reading
    placeholders: frozenset[str] = frozenset()
    """Arguments that hold synthesis's minimal value (`"a"`, `0`): no real entity, nothing to ask about."""
    text: str = ""

    @property
    def document(self) -> Any:
        """The result as the model is shown it: its JSON, else its text."""
        return self.reading.json if self.reading.json is not None else self.text


@dataclass
class Exploration:
    """What exploring found: the tools, the ones that may be called, and every successful call."""

    tools: list[mcp_types.Tool]
    callable: dict[str, mcp_types.Tool]
    observations: list[Observation] = field(default_factory=list)
    roots: list[str] = field(default_factory=list)
    """Folders the server was started on (its command line, its working directory): a path under one is
    shown relative to it, the folder itself not at all; the user never types them."""
    calls: int = 0


def name_key(record: dict[str, Any]) -> str | None:
    """The field that names a record for a person (`title`, `name`, …), if it has one."""
    lowered = {str(key).lower(): key for key in record}
    for key in NAME_KEYS:
        original = lowered.get(key)
        if original is not None and isinstance(record[original], str) and record[original].strip():
            return original
    for key, value in record.items():
        if isinstance(value, str) and words(key)[-1:] in (["name"], ["title"]) and value.strip():
            return key
    return None


def identifier_key(record: dict[str, Any]) -> str | None:
    """The field that identifies a record to the server (`id`, `slug`, `Commit`), if it has one."""
    for key, value in record.items():
        if is_id_name(key) and isinstance(value, str | int) and not isinstance(value, bool):
            return key
    return None


def parameters(tool: mcp_types.Tool) -> dict[str, dict[str, Any]]:
    schema = tool.input_schema if isinstance(tool.input_schema, dict) else {}
    props = schema.get("properties")
    return {str(k): v for k, v in props.items() if isinstance(v, dict)} if isinstance(props, dict) else {}


def required(tool: mcp_types.Tool) -> list[str]:
    schema = tool.input_schema if isinstance(tool.input_schema, dict) else {}
    return [name for name in schema.get("required") or [] if isinstance(name, str)]


def _types(schema: dict[str, Any]) -> set[str]:
    kinds = schema.get("type")
    found = set(kinds) if isinstance(kinds, list) else {kinds} if isinstance(kinds, str) else set()
    for option in schema.get("anyOf") or schema.get("oneOf") or []:
        if isinstance(option, dict):
            found |= _types(option)
    return found or {"string"}


def search_parameter(tool: mcp_types.Tool) -> str | None:
    """A string parameter that takes free text to find records by (`query`, `text`, `keywords`, …)."""
    for name, schema in parameters(tool).items():
        if "string" in _types(schema) and "enum" not in schema and set(words(name)) & SEARCH_WORDS:
            if not is_id_name(name) and not PATHISH.search(name):
                return name
    for name, schema in parameters(tool).items():  # `name`, `title`: a search by name
        if "string" in _types(schema) and "enum" not in schema and words(name)[-1:] in (["name"], ["title"]):
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


def server_roots(config: Config) -> list[str]:
    """Absolute folders on the server's command line, in its environment, and its working directory."""
    server = config.server
    values = [*server.args, *(server.env or {}).values(), server.cwd or ""]
    roots = []
    for value in values:
        if isinstance(value, str) and os.path.isabs(value):
            path = value.rstrip("/") or "/"
            if os.path.isdir(path) and path not in roots and path != "/":
                roots.append(path)
    return sorted(roots, key=len, reverse=True)


def explore(
    config: Config, server: ServerUnderTest, timeout_s: float, *, about: str | None = None
) -> Exploration:
    """Reach every callable tool with synthesized arguments, then feed found records back into them."""
    ctx = CheckContext(config=config, server=server, call_timeout_s=timeout_s)
    ctx.use_tools(server.list_tools(timeout_s=timeout_s))
    callable_tools = {tool.name: tool for tool in ctx.tools if ctx.may_call(tool)[0]}
    found = Exploration(ctx.tools, callable_tools, roots=server_roots(config))
    reaches = reach_tools(ctx, ctx.tools)
    seen: set[bytes] = set()

    def keep(
        tool: str, arguments: dict[str, Any], result: Any, minimal: frozenset[str]
    ) -> Observation | None:
        if result is None or result.is_error:
            return None
        obs = Observation(tool, dict(arguments), read_result(result), minimal, result_text(result))
        found.observations.append(obs)
        return obs

    def call_once(tool: str, arguments: dict[str, Any]) -> Any:
        """The call's result, counted and remembered; None when the server refused or fell over."""
        seen.add(_key(tool, arguments))
        found.calls += 1
        try:
            return server.call_tool(tool, arguments, timeout_s)
        except ServerHalt:
            ctx.recover()
        except Exception:  # a refusal of these arguments: the tool was reached before
            pass
        return None

    base: dict[str, dict[str, Any]] = {}  # what else a tool needs, without the placeholders a follow-up drops
    for name, reach in reaches.items():
        decisive = reach.decisive
        if reach.status == "reached" and decisive is not None:
            candidate = decisive.candidate
            seen.add(_key(name, candidate.arguments))
            minimal = frozenset(k for k, label in candidate.sources.items() if label == MINIMAL)
            keep(name, candidate.arguments, decisive.result, minimal)
            base[name] = {
                k: v
                for k, v in candidate.arguments.items()
                if candidate.sources.get(k) != MINIMAL or k in required(reach.tool)
            }
    for tool in callable_tools.values():  # a tool that wants the folder it works on, given as an option
        if tool.name in base or not found.roots:
            continue
        arguments = rooted(tool, found.roots[0])
        if arguments:
            base[tool.name] = arguments  # what a follow-up adds its record's values to
        if not arguments or not _complete(tool, arguments) or _key(tool.name, arguments) in seen:
            continue
        keep(tool.name, arguments, call_once(tool.name, arguments), frozenset())
    for tool, arguments in enum_sweeps(callable_tools, base):  # each city of `location`, each status…
        if _key(tool.name, arguments) in seen or found.calls >= MAX_FOLLOW_UP_CALLS:
            continue
        keep(tool.name, arguments, call_once(tool.name, arguments), frozenset())
    feeder = _Feeder(found, base, about)
    deadline = time.monotonic() + FOLLOW_UP_TIME_S
    fresh = list(found.observations)
    for _ in range(ROUNDS):
        planned = [(tool, args, why) for obs in fresh for tool, args, why in feeder.follow_ups(obs)]
        planned += feeder.about_searches() if fresh is found.observations else []
        fresh = []
        for tool, arguments, learn in planned:
            key = _key(tool.name, arguments)
            if key in seen or found.calls >= MAX_FOLLOW_UP_CALLS or time.monotonic() > deadline:
                continue
            if learn is not None and feeder.refused_pairing(tool.name, learn):
                continue
            if ctx.server_lost is not None:
                break
            seen.add(key)
            found.calls += 1
            try:
                result = server.call_tool(tool.name, arguments, timeout_s)
            except ServerHalt:
                ctx.recover()
                continue
            except Exception:  # a refusal of these arguments: the tool was reached before
                result = None
            obs = keep(tool.name, arguments, result, frozenset())
            if learn is not None:
                feeder.learned(tool.name, learn, obs is not None and not obs.reading.empty)
            if obs is not None:
                fresh.append(obs)
        if not fresh:
            break
    return found


class _Feeder:
    """The follow-up calls a result suggests, and which record fields a tool's parameters take."""

    def __init__(self, found: Exploration, base: dict[str, dict[str, Any]], about: str | None) -> None:
        self.found = found
        self.base = base
        self.about = about
        self.pairings: dict[tuple[str, str], list[bool]] = {}
        self.pool: dict[str, list[dict[str, Any]]] = {}
        """Every record each tool returned so far: values they share are searched for."""

    def refused_pairing(self, tool: str, pairing: str) -> bool:
        """Whether a (parameter, field) pairing failed twice and never worked for this tool."""
        outcomes = self.pairings.get((tool, pairing), [])
        return not any(outcomes) and len(outcomes) >= 2

    def learned(self, tool: str, pairing: str, worked: bool) -> None:
        self.pairings.setdefault((tool, pairing), []).append(worked)

    def about_searches(self) -> list[tuple[mcp_types.Tool, dict[str, Any], str | None]]:
        if not self.about:
            return []
        out = []
        for tool in self.found.callable.values():
            search = search_parameter(tool)
            if search is not None:
                out.append((tool, {**self.base.get(tool.name, {}), search: self.about}, None))
        return [(tool, args, why) for tool, args, why in out if _complete(tool, args)]

    def follow_ups(self, obs: Observation) -> list[tuple[mcp_types.Tool, dict[str, Any], str | None]]:
        out: list[tuple[mcp_types.Tool, dict[str, Any], str | None]] = self._next_page(obs)
        records: list[tuple[dict[str, Any], Table | None]] = []
        for table in obs.reading.tables:
            records += [(record, table) for record in table.records[:RECORDS_PER_TABLE]]
            pool = self.pool.setdefault(obs.tool, [])
            pool += table.records
            out += [
                (tool, {**self.base.get(tool.name, {}), search: value}, None)
                for value in shared_values(pool)
                for tool in self.found.callable.values()
                if (search := search_parameter(tool)) is not None
            ]
        if obs.reading.single:
            records.append((obs.reading.single, None))
        for record, table in records:
            for tool in self.found.callable.values():
                out += self._calls_for(tool, record, obs, table)
        return [(tool, args, why) for tool, args, why in out if _complete(tool, args)]

    def _next_page(self, obs: Observation) -> list[tuple[mcp_types.Tool, dict[str, Any], str | None]]:
        """The next page of a listing that says there is more: `page` + 1, or its cursor passed back."""
        tool = self.found.callable.get(obs.tool)
        if tool is None or not obs.reading.tables or all(t.complete for t in obs.reading.tables):
            return []
        single = obs.reading.single or {}
        for name, schema in parameters(tool).items():
            said = words(name)
            if said[-1:] == ["page"] and "integer" in _types(schema) | {"integer"}:
                current = obs.arguments.get(name, single.get(name, 1))
                if isinstance(current, int) and not isinstance(current, bool) and current < MAX_PAGE:
                    return [(tool, {**obs.arguments, name: current + 1}, None)]
            if said[-1:] == ["cursor"]:
                token = next(
                    (v for k, v in single.items() if "cursor" in words(k) or k.lower() == "next"), None
                )
                if isinstance(token, str) and token:
                    return [(tool, {**obs.arguments, name: token}, None)]
        return []

    def _calls_for(
        self, tool: mcp_types.Tool, record: dict[str, Any], obs: Observation, table: Table | None
    ) -> list[tuple[mcp_types.Tool, dict[str, Any], str | None]]:
        base = self.base.get(tool.name, {})
        params = parameters(tool)
        out: list[tuple[mcp_types.Tool, dict[str, Any], str | None]] = []
        filled: set[str] = set()
        for key, value in record.items():
            param = key_parameter(tool, key)
            if param and isinstance(value, str | int) and not isinstance(value, bool):
                if PATHISH.search(param) and isinstance(value, str) and not os.path.isabs(value):
                    value = joined(obs, value)  # a tree's `docs/readme.md`, below the folder it listed
                    if value is None:
                        continue
                out.append((tool, {**base, param: value}, None))
                filled.add(param)
        named = name_key(record)
        name = record.get(named) if named else None
        search = search_parameter(tool)
        if search and isinstance(name, str) and len(name) <= 80:
            out.append((tool, {**base, search: name}, None))
        if search:
            word = content_word(record)
            if word:
                out.append((tool, {**base, search: word}, None))
        path = record_path(obs, record)
        for param, schema in params.items():
            kinds = _types(schema)
            if param in filled or param == search or "enum" in schema:
                continue
            item_kinds = _types(schema.get("items") or {}) if "array" in kinds else set()
            if PATHISH.search(param) and path:
                if "string" in kinds:
                    out.append((tool, {**base, param: path}, None))
                elif "string" in item_kinds:
                    out.append((tool, {**base, param: [path]}, None))
            elif (
                "string" in item_kinds
                and isinstance(name, str)
                and words(param)[-1:] in (["names"], ["titles"])
            ):
                out.append((tool, {**base, param: [name]}, None))
            elif param in required(tool) and "string" in kinds and param not in base:
                for key, value in record.items():
                    if isinstance(value, str) and (is_id_name(key) or IDENTIFIER.match(value)):
                        out.append((tool, {**base, param: value}, f"{param}<-{key}"))
            elif param in required(tool) and "string" in kinds and not PATHISH.search(param):
                for (
                    key,
                    value,
                ) in record.items():  # a revision, a ref: an identifier replaces synthesis's guess
                    if isinstance(value, str) and IDENTIFIER.match(value) and is_id_name(key):
                        out.append((tool, {**base, param: value}, f"{param}<-{key}"))
        return out


def enum_sweeps(
    tools: dict[str, mcp_types.Tool], base: dict[str, dict[str, Any]]
) -> list[tuple[mcp_types.Tool, dict[str, Any]]]:
    """The other values of a reached tool's one enum parameter, each in a call of its own: the words of
    the user's vocabulary (a city, a status) the tool gives facts about."""
    out = []
    for name, arguments in base.items():
        tool = tools.get(name)
        if tool is None:
            continue
        enums = {
            param: schema["enum"]
            for param, schema in parameters(tool).items()
            if isinstance(schema.get("enum"), list) and param in arguments
        }
        if len(enums) != 1:
            continue
        ((param, values),) = enums.items()
        for value in values[:MAX_SWEEP]:
            if value != arguments[param] and isinstance(value, str | int) and not isinstance(value, bool):
                out.append((tool, {**arguments, param: value}))
    return out


def rooted(tool: mcp_types.Tool, root: str) -> dict[str, Any]:
    """Arguments that give every path parameter the server's folder (a file's path is left out)."""
    return {
        name: root
        for name, schema in parameters(tool).items()
        if PATHISH.search(name) and "string" in _types(schema) and not FILEISH.search(name)
    }


def joined(obs: Observation, relative: str) -> str | None:
    """A relative path a result gave, joined to the folder the call was given."""
    for param, value in obs.arguments.items():
        if PATHISH.search(param) and isinstance(value, str) and os.path.isabs(value):
            return value.rstrip("/") + "/" + relative.strip("/")
    return None


def record_path(obs: Observation, record: dict[str, Any]) -> str | None:
    """The path of an entry a folder listing gave: the folder's path and the entry's name (or the path
    a folder tree gave it)."""
    path = record.get("path")
    if isinstance(path, str) and path.strip():
        return path if os.path.isabs(path) else joined(obs, path)
    name = record.get("name")
    if not isinstance(name, str) or "/" in name.strip("/") and not name.startswith("/"):
        return None
    if name.startswith("/"):
        return name
    for param, value in obs.arguments.items():
        if PATHISH.search(param) and isinstance(value, str) and os.path.isabs(value):
            return value.rstrip("/") + "/" + name.strip("/")
    return None


def content_word(record: dict[str, Any]) -> str | None:
    """A telling word of a record's longest text, to search by: long, not a stop word, not its name."""
    named = name_key(record)
    texts = [v for k, v in record.items() if isinstance(v, str) and k != named and len(v) > 20]
    if not texts:
        return None
    candidates = [
        w for w in re.findall(r"[A-Za-z][a-z]{5,}", max(texts, key=len)) if w.lower() not in STOP_WORDS
    ]
    return max(candidates, key=len) if candidates else None


ENV_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")


def environment_dump(record: dict[str, Any] | None) -> bool:
    """Whether a record is a process's environment (`PATH`, `HOME`, …): what it holds is the machine's,
    so no question is asked of it and it is no content of the server's."""
    if not record or len(record) < 3:
        return False
    upper = sum(1 for key in record if ENV_NAME.match(str(key)))
    return upper >= 0.8 * len(record) and bool({"PATH", "HOME", "PWD"} & set(record))


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


def _complete(tool: mcp_types.Tool, arguments: dict[str, Any]) -> bool:
    return all(name in arguments for name in required(tool))


def _key(tool: str, arguments: dict[str, Any]) -> bytes:
    return tool.encode() + b"\0" + orjson.dumps(arguments, option=orjson.OPT_SORT_KEYS)
