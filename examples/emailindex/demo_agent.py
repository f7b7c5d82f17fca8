"""The scripted demo model written for emailindex: a rule-based email agent instead of an LLM.

MCPipeChekr's `demo` provider runs it for this server: its demo runner loads
`demo_agent.py` from the server's repository and drives `demo_model` (below)
as a pydantic-ai `FunctionModel`, so it runs through exactly the same agent,
MCP toolset, capture proxy and trace conversion as a real model; it is labelled
`scripted demo model` wherever a model is named, and its token usage is
estimated. The server itself never imports this file (it needs pydantic-ai and
MCPipeChekr, which `server.py` does not).

Why it exists: `doit loop` must run offline out of the box, and the loop only
shows something if the agent behaves like a typical tool-calling model, wasting
calls where a tool lacks a parameter and meeting the errors a tool has.

What it decides from, and nothing else: the user's prompt, the tool list the
server gave at run time (names, descriptions, parameter names, descriptions and
schemas, as `AgentInfo.function_tools`), and the tool results so far. It never
sees task ids, file names or which fix is applied, so a server change shows up in
its behaviour only through the tools' schemas and results:

- the request is read for intents ("how many", "first/earliest", "most recent",
  "just the subject and date", "summarize/history", else a lookup) and entities
  (a quoted title, a capitalised name such as "Ron Chinn", a year, a topic
  after "about");
- tools get roles by their words: a counting tool, a search tool (a full-text
  parameter), a reader (one required id); parameters are found by name and
  description (sender, date from/to, limit, offset, fields, sort order);
- "first X": with a parameter that sorts by date, one ascending query with
  limit 1; without one, it counts matches one year at a time (everything up to
  the earliest year the tool descriptions mention, else 2010, then year by year)
  until a year has hits, lists that year and picks the earliest date;
  "most recent" walks back from the current year the same way;
- "just the subject and date": asks for exactly those `fields`, and when that
  call fails retries without `fields` and says so;
- "summarize"/"history": lists the matches, reads a few emails, quotes subjects;
- "how many": the counting tool; a lookup: search, then read the best hits;
- every error a tool returned is reported in the final answer.

How it works: a plan is a generator that yields tool calls and receives their
results. Each model request replays the plan from the start, feeding it the
results recorded in the message history, and answers with the plan's next step;
so the model holds no state between requests and is deterministic.
"""

from __future__ import annotations

import json
import re
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from mcpipechekr.runners.messages import ToolResult, tool_results, user_prompt
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ThinkingPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo
from pydantic_ai.tools import ToolDefinition

FALLBACK_START_YEAR = 2010
"""Where the walk over yearly windows starts when no tool description names a year."""
MAX_PAGES = 5
"""Most pages of one listing the demo reads before answering with what it has."""
READ_AT_MOST = 4
"""Most emails (or items) it opens for a summary or a lookup."""

# --- What a plan sees and yields -------------------------------------------------------------------


@dataclass(frozen=True)
class Call:
    """One tool call the plan wants next, with the one-line thinking shown for it."""

    tool: str
    args: dict[str, Any]
    thought: str


@dataclass(frozen=True)
class Answer:
    text: str
    thought: str


Plan = Generator[Call, ToolResult, Answer]
"""A plan receives each call's `ToolResult`: `ok`, `data` (parsed JSON when it was JSON) and `text`."""

# --- The tools, by role ---------------------------------------------------------------------------

_WORD = re.compile(r"[a-z0-9]+")


def _resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    """A property schema with `$ref` and a nullable `anyOf` unwrapped."""
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target: Any = root
        for key in ref[2:].split("/"):
            target = target.get(key, {}) if isinstance(target, dict) else {}
        merged = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
        return _resolve(merged, root)
    options = [option for option in schema.get("anyOf") or [] if option.get("type") != "null"]
    if len(options) == 1:
        return {**_resolve(options[0], root), **{k: v for k, v in schema.items() if k != "anyOf"}}
    return schema


@dataclass
class Param:
    name: str
    description: str
    schema: dict[str, Any]

    @property
    def text(self) -> str:
        return f"{self.name.replace('_', ' ')} {self.description}".lower()

    def matches(self, names: Sequence[str], description: str | None = None) -> bool:
        if self.name.lower() in names:
            return True
        return description is not None and re.search(description, self.description.lower()) is not None


@dataclass
class Tool:
    """One tool as the model sees it: name, description, parameters."""

    name: str
    description: str
    params: dict[str, Param]
    required: list[str]

    @classmethod
    def from_definition(cls, definition: ToolDefinition) -> Tool:
        schema = definition.parameters_json_schema or {}
        params = {}
        for name, prop in (schema.get("properties") or {}).items():
            prop = _resolve(prop, schema)
            params[name] = Param(name, str(prop.get("description") or ""), prop)
        return cls(definition.name, definition.description or "", params, list(schema.get("required") or []))

    @property
    def text(self) -> str:
        params = [param.text for param in self.params.values()]
        return " ".join([self.name.replace("_", " "), self.description, *params])

    def find(self, names: Sequence[str], description: str | None = None) -> str | None:
        """The parameter with one of these names, else the first whose description matches."""
        for param in self.params.values():
            if param.name.lower() in names:
                return param.name
        for param in self.params.values():
            if param.matches((), description):
                return param.name
        return None

    # the parameters a search or count tool may have
    @property
    def keywords(self) -> str | None:
        return self.find(("keywords", "query", "q", "search", "text"), r"full.text|search")

    @property
    def sender(self) -> str | None:
        return self.find(("sender", "from", "author"), r"\bsender")

    @property
    def date_from(self) -> str | None:
        return self.find(("date_from", "start_date", "since", "after"), r"on or after|\bsince\b")

    @property
    def date_to(self) -> str | None:
        return self.find(("date_to", "end_date", "until", "before"), r"on or before|\buntil\b")

    @property
    def limit(self) -> str | None:
        return self.find(("limit", "max_results", "page_size", "top_k"), r"^most .* return")

    @property
    def offset(self) -> str | None:
        return self.find(("offset", "skip"), r"\bskip\b")

    @property
    def fields(self) -> str | None:
        return self.find(("fields", "columns", "select"), r"only these (columns|fields)")

    def limit_max(self, fallback: int = 50) -> int:
        name = self.limit
        maximum = self.params[name].schema.get("maximum") if name else None
        return int(maximum) if isinstance(maximum, int | float) else fallback

    def sort_by_date(self, ascending: bool) -> tuple[str, str] | None:
        """(parameter, value) that orders results by date, if the schema offers one."""
        for param in self.params.values():
            if not re.search(r"sort|order", param.text):
                continue
            values = [v for v in param.schema.get("enum") or [] if isinstance(v, str)]
            wanted, opposite = (r"asc|old|earliest", r"desc|new|latest|recent")[:: 1 if ascending else -1]
            dated = [v for v in values if "date" in v.lower() or "time" in v.lower()]
            for value in dated or values:
                if re.search(wanted, value.lower()) and not re.search(opposite, value.lower()):
                    return param.name, value
        return None

    def columns(self) -> list[str]:
        """The column names the `fields` parameter lists in its description (or enum)."""
        name = self.fields
        if name is None:
            return []
        items = self.params[name].schema.get("items") or {}
        if isinstance(items, dict) and items.get("enum"):
            return [str(v) for v in items["enum"]]
        description = self.params[name].description
        listed = description.split(":", 1)[1] if ":" in description else description
        return re.findall(r"[a-z_]+", listed.lower())


@dataclass
class Toolbox:
    """The tools with the roles a request needs: count, search, read one."""

    tools: list[Tool]

    @classmethod
    def from_definitions(cls, definitions: Sequence[ToolDefinition]) -> Toolbox:
        return cls([Tool.from_definition(definition) for definition in definitions])

    def _best(self, candidates: list[Tool], words: str) -> Tool | None:
        wanted = set(_WORD.findall(words))

        def score(tool: Tool) -> int:
            return len(wanted & set(_WORD.findall(tool.text.lower())))

        return max(candidates, key=score, default=None)

    @property
    def counter(self) -> Tool | None:
        named = [t for t in self.tools if re.search(r"\bcount", t.name.replace("_", " ").lower())]
        described = [t for t in self.tools if re.search(r"^count\b|\bhow many\b", t.description.lower())]
        return (named or described or [None])[0]

    @property
    def searcher(self) -> Tool | None:
        counter = self.counter
        candidates = [t for t in self.tools if t.keywords and t is not counter]
        return self._best(candidates, "search list find matching results page")

    @property
    def reader(self) -> Tool | None:
        candidates = [
            t
            for t in self.tools
            if len(t.required) == 1 and t.required[0].lower().endswith("id") and t is not self.counter
        ]
        return self._best(candidates, "read one complete full get by id")

    def earliest_year(self) -> int:
        """The earliest year any tool text mentions (an archive's start), else the fallback."""
        years = [int(y) for t in self.tools for y in re.findall(r"\b((?:19|20)\d{2})\b", t.text)]
        return min(years) if years else FALLBACK_START_YEAR


# --- The request ----------------------------------------------------------------------------------

_LEADING = {
    "when", "what", "which", "who", "whom", "how", "give", "list", "find", "summarize", "show", "tell",
    "is", "did", "does", "do", "the", "i", "my", "please", "was", "were", "get",
}  # fmt: skip
_STOP = _LEADING | {
    "a", "an", "and", "or", "of", "to", "in", "on", "for", "at", "by", "with", "about", "me", "it", "its",
    "him", "her", "his", "their", "that", "this", "from", "email", "emails", "message", "messages",
    "mail", "first", "date", "dates", "day", "what", "has", "have", "been", "be", "are", "mentioned",
    "mention", "mentions", "earliest", "latest", "recent", "most", "just", "only", "need", "don't",
    "each", "id", "subject", "subjects", "sent", "send", "up", "out", "many", "much", "does", "so",
}  # fmt: skip
_NAME = re.compile(r"\b([A-Z][a-z]+(?:\s+[A-Z][a-z]+)+)")


@dataclass
class Request:
    """What the demo reads from the user's prompt."""

    text: str
    title: str | None = None
    name: str | None = None
    name_is_sender: bool = False
    topic: str | None = None
    year: int | None = None
    words: list[str] = field(default_factory=list)

    @classmethod
    def parse(cls, text: str) -> Request:
        request = cls(text=text)
        quoted = re.search(r'"([^"]+)"|“([^”]+)”', text)
        if quoted:
            request.title = (quoted.group(1) or quoted.group(2)).strip()
        for match in _NAME.finditer(text if not quoted else text.replace(quoted.group(0), "")):
            parts = match.group(1).split()
            while parts and parts[0].lower() in _LEADING:
                parts.pop(0)
            if len(parts) >= 2:
                request.name = " ".join(parts)
                break
        if request.name:
            name = re.escape(request.name)
            request.name_is_sender = bool(
                re.search(rf"\b(from|by) {name}\b|{name}(?:'s)? (sent|send|wrote|write)\b", text)
                or re.search(rf"\bdid {name} (send|write)\b", text)
            )
        topic = re.search(r"\babout (?:the )?([a-z][a-z -]*?)(?=[.,;:?!]|$| from | in | during )", text)
        if topic:
            request.topic = topic.group(1).strip()
        year = re.search(r"\b((?:19|20)\d{2})\b", text)
        if year:
            request.year = int(year.group(1))
        skip = set(_WORD.findall(f"{request.name or ''} {request.topic or ''}".lower()))
        request.words = [
            w for w in re.findall(r"[a-z][a-z'-]+", text.lower()) if w not in _STOP and w not in skip
        ]
        return request

    def has(self, pattern: str) -> bool:
        return re.search(pattern, self.text, re.IGNORECASE) is not None

    @property
    def intent(self) -> str:
        if self.has(r"\bhow many\b|\bnumber of\b"):
            return "count"
        if self.has(r"\bsummar|\bhistory\b|\boverview\b"):
            return "summary"
        if self.has(r"\b(earliest|oldest)\b|\bfirst\b(?!-)"):
            return "first"
        if self.has(r"\b(most recent|latest|newest)\b"):
            return "latest"
        if self.has(r"\b(just|only)\b") and self.has(r"\blist\b|\bdon'?t need\b"):
            return "list"
        return "lookup"

    @property
    def about(self) -> str:
        """The subject of the request in words, for thinking lines and answers."""
        return self.title or self.name or self.topic or "the request"

    @property
    def scope(self) -> str:
        """`from NAME` when the request is about what someone sent, else `about SUBJECT`."""
        return f"from {self.name}" if self.name and self.name_is_sender else f"about {self.about}"


# --- Filters and calls ----------------------------------------------------------------------------


def filters(tool: Tool, request: Request, *, extra: str | None = None, dates: bool = True) -> dict[str, Any]:
    """The arguments that select what the request is about: keywords or sender, and the year asked for."""
    args: dict[str, Any] = {}
    words: list[str] = []
    if request.title:
        words.append(f'"{request.title}"')
    elif request.name and not (request.name_is_sender and tool.sender):
        words.append(request.name)
    if request.topic and request.topic != request.name:
        words.append(request.topic)
    if extra:
        words.append(extra)
    if words and tool.keywords:
        args[tool.keywords] = " ".join(words)
    if request.name and request.name_is_sender and tool.sender:
        args[tool.sender] = request.name
    if dates and request.year is not None:
        args.update(window(tool, f"{request.year}-01-01", f"{request.year}-12-31"))
    return args


def window(tool: Tool, start: str | None, end: str | None) -> dict[str, Any]:
    args = {}
    if start and tool.date_from:
        args[tool.date_from] = start
    if end and tool.date_to:
        args[tool.date_to] = end
    return args


def count_of(result: ToolResult) -> int | None:
    """The number a count (or a listing's total) reports."""
    data = result.data
    if isinstance(data, int):
        return data
    if isinstance(data, dict):
        for key in ("count", "total", "total_count", "matches"):
            if isinstance(data.get(key), int):
                return data[key]
    return None


def items_of(result: ToolResult) -> list[dict[str, Any]]:
    """The listed items of a search result: the first list of objects in it."""
    data = result.data
    if isinstance(data, list):
        return [item for item in data if isinstance(item, dict)]
    if isinstance(data, dict):
        for value in data.values():
            if isinstance(value, list) and all(isinstance(item, dict) for item in value):
                return value
    return []


def _date(item: dict[str, Any]) -> str:
    for key in ("date", "sent_at", "timestamp", "created_at"):
        if isinstance(item.get(key), str):
            return item[key]
    return ""


def _label(item: dict[str, Any]) -> str:
    parts = []
    if "id" in item:
        parts.append(f"#{item['id']}")
    if _date(item):
        parts.append(_date(item))
    who = item.get("sender_name") or item.get("sender")
    if who:
        parts.append(f"from {who}")
    subject = item.get("subject") or item.get("title")
    if subject:
        parts.append(f'"{subject}"')
    return ", ".join(parts)


def _sentences(text: str) -> list[str]:
    flat = " ".join(text.split())
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+(?=[A-Z$])", flat) if s.strip()]


def _body_sentences(item: dict[str, Any]) -> list[str]:
    body = item.get("body") or item.get("snippet") or ""
    lines = [line for line in str(body).splitlines() if line.strip()]
    # Drop a greeting line and a signature line: they carry no content.
    if lines and re.match(r"^(hi|hello|dear|hey)\b.*,$|^[A-Z][a-z]+,$", lines[0].strip(), re.IGNORECASE):
        lines = lines[1:]
    if lines and len(lines[-1].split()) <= 3:
        lines = lines[:-1]
    return _sentences(" ".join(lines))


def relevant_sentences(item: dict[str, Any], words: Sequence[str], limit: int = 3) -> list[str]:
    """Sentences of a body that share a word stem (five letters) with the question."""
    stems = {w[:5] for w in words if len(w) >= 4}
    found = []
    for sentence in _body_sentences(item):
        seen = {w[:5] for w in re.findall(r"[a-z]+", sentence.lower()) if len(w) >= 4}
        if stems & seen:
            found.append(sentence)
    return found[:limit]


# --- Plans ----------------------------------------------------------------------------------------


class Tracker:
    """Errors seen during a plan, for the final answer."""

    def __init__(self) -> None:
        self.errors: list[str] = []

    def note(self, call: Call, result: ToolResult) -> ToolResult:
        if not result.ok:
            args = json.dumps(call.args, ensure_ascii=False)
            self.errors.append(f"{call.tool}({args}) failed: {result.text}")
        return result

    def finish(self, text: str, thought: str) -> Answer:
        if self.errors:
            text += "\n\nErrors from the tools:\n" + "\n".join(f"- {error}" for error in self.errors)
        return Answer(text, thought)


def call(
    tracker: Tracker, tool: str, args: dict[str, Any], thought: str
) -> Generator[Call, ToolResult, ToolResult]:
    made = Call(tool, args, thought)
    result = yield made
    return tracker.note(made, result)


def list_all(
    tracker: Tracker, tool: Tool, args: dict[str, Any], thought: str, *, pages: int = MAX_PAGES
) -> Generator[Call, ToolResult, tuple[list[dict[str, Any]], ToolResult]]:
    """List every match, page by page while the total says more are left (at most `pages` pages)."""
    size = tool.limit_max()
    first = {**args, tool.limit: size} if tool.limit else dict(args)
    result = yield from call(tracker, tool.name, first, thought)
    items = list(items_of(result))
    total = count_of(result)
    page = 1
    while result.ok and tool.offset and total is not None and len(items) < total and page < pages:
        more = {**first, tool.offset: len(items)}
        result = yield from call(
            tracker, tool.name, more, f"{total} matches and I have {len(items)}; fetching the next page."
        )
        if not result.ok or not items_of(result):
            break
        items = items + items_of(result)
        page += 1
    return items, result


def how_many(tracker: Tracker, tools: Toolbox, request: Request) -> Plan:
    counter, searcher = tools.counter, tools.searcher
    tool = counter or searcher
    if tool is None:
        return Answer("None of the tools can count or search.", "No tool fits the request.")
    args = filters(tool, request)
    name = f"{tool.name} counts matches directly" if counter else f"{tool.name} reports a total"
    result = yield from call(tracker, tool.name, args, f"The question asks how many; {name}.")
    number = count_of(result)
    if number is None:
        return tracker.finish("I could not get a count from the tools.", "The count call gave no number.")
    scope = f" in {request.year}" if request.year else ""
    return tracker.finish(f"{number} emails {request.scope}{scope}.", f"The tool reported {number}.")


def first_or_latest(tracker: Tracker, tools: Toolbox, request: Request, *, earliest: bool) -> Plan:
    searcher = tools.searcher
    if searcher is None:
        return Answer("None of the tools can search.", "No search tool.")
    which = "earliest" if earliest else "most recent"
    base = filters(searcher, request, dates=False)
    sort = searcher.sort_by_date(ascending=earliest)
    if sort is not None:
        param, value = sort
        args = {**base, **_year_window(searcher, request), param: value}
        if searcher.limit:
            args[searcher.limit] = 1
        result = yield from call(
            tracker,
            searcher.name,
            args,
            f"I need the {which} email {request.scope}; {searcher.name} can sort by date "
            f"({param}={value}), so one query with limit 1 answers it.",
        )
        items = items_of(result)
        return _pick(tracker, request, items, earliest)
    counter = tools.counter or searcher
    if request.year is not None:
        items, _ = yield from list_all(
            tracker,
            searcher,
            {**base, **_year_window(searcher, request)},
            f"The {which} email {request.scope} in {request.year}: {searcher.name} cannot sort "
            "by date, so I list that year and compare the dates myself.",
        )
        return _pick(tracker, request, items, earliest)
    found: tuple[str | None, str | None, int] | None = None
    windows = _windows(tools, earliest)
    for position, (start, end) in enumerate(windows):
        span = f"up to {end}" if start is None else (f"from {start}" if end is None else f"{start} to {end}")
        if position == 0:
            thought = (
                f"I need the {which} email {request.scope}. {searcher.name} orders by relevance, not "
                f"by date, so I count matches one year at a time with {counter.name}, starting {span}."
            )
        else:
            thought = f"Nothing in the last window; trying {span}."
        result = yield from call(tracker, counter.name, {**base, **window(counter, start, end)}, thought)
        number = count_of(result)
        if number is None:
            return tracker.finish("I could not count matches with the tools.", "The count gave no number.")
        if number > 0:
            found = (start, end, number)
            break
    if found is None:
        return tracker.finish(f"No email {request.scope}.", "Every window was empty.")
    start, end, number = found
    items, _ = yield from list_all(
        tracker,
        searcher,
        {**base, **window(searcher, start, end)},
        f"{number} matches in that window; listing them to compare their dates.",
    )
    return _pick(tracker, request, items, earliest)


def _year_window(tool: Tool, request: Request) -> dict[str, Any]:
    if request.year is None:
        return {}
    return window(tool, f"{request.year}-01-01", f"{request.year}-12-31")


def _windows(tools: Toolbox, earliest: bool) -> list[tuple[str | None, str | None]]:
    """Yearly windows to walk: the first open towards the past (or future), then one year at a time."""
    first_year = tools.earliest_year()
    this_year = date.today().year
    if earliest:
        years = range(first_year, this_year + 1)
        return [(None if y == first_year else f"{y}-01-01", f"{y}-12-31") for y in years]
    years = range(this_year, first_year - 1, -1)
    return [(f"{y}-01-01", None if y == this_year else f"{y}-12-31") for y in years]


def _pick(tracker: Tracker, request: Request, items: list[dict[str, Any]], earliest: bool) -> Answer:
    dated = [item for item in items if _date(item)]
    if not dated:
        return tracker.finish(f"I found no dated email {request.scope}.", "The listing had no dates.")
    chosen = (min if earliest else max)(dated, key=lambda item: (_date(item), str(item.get("id", ""))))
    which = "earliest" if earliest else "most recent"
    return tracker.finish(
        f"The {which} email {request.scope} is {_label(chosen)}.",
        f"Compared {len(dated)} dates; the {which} is {_date(chosen)}.",
    )


def projection(tracker: Tracker, tools: Toolbox, request: Request) -> Plan:
    searcher = tools.searcher
    if searcher is None:
        return Answer("None of the tools can search.", "No search tool.")
    wanted = [c for c in searcher.columns() if re.search(rf"\b{re.escape(c)}s?\b", request.text.lower())]
    args = filters(searcher, request)
    items: list[dict[str, Any]] = []
    result: ToolResult | None = None
    if wanted and searcher.fields:
        items, result = yield from list_all(
            tracker,
            searcher,
            {**args, searcher.fields: wanted},
            f"Only {' and '.join(wanted)} are wanted; {searcher.name} can return just those with "
            f"{searcher.fields}.",
        )
    if result is None or not result.ok:
        reason = (
            f"The {searcher.fields} call failed, so I list without it and keep only those columns."
            if result is not None
            else f"{searcher.name} has no way to pick columns, so I list and keep only what is asked."
        )
        items, result = yield from list_all(tracker, searcher, args, reason)
    if not result.ok:
        return tracker.finish("The search failed; I have no list to give.", "Both listings failed.")
    shown = wanted or ["date", "subject"]
    rows = sorted(items, key=_date)
    lines = [" | ".join(str(item.get(column, "")) for column in shown) for item in rows]
    return tracker.finish(
        f"{len(rows)} emails about {request.about}"
        + (f" in {request.year}" if request.year else "")
        + ":\n"
        + "\n".join(f"- {line}" for line in lines),
        f"Listed {len(rows)} emails with {', '.join(shown)}.",
    )


def summary(tracker: Tracker, tools: Toolbox, request: Request) -> Plan:
    searcher, reader = tools.searcher, tools.reader
    if searcher is None:
        return Answer("None of the tools can search.", "No search tool.")
    base = filters(searcher, request)
    history = request.has(r"\bhistory\b|\bover the years\b")
    recent = request.has(r"\brecent\b|\blately\b")
    sort = searcher.sort_by_date(ascending=False) if recent else None
    args = {**base, sort[0]: sort[1]} if sort else base
    items, result = yield from list_all(
        tracker,
        searcher,
        args,
        f"To summarize {request.about} I first list the matching emails"
        + (" newest first." if sort else ", then read the most relevant ones."),
        pages=MAX_PAGES if history else 1,
    )
    if not items:
        return tracker.finish(f"I found no emails about {request.about}.", "Nothing matched.")
    by_date = sorted(items, key=_date)
    if history:
        picks = [by_date[0], by_date[len(by_date) // 2], by_date[-1]]
    else:
        picks = list(reversed(by_date))[:READ_AT_MOST]
    picks = list({id(item): item for item in picks}.values())
    read: list[dict[str, Any]] = []
    id_param = reader.required[0] if reader else None
    for item in picks:
        if reader is None or id_param is None or "id" not in item:
            read.append(item)
            continue
        result = yield from call(
            tracker, reader.name, {id_param: item["id"]}, f"Reading {_label(item)} in full for the summary."
        )
        read.append(result.data if result.ok and isinstance(result.data, dict) else item)
    lines = []
    for item in sorted(read, key=_date):
        gist = " ".join(_body_sentences(item)[:2])
        lines.append(f"- {_date(item)[:10]} {item.get('subject', '')!s}: {gist}".rstrip(": "))
    if history:
        years: dict[str, int] = {}
        for item in by_date:
            years[_date(item)[:4]] = years.get(_date(item)[:4], 0) + 1
        span = ", ".join(f"{year}: {n}" for year, n in years.items())
        head = (
            f"{request.about} appears in {len(items)} emails, first on {_date(by_date[0])[:10]} "
            f'("{by_date[0].get("subject", "")}") and most recently on {_date(by_date[-1])[:10]} '
            f'("{by_date[-1].get("subject", "")}"). Emails per year: {span}.'
        )
    else:
        head = f"The {len(read)} most recent of {len(items)} emails about {request.about}:"
    return tracker.finish(head + "\n" + "\n".join(lines), f"Summarized {len(read)} emails.")


def lookup(tracker: Tracker, tools: Toolbox, request: Request) -> Plan:
    searcher, reader = tools.searcher, tools.reader
    if searcher is None:
        return Answer("None of the tools can search.", "No search tool.")
    extra = None if request.title else next(iter(request.words), None)
    args = filters(searcher, request, extra=extra)
    thought = f"Searching for {request.about}" + (f" and '{extra}'." if extra else ".")
    result = yield from call(tracker, searcher.name, args, thought)
    items = items_of(result)
    if not items and extra:
        args = filters(searcher, request)
        thought = f"Nothing with '{extra}'; searching more broadly."
        result = yield from call(tracker, searcher.name, args, thought)
        items = items_of(result)
    if not items:
        return tracker.finish(f"I found no email about {request.about}.", "The search found nothing.")
    if request.title:
        exact = [i for i in items if str(i.get("subject", "")).lower() == request.title.lower()]
        picks = (exact or items)[:1]
    else:
        picks = items[: READ_AT_MOST - 1]
    read = []
    id_param = reader.required[0] if reader else None
    for item in picks:
        if reader is None or id_param is None or "id" not in item:
            read.append(item)
            continue
        result = yield from call(
            tracker, reader.name, {id_param: item["id"]}, f"Opening {_label(item)} to read the details."
        )
        read.append(result.data if result.ok and isinstance(result.data, dict) else item)
    parts = []
    for item in read:
        quotes = relevant_sentences(item, request.words) or _body_sentences(item)[:1]
        who = item.get("sender_name") or item.get("sender") or "unknown sender"
        address = f" <{item['sender']}>" if item.get("sender") and item.get("sender") != who else ""
        parts.append(
            f"{_label(item)} (sent by {who}{address}):\n" + "\n".join(f'  "{quote}"' for quote in quotes)
        )
    return tracker.finish("\n".join(parts), f"Answered from {len(read)} email(s).")


def plan_for(prompt: str, tools: Toolbox) -> Plan:
    """The plan for a prompt, given the tools: the one place intents map to behaviour."""
    request = Request.parse(prompt)
    tracker = Tracker()
    intent = request.intent
    if intent == "count":
        return how_many(tracker, tools, request)
    if intent in ("first", "latest"):
        return first_or_latest(tracker, tools, request, earliest=intent == "first")
    if intent == "list":
        return projection(tracker, tools, request)
    if intent == "summary":
        return summary(tracker, tools, request)
    return lookup(tracker, tools, request)


# --- The model function ---------------------------------------------------------------------------


def demo_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """The scripted model: replay the plan over the results so far and answer with its next step."""
    plan = plan_for(user_prompt(messages), Toolbox.from_definitions(info.function_tools))
    try:
        step: Call = next(plan)
        for result in tool_results(messages):
            if result.tool != step.tool:  # not this plan's history (another model made these calls)
                return ModelResponse(
                    parts=[
                        ThinkingPart("These calls are not the ones I planned; I stop here."),
                        TextPart("I could not finish the request."),
                    ]
                )
            step = plan.send(result)
    except StopIteration as done:
        answer: Answer = done.value
        return ModelResponse(parts=[ThinkingPart(answer.thought), TextPart(answer.text)])
    return ModelResponse(parts=[ThinkingPart(step.thought), ToolCallPart(step.tool, step.args)])
