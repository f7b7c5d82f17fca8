"""The shapes of offline proposals: the questions people ask of a server's content.

Each method reads the exploration's tables (records of one kind, from one
call) and writes questions a user would ask of them, with the rule that
derives the answer (`Proposal.derive`), so verification recomputes it from a
fresh server's results:

- lookup: "What is the author of the note "Budget 2026"?" (a record named by
  its name, one of its fields; a list field gives "What are the tags of …");
- count: "How many commits are there?", only over a complete listing;
- filter-count and list: "How many notes have status "open"?", "Which notes
  have status "open"?" (a value two records or more share, not all of them);
- superlative: "Which commit has the latest date?", "Which entry in the
  folder "data" has the largest size?" (a unique extreme of a date or number);
- comparison: "Do the notes "A" and "B" have the same author?" (yes or no);
- a tool that counts (`{"count": 12}` beside its arguments): "How many emails
  are there with sender "X"?";
- a record fetched by what the user can say (a file's path, a city): its fields;
- negative: "How many notes have author "X" and status "done"?" when none
  has both though each value occurs: zero on purpose, tagged `negative`.

Only complete listings are counted, filtered or ranked (a page of results says
nothing about all records), and nothing asks how a tool matches its input
(the count of a search's hits), unless every hit holds the searched value in
one field (a search by an author): the questions are about the data. The
questions that join several results (find then fetch, over every item, over
each choice, relations, mentions) are `chains.py`'s.
"""

from __future__ import annotations

from typing import Any

from mcpipechekr.propose.chains import Links
from mcpipechekr.propose.explore import SEARCH_WORDS, Exploration, Observation, environment_dump, name_key
from mcpipechekr.propose.reading import COUNT_KEYS, Table, is_id_name, words
from mcpipechekr.propose.rules import (
    alike,
    both,
    category,
    common_name_key,
    extreme,
    extreme_of,
    field_of,
    fields_of,
    filtered,
    holds,
    iso_moment,
    length_of,
    order_kind,
    ordered,
    sort_key,
    table_in,
    values_of,
)
from mcpipechekr.propose.templates import (
    IDENTIFIER,
    Proposal,
    Wording,
    askable_fields,
    field_phrase,
    field_question,
    is_paging,
    phrase,
    plural,
    proposal,
    quoted,
    searched,
    searched_by_name,
    short_item,
    short_scalar,
    speakable,
    tolerant,
)

PER_TABLE = {"lookup": 4, "filter-count": 2, "list": 2, "superlative": 2, "comparison": 2}


class Shapes:
    """Every shape's proposals for one exploration."""

    def __init__(self, found: Exploration) -> None:
        self.found = found
        self.say = Wording(found)

    def all(self) -> list[Proposal]:
        """Every shape's proposals; a result of a shape no rule foresaw gives none, never an error."""
        out: list[Proposal] = []
        for obs in self.found.observations:
            if obs.tool not in self.found.callable:
                continue
            for table in obs.reading.tables:
                out += tolerant(self.table_shapes, obs, table)
            if obs.reading.single and not environment_dump(obs.reading.single):
                out += tolerant(self.single_shapes, obs)
        out += Links(self.found, self.say).all()
        return [p for p in out if not self.say.leaks(p.prompt, [])]

    def table_shapes(self, obs: Observation, table: Table) -> list[Proposal]:
        records = table.records
        named = common_name_key(records)
        noun = self.say.noun(obs, table)
        context = self.say.context(obs, listing=True)
        context = None if context is None else self.say.header(table, noun) + context
        by_name = named is not None and searched_by_name(obs, records, named)
        out: list[Proposal] = []
        if named is not None and (context is not None or by_name):
            out += self.lookups(obs, table, named, noun, context or "")
        if searched(obs) and table.complete and not by_name:
            out += self.search_filters(obs, table, named, noun)
        if context is None or not table.complete or by_name or searched(obs):
            return out
        call = [(obs.tool, obs.arguments)]
        key, label = table.key, table.label
        if len(records) >= 2:
            out.append(
                proposal(
                    f"How many {plural(noun)} are there{context}?",
                    call,
                    len(records),
                    lambda rs: len(t.records) if (t := table_in(rs[-1], key, label)) and t.complete else None,
                    "count",
                    ["count"],
                    {"noun": noun, "records": len(records)},
                    weight=1.0 if len(records) > 1 else 0.2,
                )
            )
        out += self.filters(obs, table, named, noun, context, call)
        if named is not None:
            out += self.superlatives(table, named, noun, context, call)
            out += self.comparisons(table, named, noun, context, call)
        return out

    def lookups(self, obs: Observation, table: Table, named: str, noun: str, context: str) -> list[Proposal]:
        out: list[Proposal] = []
        names = values_of(table.records, named)
        fields = askable_fields(table.records, {named})
        lists = [k for k in table.records[0] if isinstance(table.records[0][k], list) and k != named]
        key, label = table.key, table.label
        for record in table.records[: PER_TABLE["lookup"]]:
            name = record[named]
            if names.count(name) != 1 or not short_scalar(name) or iso_moment(name):
                continue
            subject = f"the {noun} {quoted(name)}{context}"
            call = [(obs.tool, obs.arguments)]
            for field in [f for f in fields if f in record and record[f] != name][:2]:
                out.append(
                    proposal(
                        field_question(field, subject, record[field]),
                        call,
                        record[field],
                        field_of(key, label, named, name, field),
                        "lookup",
                        ["lookup"],
                        {"record": name, "field": field},
                    )
                )
            for field in lists[:1]:
                items = record[field]
                if not items or not all(short_item(item) for item in items) or len(items) > 8:
                    continue
                out.append(
                    proposal(
                        f"What are the {phrase(field)} of {subject}?",
                        call,
                        list(items),
                        field_of(key, label, named, name, field),
                        "list",
                        ["list"],
                        {"record": name, "field": field},
                    )
                )
                if len(items) >= 2:
                    out.append(
                        proposal(
                            f"How many {phrase(field)} does {subject} have?",
                            call,
                            len(items),
                            length_of(key, label, named, name, field),
                            "count",
                            ["count"],
                            {"record": name, "field": field},
                        )
                    )
        return out

    def filters(
        self, obs: Observation, table: Table, named: str | None, noun: str, context: str, call: list
    ) -> list[Proposal]:
        records = table.records
        key, label = table.key, table.label
        out: list[Proposal] = []
        shared: list[tuple[str, Any, int]] = []
        for field in fields_of(records):
            if field == named or is_id_name(field) or not speakable(field):
                continue
            counts: dict[Any, int] = {}
            for record in records:
                held = record.get(field)
                for value in held if isinstance(held, list) else [held]:
                    if category(value):
                        counts[value] = counts.get(value, 0) + 1
            for value, n in sorted(counts.items(), key=lambda kv: (-kv[1], str(kv[0]))):
                if 2 <= n < len(records) and len(counts) >= 2:
                    shared.append((field, value, n))
        for field, value, n in shared[: PER_TABLE["filter-count"]]:
            has = condition(field, value, isinstance(records[0].get(field), list))
            out.append(
                proposal(
                    f"How many {plural(noun)}{context} {has}?",
                    call,
                    n,
                    filtered(key, label, field, value, None),
                    "filter-count",
                    ["count", "filter"],
                    {"noun": noun, "field": field, "value": value},
                    weight=1.5,
                )
            )
            if named is not None and n <= 8:
                names = [r[named] for r in records if holds(r, field, value)]
                if all(short_scalar(name) for name in names) and len(set(names)) == len(names):
                    out.append(
                        proposal(
                            f"Which {plural(noun)}{context} {has}?",
                            call,
                            names,
                            filtered(key, label, field, value, named),
                            "list",
                            ["list", "filter"],
                            {"noun": noun, "field": field, "value": value},
                            weight=1.2,
                        )
                    )
        out += self.negatives(table, noun, context, call, shared)
        return out

    def search_filters(self, obs: Observation, table: Table, named: str | None, noun: str) -> list[Proposal]:
        """A search for a value every hit holds in one field (`author` "Ines Okafor"): the hits are the
        records with that value, so their number and names are asked, as a filter."""
        term = next((v for k, v in obs.arguments.items() if set(words(k)) & SEARCH_WORDS), None)
        if not isinstance(term, str) or not table.records:
            return []
        fields = [
            f
            for f in fields_of(table.records)
            if f != named and speakable(f) and all(holds(r, f, term) for r in table.records)
        ]
        if not fields or (
            named is not None and any(term.lower() in str(r[named]).lower() for r in table.records)
        ):
            return []
        field, n = fields[0], len(table.records)
        has = condition(field, term, isinstance(table.records[0].get(field), list))
        call = [(obs.tool, obs.arguments)]
        out = [
            proposal(
                f"How many {plural(noun)} {has}?",
                call,
                n,
                filtered(table.key, table.label, field, term, None),
                "filter-count",
                ["count", "filter"],
                {"noun": noun, "field": field, "value": term},
                weight=1.5,
            )
        ]
        if named is not None and 2 <= n <= 8:
            out.append(
                proposal(
                    f"Which {plural(noun)} {has}?",
                    call,
                    [r[named] for r in table.records],
                    filtered(table.key, table.label, field, term, named),
                    "list",
                    ["list", "filter"],
                    {"noun": noun, "field": field, "value": term},
                    weight=1.2,
                )
            )
        return out

    def negatives(
        self, table: Table, noun: str, context: str, call: list, shared: list[tuple[str, Any, int]]
    ) -> list[Proposal]:
        """Two values that each occur, never together: a count of zero asked on purpose."""
        key, label = table.key, table.label
        for (f1, v1, _), (f2, v2, _) in ((a, b) for a in shared for b in shared if a[0] < b[0]):
            if any(holds(r, f1, v1) and holds(r, f2, v2) for r in table.records):
                continue
            lists = isinstance(table.records[0].get(f1), list), isinstance(table.records[0].get(f2), list)
            has = f"{condition(f1, v1, lists[0])} and {condition(f2, v2, lists[1]).removeprefix('have ')}"
            return [
                proposal(
                    f"How many {plural(noun)}{context} {has}?",
                    call,
                    0,
                    both(key, label, (f1, v1), (f2, v2)),
                    "negative",
                    ["count", "negative"],
                    {"noun": noun, "fields": [f1, f2], "values": [v1, v2]},
                )
            ]
        return []

    def superlatives(self, table: Table, named: str, noun: str, context: str, call: list) -> list[Proposal]:
        out: list[Proposal] = []
        records = table.records
        key, label = table.key, table.label
        if len(records) < 3 or len({r.get(named) for r in records}) != len(records):
            return out
        for field in fields_of(records):
            if field == named or is_id_name(field):
                continue
            kind = order_kind(values_of(records, field), field)
            if kind is None:
                continue
            words_ = ("latest", "earliest") if kind == "date" else ("largest", "smallest")
            for highest, word in zip((True, False), words_, strict=True):
                winner = extreme(records, field, kind, highest)
                if winner is None:
                    continue
                out.append(
                    proposal(
                        f"Which {noun}{context} has the {word} {field_phrase(field, records[0][field])}?",
                        call,
                        winner[named],
                        extreme_of(key, label, named, field, kind, highest),
                        "superlative",
                        ["superlative"],
                        {"noun": noun, "field": field, "order": word},
                        weight=1.3,
                    )
                )
            if len(out) >= PER_TABLE["superlative"]:
                break
        return out

    def comparisons(self, table: Table, named: str, noun: str, context: str, call: list) -> list[Proposal]:
        records = table.records
        key, label = table.key, table.label
        out: list[Proposal] = []
        names = values_of(records, named)
        usable = [r for r in records if names.count(r[named]) == 1 and short_scalar(r[named])]
        for field in fields_of(records):
            if (
                field == named
                or is_id_name(field)
                or not speakable(field)
                or len(out) >= PER_TABLE["comparison"]
            ):
                continue
            values = values_of(usable, field)
            if order_kind(values, field) is not None and len(usable) >= 2:
                kind = order_kind(values, field)
                a, b = usable[0], usable[1]
                if sort_key(a[field], kind) == sort_key(b[field], kind):
                    continue
                word = "later" if kind == "date" else "larger"
                out.append(
                    proposal(
                        f"Is the {field_phrase(field, a[field])} of the {noun} {quoted(a[named])}{context} "
                        f"{word} than that of {quoted(b[named])}?",
                        call,
                        sort_key(a[field], kind) > sort_key(b[field], kind),
                        ordered(key, label, named, a[named], b[named], field, kind),
                        "comparison",
                        ["comparison"],
                        {"records": [a[named], b[named]], "field": field},
                    )
                )
            elif all(category(v) for v in values) and 2 <= len(set(values)) < len(values):
                same = next(
                    ((a, b) for a in usable for b in usable if a is not b and a[field] == b[field]), None
                )
                other = next(((a, b) for a in usable for b in usable if a[field] != b[field]), None)
                pairs = [same, other] if len(out) % 2 == 0 else [other, same]  # yes and no in turn
                for pair in [p for p in pairs if p is not None][:1]:
                    a, b = pair
                    out.append(
                        proposal(
                            f"Do the {plural(noun)} {quoted(a[named])} and {quoted(b[named])}{context} "
                            f"have the same {phrase(field)}?",
                            call,
                            a[field] == b[field],
                            alike(key, label, named, a[named], b[named], field),
                            "comparison",
                            ["comparison"],
                            {"records": [a[named], b[named]], "field": field},
                        )
                    )
        return out

    def single_shapes(self, obs: Observation) -> list[Proposal]:
        """A record fetched by something the user can say (a file's path, a city from a list)."""
        single = obs.reading.single or {}
        counted = self.counted(obs)
        if counted:
            return counted
        subject = self._subject(obs)
        if subject is None or obs.reading.summary:
            return []
        call = [(obs.tool, obs.arguments)]
        out = []
        for field in askable_fields([single], {name_key(single) or ""})[:3]:
            out.append(
                proposal(
                    field_question(field, subject, single[field]),
                    call,
                    single[field],
                    lambda rs, f=field: (rs[-1].single or {}).get(f),
                    "lookup",
                    ["lookup"],
                    {"record": subject, "field": field},
                )
            )
        for field, items in single.items():
            if isinstance(items, list) and 2 <= len(items) <= 8 and all(short_item(i) for i in items):
                out.append(
                    proposal(
                        f"What are the {phrase(field)} listed in {subject}?",
                        call,
                        list(items),
                        lambda rs, f=field: (rs[-1].single or {}).get(f),
                        "list",
                        ["list"],
                        {"record": subject, "field": field},
                    )
                )
                break
        return out

    def counted(self, obs: Observation) -> list[Proposal]:
        """A tool that counts (`{"count": 12}` beside echoes of its arguments): "How many emails are
        there from "X"?", its arguments read out."""
        single = obs.reading.single or {}
        counts = [k for k, v in single.items() if k.lower() in COUNT_KEYS and isinstance(v, int) and v >= 0]
        others = [k for k in single if k not in counts and single[k] not in obs.arguments.values()]
        if len(counts) != 1 or others or obs.placeholders:
            return []
        parts = []
        for name, value in obs.arguments.items():
            if value in (None, "", [], {}) or is_paging(name):
                continue
            if (
                not isinstance(value, str | int)
                or len(str(value)) > 60
                or (self.say.relative(str(value)) is not None)
            ):
                return []
            if set(words(name)) & SEARCH_WORDS:
                parts.append(f"mentioning {quoted(value)}")
            else:
                parts.append(f"with {field_phrase(name, value)} {quoted(value)}")
        (key,) = counts
        noun = plural(self.say.tool_noun(obs.tool))
        return [
            proposal(
                f"How many {noun} are there{''.join(' ' + part for part in parts[:1])}"
                f"{''.join(' and ' + part for part in parts[1:])}?",
                [(obs.tool, obs.arguments)],
                single[key],
                lambda rs, k=key: (rs[-1].single or {}).get(k),
                "filter-count",
                ["count"],
                {"noun": noun, "arguments": obs.arguments},
                weight=1.2,
            )
        ]

    def _subject(self, obs: Observation) -> str | None:
        single = obs.reading.single or {}
        named = name_key(single)
        if named is not None and len(obs.arguments) >= 1 and single[named] in obs.arguments.values():
            return f"the {self.say.tool_noun(obs.tool)} {quoted(single[named])}"  # fetched by its own name
        parts = []
        for name, value in obs.arguments.items():
            if name in obs.placeholders:
                return None
            if isinstance(value, str) and (rel := self.say.relative(value)) is not None:
                if rel:
                    parts.append(f'the file "{rel}"')
            elif isinstance(value, str) and 0 < len(value) <= 40 and not IDENTIFIER.match(value):
                parts.append(f'{phrase(name)} "{value}"')
            elif value not in (None, "", [], {}):
                return None
        return " and ".join(parts) if len(parts) == 1 else None


def condition(field: str, value: Any, is_list: bool) -> str:
    return (
        f"have {quoted(value)} among their {phrase(field)}"
        if is_list
        else f"have {phrase(field)} {quoted(value)}"
    )


def offline_proposals(found: Exploration) -> list[Proposal]:
    """Every shape's proposals for what was found, in no particular order (`templates.interleave` orders)."""
    return Shapes(found).all()
