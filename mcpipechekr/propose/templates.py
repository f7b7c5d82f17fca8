"""Offline proposals: the wording they share, and the order they are tried in.

A `Proposal` is a task before it is verified: its prompt, its reference calls,
its expected answer, and `derive`, the rule that computes that answer from
the results of the reference calls (the record named in the prompt, its
field; the records that pass a filter, counted). `verify.py` replays the calls
on a fresh server and applies `derive` again, so an answer is only written
when the server gives it again, by the same reading.

The shapes themselves are in `shapes.py`. Words here are the user's: a
record is named by its name or title as the data writes it, a folder or file
by its path below the folder the server was started on, a field by its name
in words (`entityType` → "entity type"). No tool name, parameter name or
identifier the user could not know is written into a prompt
(`leaks`); a proposal whose prompt would hold one is dropped.

The order proposals are verified in (`interleave`) makes a short list varied:
one tool after another, within a tool one shape after another, the best of
each first, one in three needing two calls or more, those about `--about`
ahead of the rest.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mcpipechekr.propose.explore import (
    IDENTIFIER,
    NAME_KEYS,
    SEARCH_WORDS,
    Exploration,
    Observation,
    parameters,
    singular,
)
from mcpipechekr.propose.reading import Reading, Table, is_id_name, words

TIME_WORDS = {"time", "timestamp", "date", "created", "updated", "modified", "at", "when", "ts"}
"""Words of a field's name that say it holds a moment (a number under one is Unix time)."""

Derive = Callable[[list[Reading]], Any]

VERBS = {
    "get", "read", "fetch", "show", "describe", "lookup", "find", "list", "search", "query", "count",
    "number", "total", "by", "database", "db", "all", "details", "detail", "info", "one", "open", "with",
}  # fmt: skip
GENERIC = {
    "history", "list", "results", "result", "items", "item", "data", "output", "found", "all", "matching",
    "match", "matches", "total", "showing",
}  # fmt: skip
CHAIN_EVERY = 3
"""One proposal in this many, tried first, needs two calls or more."""
MAX_QUOTED = 80
"""Longest string value a template asks for or quotes."""
SHAPES = ("lookup", "count", "filter-count", "list", "superlative", "comparison", "chain", "negative")


@dataclass
class Proposal:
    """A task before it is verified and written, with the shape that made it."""

    prompt: str
    expected_tool: str
    expected_result: Any
    reference_calls: list[tuple[str, dict[str, Any]]]
    tags: list[str]
    template: str
    slug_hint: str
    task_type: str = "deterministic"
    min_calls: int | None = None
    derive: Derive | None = None
    """Computes the answer from the readings of the reference calls' results; None: the answer must be a
    value of the last result (a model's proposal)."""
    facts: dict[str, Any] = field(default_factory=dict)
    """What the question rests on, for a model that rewords it: the records named, the field, the answer."""
    weight: float = 1.0
    """Order among proposals of one shape: higher first (varied fields, answers that are not 0 or 1)."""

    def signature(self) -> str:
        return self.prompt.lower()


def phrase(name: str) -> str:
    return " ".join(words(name))


def field_phrase(name: str, value: Any = None) -> str:
    """A field as a noun: `joined` (a date) → "joined date", `entityType` → "entity type"."""
    said = phrase(name)
    if said.endswith("ed") and " " not in said and isinstance(value, str):
        return f"{said} date"
    return said


def quoted(value: Any) -> str:
    return f'"{value}"' if isinstance(value, str) else str(value)


def plural(noun: str) -> str:
    head, _, last = noun.rpartition(" ")
    if last == "person":
        return f"{head} people".strip()
    if last.endswith("us"):
        return f"{head} {last}es".strip()  # status → statuses
    if last.endswith("s") and not last.endswith("ss"):
        return noun
    if last.endswith("y") and last[-2:-1] not in "aeiou":
        last = last[:-1] + "ies"
    elif last.endswith(("ch", "sh", "ss", "x")):
        last += "es"
    else:
        last += "s"
    return f"{head} {last}".strip()


def article(noun: str) -> str:
    return "an" if noun[:1] in "aeiou" else "a"


class Wording:
    """The nouns, paths and names of one exploration, as a user says them."""

    def __init__(self, found: Exploration) -> None:
        self.found = found
        tool_words = [set(words(name)) for name in found.callable] or [set()]
        self.prefix = set.intersection(*tool_words) if len(tool_words) > 1 else set()

    def is_root(self, value: str) -> bool:
        return value.rstrip("/") in self.found.roots

    def relative(self, value: str) -> str | None:
        """A path as the user says it: below a root, relative to it; the root itself ""; else None."""
        if not os.path.isabs(value):
            return None
        clean = value.rstrip("/")
        for root in self.found.roots:
            if clean == root:
                return ""
            if clean.startswith(root + "/"):
                return clean[len(root) + 1 :]
        return None

    def tool_noun(self, tool: str) -> str:
        kept = [w for w in words(tool) if w not in VERBS and w not in self.prefix]
        return singular(" ".join(kept[-2:])) if kept else "item"

    def noun(self, obs: Observation, table: Table) -> str:
        """What a table's records are: the result's own label or key, else the tool's name."""
        if any(
            str(record.get("type", "")).lower() in ("file", "dir", "directory") for record in table.records
        ):
            return "entry"
        if (
            not table.label
            and all(list(record) == ["name"] for record in table.records)
            and self.of_file(obs)
        ):
            return "line"  # a text file read: its lines
        names = {str(key).lower() for record in table.records[:1] for key in record if is_name_key(key)}
        for source in (table.label, table.key):
            kept = [w for w in words(source) if w not in GENERIC and not w.isdigit()]
            if kept and len(kept) <= 3 and source.lower() not in names:
                return singular(kept[-1])
        return self.tool_noun(obs.tool)

    def of_file(self, obs: Observation) -> bool:
        """Whether the call was given a file's path (a name with an extension) below a root."""
        return any(
            isinstance(v, str) and bool(rel := self.relative(v)) and "." in rel.rsplit("/", 1)[-1]
            for v in obs.arguments.values()
        )

    def context(self, obs: Observation, *, listing: bool) -> str | None:
        """` in the folder "docs"`: the call's arguments read out; None when one cannot be said."""
        params = {}
        for tool in self.found.tools:
            if tool.name == obs.tool:
                params = parameters(tool)
        parts = []
        for name, value in obs.arguments.items():
            schema = params.get(name, {})
            if name in obs.placeholders:
                return None
            if value in (None, "", [], {}) or is_paging(name):
                continue
            if schema.get("default") == value:
                continue
            if isinstance(value, str) and (rel := self.relative(value)) is not None:
                if rel:
                    kind = "file" if "." in rel.rsplit("/", 1)[-1] else "folder"
                    parts.append(f'in the {kind} "{rel}"')
                continue
            if isinstance(value, str) and "enum" in schema and len(value) <= 30:
                parts.append(f'with {phrase(name)} "{value}"')
                continue
            return None
        return (" " + " and ".join(parts)) if parts else ""

    def header(self, table: Table, noun: str) -> str:
        """` in the unstaged changes`: the heading a text result gave its listing, when it says more than
        the noun (and names no identifier)."""
        kept = [w for w in words(table.key) if w not in GENERIC]
        if not kept or len(kept) > 4 or any(w.isdigit() or IDENTIFIER.match(w) for w in kept):
            return ""
        if [singular(w) for w in kept] == [noun] or kept == words(table.label):
            return ""
        return f" in the {' '.join(words(table.key))}"

    def leaks(self, prompt: str, obs_list: list[Observation]) -> bool:
        """Whether a prompt names a tool, a parameter, an identifier or a path the user could not know."""
        lowered = prompt.lower()
        for tool in self.found.tools:
            if re.search(rf"\b{re.escape(tool.name.lower())}\b", lowered) and len(words(tool.name)) > 1:
                return True
        for obs in obs_list:
            for name, value in obs.arguments.items():
                if len(words(name)) > 1 and re.search(rf"\b{re.escape(name.lower())}\b", lowered):
                    return True
                if isinstance(value, str) and os.path.isabs(value) and value in prompt:
                    return True
        return any(
            IDENTIFIER.match(token) and re.search(r"\d", token) for token in re.findall(r'"([^"]+)"', prompt)
        )


def is_name_key(key: str) -> bool:
    return str(key).lower() in NAME_KEYS


def is_paging(name: str) -> bool:
    return bool(
        set(words(name))
        & {"limit", "max", "page", "offset", "cursor", "skip", "size", "top", "sort", "order"}
    )


PREPOSITIONS = {"to", "from", "in", "on", "at", "by", "of", "for", "with", "into"}


def speakable(field: str) -> bool:
    """Whether a field's name reads as a noun in a question: not `to` or `from` (a relation's ends)."""
    return phrase(field) not in PREPOSITIONS and bool(words(field))


def short_item(value: Any) -> bool:
    """An item of a list worth naming in an answer: a short scalar, not a sentence, not an identifier."""
    if not short_scalar(value):
        return False
    if isinstance(value, str) and IDENTIFIER.match(value) and re.search(r"\d", value):
        return False  # a hash, a ticket id: no one lists those from memory
    return not (
        isinstance(value, str) and (len(value.split()) > 6 or value.rstrip().endswith((".", "!", "?")))
    )


def short_scalar(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        return True
    return isinstance(value, str) and 0 < len(value.strip()) <= MAX_QUOTED and "\n" not in value


def askable_fields(records: list[dict[str, Any]], skip: set[str]) -> list[str]:
    """Fields worth asking for, best first: short values that vary between records, no identifiers."""
    keys: dict[str, None] = {}
    for record in records:
        for key, value in record.items():
            if (
                key in skip
                or key == "text"
                or is_id_name(key)
                or not short_scalar(value)
                or not speakable(key)
            ):
                continue  # `text`: a body or a message, quoted, never asked for whole
            if isinstance(value, int | float) and set(words(key)) & TIME_WORDS and 1e9 <= value < 1e13:
                continue  # Unix time: a user asks for a date, and no one says 1709546400
            if isinstance(value, str) and IDENTIFIER.match(value) and re.search(r"\d", value):
                continue
            if isinstance(value, str) and value.lower() in ("true", "false"):
                continue  # a flag written as text (`isFile: true`): no one asks "what is the is file"
            keys[key] = None

    def rank(key: str) -> tuple[int, int]:
        distinct = len({repr(r.get(key)) for r in records if key in r})
        return (-min(distinct, 3), len(key))

    return sorted(keys, key=rank)


def proposal(
    prompt: str,
    calls: list[tuple[str, dict[str, Any]]],
    answer: Any,
    derive: Any,
    shape: str,
    tags: list[str],
    facts: dict[str, Any],
    weight: float = 1.0,
) -> Proposal:
    """A proposal of one shape: its expected tool the last call's, its minimum the number of calls."""
    if answer in (0, 1) and not isinstance(answer, bool) and shape != "negative":
        weight *= 0.3  # an answer of 0 or 1 asks little
    return Proposal(
        prompt=prompt,
        expected_tool=calls[-1][0],
        expected_result=answer,
        reference_calls=calls,
        tags=tags,
        template=shape,
        slug_hint=prompt,
        min_calls=len(calls),
        derive=derive,
        facts={**facts, "answer": answer},
        weight=weight,
    )


def searched(obs: Observation) -> bool:
    """Whether the call looked records up by free text: its hits say how the tool matches, not what
    the data holds."""
    return any(set(words(name)) & SEARCH_WORDS for name in obs.arguments)


def searched_by_name(obs: Observation, records: list[dict[str, Any]], named: str) -> bool:
    """Whether the call searched with the name of one of the records it returned."""
    names = {str(r.get(named, "")).strip().lower() for r in records}
    return any(isinstance(v, str) and v.strip().lower() in names for v in obs.arguments.values())


def field_question(field: str, subject: str, value: Any = None) -> str:
    """ "What is the author of …", "What are the tags of …", or "How many added lines does … have" for a
    number under a plural name."""
    parts = words(field)
    of = "of" if subject.startswith("the ") else "for"
    plural_name = bool(parts) and parts[-1].endswith("s") and not parts[-1].endswith(("ss", "us", "is"))
    if plural_name and isinstance(value, int | float) and not isinstance(value, bool):
        return f"How many {phrase(field)} does {subject} have?"
    if plural_name:
        return f"What are the {phrase(field)} {of} {subject}?"
    return f"What is the {field_phrase(field, value)} {of} {subject}?"


def tolerant(make: Callable[..., Any], *args: Any) -> list[Proposal]:
    """A shape's proposals, or none when a result holds what its rules did not foresee (a list where a
    name was, a number where a date was): one odd result costs its questions, not the command."""
    try:
        return list(make(*args))
    except (TypeError, ValueError, KeyError, IndexError, AttributeError, ZeroDivisionError):
        return []


def slugify(text: str, max_words: int = 7) -> str:
    return "-".join(re.findall(r"[a-z0-9]+", text.lower())[:max_words]) or "task"


def interleave(proposals: list[Proposal], about: str | None = None) -> list[Proposal]:
    """Proposals in the order to verify them: one per tool in turn, and within a tool one per shape in
    turn, best first; the ones about `about` ahead; a prompt asked twice is kept once."""
    wanted = set(re.findall(r"[a-z0-9]+", about.lower())) if about else set()

    def relevance(proposal: Proposal) -> int:
        text = (proposal.prompt + " " + str(proposal.facts)).lower()
        return -sum(1 for word in wanted if word in text)

    by_tool: dict[tuple[int, str], dict[str, list[Proposal]]] = {}
    seen: set[str] = set()
    for proposal in proposals:
        if proposal.signature() in seen:
            continue
        seen.add(proposal.signature())
        shapes = by_tool.setdefault((relevance(proposal), proposal.expected_tool), {})
        shapes.setdefault(proposal.template, []).append(proposal)
    queues: dict[tuple[int, str], list[Proposal]] = {}
    for key, shapes in by_tool.items():
        for bucket in shapes.values():
            bucket.sort(key=lambda p: -p.weight)
        ordered_shapes = sorted(shapes.values(), key=lambda bucket: -bucket[0].weight)
        queue: list[Proposal] = []
        while any(ordered_shapes):
            for bucket in ordered_shapes:
                if bucket:
                    queue.append(bucket.pop(0))
        queues[key] = queue
    ordered: list[Proposal] = []
    for level in sorted({key[0] for key in queues}):
        group = [queue for key, queue in queues.items() if key[0] == level]
        while any(group):
            for queue in group:
                if queue:
                    ordered.append(queue.pop(0))
    return _with_chains(ordered)


def _with_chains(ordered: list[Proposal]) -> list[Proposal]:
    """Every `CHAIN_EVERY`th proposal one that needs two calls or more, while there are some: a user's
    harder requests are worth a share of a short list."""
    single = [p for p in ordered if len(p.reference_calls) < 2]
    multi = [p for p in ordered if len(p.reference_calls) >= 2]
    out: list[Proposal] = []
    while single or multi:
        take_multi = multi and (not single or len(out) % CHAIN_EVERY == 1)
        out.append((multi if take_multi else single).pop(0))
    return out
