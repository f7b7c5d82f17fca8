"""Offline task templates: questions over what exploration found, keyed on the shape of results.

Each template reads observations (a tool, its arguments, its JSON result) and
writes a task whose answer is a value of that result; nothing here knows any
server's tool names. Shapes and the questions they give:

- a count (`{"count": 12}`, `{"total": 40, "items": [...]}`, a mapping whose
  one number sits next to echoes of the arguments, or a complete list: no
  `total`, no sign of more pages, fewer items than a `limit` asked for) →
  "How many <things> are there with <parameter> <value>?";
- a record fetched by an identifier (`get_x(x_id=7)` → a mapping) → "What is
  the <field> of the <thing> with <parameter> 7?", one call;
- a record found by searching its own name (exactly one record of the result
  has that name) → "What is the <field> of the <thing> named "N"?", one call;
  and, when another tool fetched the same record by its key, a field only
  that tool gives → the same question, two calls (search, then fetch).

The prompt names no tool. The expected result is the field's value or the
count as the server returned it; `verify.py` replays every task before it is
written. Values too long to quote in an answer (a body, a description) are
not asked for.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from mcpipechekr.propose.explore import (
    Exploration,
    Observation,
    RecordList,
    is_id_name,
    name_key,
    parameters,
    record_list,
    search_parameter,
    singular,
    words,
)

COUNT_KEYS = {"count", "total", "total_count", "totalcount", "n", "num", "number", "matches", "hits", "size"}
MORE_KEYS = {
    "more",
    "has_more",
    "hasmore",
    "next",
    "next_page",
    "next_cursor",
    "nextcursor",
    "cursor",
    "truncated",
}
LIMIT_WORDS = {"limit", "max", "size", "count", "top", "first"}
VERBS = {
    "get",
    "read",
    "fetch",
    "show",
    "describe",
    "lookup",
    "find",
    "list",
    "search",
    "query",
    "count",
    "number",
    "total",
    "by",
    "database",
    "db",
    "all",
    "details",
    "detail",
    "info",
    "one",
}
MAX_QUOTED = 80
"""Longest string value a template asks for or quotes."""


@dataclass
class Proposal:
    """A task before it is verified and written, with the template that made it."""

    prompt: str
    expected_tool: str
    expected_result: Any
    reference_calls: list[tuple[str, dict[str, Any]]]
    tags: list[str]
    template: str
    slug_hint: str
    task_type: str = "deterministic"
    min_calls: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def signature(self) -> str:
        return self.prompt.lower()


def phrase(name: str) -> str:
    return " ".join(words(name))


def quoted(value: Any) -> str:
    return f'"{value}"' if isinstance(value, str) else str(value)


def noun_of_tool(tool: str) -> str:
    kept = [word for word in words(tool) if word not in VERBS]
    return " ".join(kept) or "item"


def plural(noun: str) -> str:
    head, _, last = noun.rpartition(" ")
    if last.endswith("s"):
        return noun
    last = last[:-1] + "ies" if last.endswith("y") and last[-2:-1] not in "aeiou" else last + "s"
    return f"{head} {last}".strip()


def qualifier(arguments: dict[str, Any], tool_params: dict[str, dict[str, Any]], search: str | None) -> str:
    """` matching "x" with sender "y"`: the arguments, read out; pagination arguments left out."""
    parts = []
    for name, value in arguments.items():
        if value in (None, "", [], {}) or _is_paging(name):
            continue
        if name == search:
            parts.append(f"matching {quoted(value)}")
        else:
            parts.append(f"with {phrase(name)} {quoted(value)}")
    return (" " + " and ".join(parts)) if parts else ""


def _is_paging(name: str) -> bool:
    return bool(set(words(name)) & (LIMIT_WORDS | {"page", "offset", "cursor", "skip"}))


def _short_scalar(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        return True
    return isinstance(value, str) and 0 < len(value.strip()) <= MAX_QUOTED and "\n" not in value


def _askable_fields(record: dict[str, Any], skip: set[str], skip_values: set[Any]) -> list[str]:
    """Fields worth asking for, best first: not the lookup key, short, not echoing the question."""
    keys = [
        key
        for key, value in record.items()
        if key not in skip and _short_scalar(value) and _hashable(value) not in skip_values
    ]
    return sorted(
        keys, key=lambda key: (is_id_name(key), isinstance(record[key], str) and len(record[key]) > 40)
    )


def _hashable(value: Any) -> Any:
    return value if isinstance(value, str | int | float | bool) or value is None else repr(value)


def partial(document: Any, listing: RecordList) -> bool:
    """Whether a result says it holds only part of the records: more pages, or a larger total."""
    if not isinstance(document, dict):
        return False
    for key, value in document.items():
        if str(key).lower() in MORE_KEYS and value:
            return True
        is_count = isinstance(value, int) and not isinstance(value, bool)
        if str(key).lower() in COUNT_KEYS and is_count and value > len(listing.records):
            return True
    return False


# --- counts ----------------------------------------------------------------------------------------


def count_of(obs: Observation, listing: RecordList | None, limit_given: int | None) -> tuple[int, str] | None:
    """The count a result states and the field it sits in (`""` for a list's length), or None."""
    doc = obs.document
    if isinstance(doc, dict):
        for key, value in doc.items():
            if str(key).lower() in COUNT_KEYS and isinstance(value, int) and not isinstance(value, bool):
                return value, str(key)
        numbers = [k for k, v in doc.items() if isinstance(v, int) and not isinstance(v, bool)]
        echoes = {k for k, v in doc.items() if k in obs.arguments and obs.arguments[k] == v}
        if listing is None and len(numbers) == 1 and set(doc) - echoes == {numbers[0]}:
            return doc[numbers[0]], numbers[0]
        if any(str(k).lower() in MORE_KEYS and v for k, v in doc.items()):
            return None
    if listing is not None and (limit_given is None or len(listing.records) < limit_given):
        return len(listing.records), ""
    return None


def count_tasks(found: Exploration) -> list[Proposal]:
    out = []
    for obs in found.observations:
        tool = found.callable.get(obs.tool)
        if tool is None or obs.placeholders:
            continue
        listing = record_list(obs)
        limit_given = next(
            (v for k, v in obs.arguments.items() if set(words(k)) & LIMIT_WORDS and isinstance(v, int)), None
        )
        counted = count_of(obs, listing, limit_given)
        if counted is None:
            continue
        value, key = counted
        if listing is not None and listing.key:
            noun = plural(" ".join(singular(w) for w in words(listing.key)))
        elif key and str(key).lower() not in COUNT_KEYS:
            noun = phrase(key)
        else:
            noun = plural(noun_of_tool(obs.tool))
        qual = qualifier(obs.arguments, parameters(tool), search_parameter(tool))
        out.append(
            Proposal(
                prompt=f"How many {noun} are there{qual}?",
                expected_tool=obs.tool,
                expected_result=value,
                reference_calls=[(obs.tool, obs.arguments)],
                tags=["count"],
                template="count",
                slug_hint=f"count {noun}{qual}",
                min_calls=1,
                extra={"weak": value in (0, 1), "listing": listing is not None},
            )
        )
    # a tool that only counts answers the question with the smallest result: it wins a tie
    return sorted(out, key=lambda proposal: proposal.extra["listing"])


# --- lookups ---------------------------------------------------------------------------------------


def entity_of(obs: Observation, listing: RecordList | None = None) -> str:
    if listing is not None and listing.key:
        return " ".join(singular(w) for w in words(listing.key))
    return noun_of_tool(obs.tool)


def by_id_tasks(found: Exploration) -> list[Proposal]:
    """One call: a record fetched by an identifier argument, asked for one of its fields."""
    out = []
    for obs in found.observations:
        if not isinstance(obs.document, dict) or record_list(obs) is not None or obs.placeholders:
            continue
        ids = {k: v for k, v in obs.arguments.items() if is_id_name(k) and _short_scalar(v)}
        if len(ids) != 1 or len(obs.arguments) != 1:
            continue
        ((param, ident),) = ids.items()
        entity = entity_of(obs)
        skip_keys = {k for k, v in obs.document.items() if v == ident}
        for key in _askable_fields(obs.document, skip_keys, {ident})[:2]:
            out.append(
                Proposal(
                    prompt=f"What is the {phrase(key)} of the {entity} with {phrase(param)} {ident}?",
                    expected_tool=obs.tool,
                    expected_result=obs.document[key],
                    reference_calls=[(obs.tool, obs.arguments)],
                    tags=["lookup"],
                    template="by-id",
                    slug_hint=f"{entity} {ident} {phrase(key)}",
                    min_calls=1,
                )
            )
    return out


def _named(record: dict[str, Any], key: str) -> str:
    value = record[key]
    if key in ("title",) or words(key)[-1:] == ["title"]:
        return f"titled {quoted(value)}"
    if key in ("name",) or words(key)[-1:] == ["name"]:
        return f"named {quoted(value)}"
    return f"whose {phrase(key)} is {quoted(value)}"


def by_name_tasks(found: Exploration) -> list[Proposal]:
    """A record found by searching its exact name; a field of it, and a field only a fetch gives."""
    out = []
    for obs in found.observations:
        tool = found.callable.get(obs.tool)
        listing = record_list(obs)
        search = search_parameter(tool) if tool is not None else None
        if listing is None or search is None or not isinstance(obs.arguments.get(search), str):
            continue
        text = obs.arguments[search].strip().lower()
        hits = [r for r in listing.records if (k := name_key(r)) and str(r[k]).strip().lower() == text]
        if len(hits) != 1 or partial(obs.document, listing):
            continue  # the name must be unique among all the records, not one page of them
        record = hits[0]
        named_key = name_key(record)
        assert named_key is not None
        entity = entity_of(obs, listing)
        who = _named(record, named_key)
        for key in _askable_fields(record, {named_key}, {record[named_key]})[:2]:
            out.append(
                Proposal(
                    prompt=f"What is the {phrase(key)} of the {entity} {who}?",
                    expected_tool=obs.tool,
                    expected_result=record[key],
                    reference_calls=[(obs.tool, obs.arguments)],
                    tags=["lookup", "search"],
                    template="by-name",
                    slug_hint=f"{entity} {record[named_key]} {phrase(key)}",
                    min_calls=1,
                )
            )
        out.extend(_chained(found, obs, record, named_key, entity, who))
    return out


def _chained(
    found: Exploration, first: Observation, record: dict[str, Any], named_key: str, entity: str, who: str
) -> list[Proposal]:
    """Search, then fetch: a field the fetched record has and the search result lacks."""
    out = []
    for obs in found.observations:
        if obs.tool == first.tool or not isinstance(obs.document, dict) or record_list(obs) is not None:
            continue
        fetched_by_its_value = any(value in record.values() for value in obs.arguments.values())
        if not fetched_by_its_value or obs.document.get(named_key) != record[named_key]:
            continue  # not this record, fetched by one of its values
        fresh = [k for k in _askable_fields(obs.document, set(record), set()) if k not in record]
        for key in fresh[:1]:
            out.append(
                Proposal(
                    prompt=f"What is the {phrase(key)} of the {entity} {who}?",
                    expected_tool=obs.tool,
                    expected_result=obs.document[key],
                    reference_calls=[(first.tool, first.arguments), (obs.tool, obs.arguments)],
                    tags=["lookup", "chain"],
                    template="search-then-fetch",
                    slug_hint=f"{entity} {record[named_key]} {phrase(key)}",
                    min_calls=2,
                )
            )
    return out


TEMPLATES = (by_name_tasks, count_tasks, by_id_tasks)


def offline_proposals(found: Exploration) -> list[Proposal]:
    """Every template's proposals, interleaved by (template, tool) so a short list is varied."""
    buckets: dict[tuple[str, str], list[Proposal]] = {}
    seen: set[str] = set()
    for template in TEMPLATES:
        for proposal in template(found):
            if proposal.signature() in seen:
                continue
            seen.add(proposal.signature())
            buckets.setdefault((proposal.template, proposal.expected_tool), []).append(proposal)
    for bucket in buckets.values():
        bucket.sort(key=lambda p: bool(p.extra.get("weak")))  # a count of 0 or 1 asks little
    ordered: list[Proposal] = []
    while any(buckets.values()):
        for bucket in buckets.values():
            if bucket:
                ordered.append(bucket.pop(0))
    return ordered


SLUG_WORD = re.compile(r"[a-z0-9]+")


def slugify(text: str, max_words: int = 7) -> str:
    return "-".join(SLUG_WORD.findall(text.lower())[:max_words]) or "task"
