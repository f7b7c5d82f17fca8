"""Questions that join two results: a record found in one, its details or its relations in another.

- chain: a record of a listing or a search, then a field only another call
  gives about it, or the records that call lists for it (a listing gives a
  commit's id, the commit's details give its author's email; a project's id
  gives its issues). The record is named as the user knows it, or chosen as
  the latest or largest of the listing ("What is the email of the person with
  the earliest joined date?"). Two calls, and only when the second needs what
  the first found: an identifier, or the path of an entry the user did not name.
- mentions: a search by a word read in one record's text that finds that
  record alone ("Which note mentions "readings"?").
- relations: records that join two records of another table by name
  (`from`, `to`, `relationType`): ""Ada" lived in which entity?".
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from mcpipechekr.propose.explore import (
    SEARCH_WORDS,
    Exploration,
    Observation,
    identifier_key,
    name_key,
    parameters,
    record_path,
)
from mcpipechekr.propose.reading import Table, as_number, is_id_name, words
from mcpipechekr.propose.rules import (
    category,
    common_name_key,
    count_of,
    edge_rule,
    extreme,
    extreme_pick,
    fields_of,
    hop_rule,
    named_pick,
    names_in,
    only_name,
    order_kind,
    over_details,
    sort_key,
    swept,
    then,
    values_of,
)
from mcpipechekr.propose.templates import (
    IDENTIFIER,
    Proposal,
    Wording,
    askable_fields,
    field_phrase,
    field_question,
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

PER_TABLE = 4
"""Chains made from one table at most."""
MAX_FETCHED = 6
"""Records of a listing whose details one question may read, one call each."""


class Links:
    """The questions that join two results, for one exploration."""

    def __init__(self, found: Exploration, say: Wording) -> None:
        self.found = found
        self.say = say
        self.turns: dict[str, int] = {}
        """How many records each second tool was asked about: each asks first for the next field."""

    def all(self) -> list[Proposal]:
        out: list[Proposal] = []
        for shape in (self.chains, self.aggregates, self.sweeps, self.mentions, self.edges, self.hops):
            out += tolerant(shape)
        return out

    def sweeps(self) -> list[Proposal]:
        """One tool called with each value of an enum parameter (each city), a number in each answer:
        "Of "Chicago", "New York" and "Los Angeles", which location has the highest humidity?" needs
        a call per value; "Is the humidity for location "Chicago" higher than for "New York"?" two."""
        groups: dict[tuple[str, str, str], list[Observation]] = {}
        for obs in self.found.observations:
            tool = self.found.callable.get(obs.tool)
            single = obs.reading.single
            if tool is None or not single or obs.reading.summary or obs.reading.tables or obs.placeholders:
                continue
            for param, schema in parameters(tool).items():
                if isinstance(schema.get("enum"), list) and param in obs.arguments:
                    rest = {k: v for k, v in obs.arguments.items() if k != param}
                    key = (obs.tool, param, json.dumps(rest, sort_keys=True, default=str))
                    groups.setdefault(key, []).append(obs)
        out: list[Proposal] = []
        for (_, param, _), members in groups.items():
            if len(members) < 2:
                continue
            values = [obs.arguments[param] for obs in members]
            singles = [obs.reading.single or {} for obs in members]
            calls = [(obs.tool, obs.arguments) for obs in members]
            for field in fields_of(singles):
                numbers = [as_number(single.get(field)) for single in singles]
                if not speakable(field) or is_id_name(field) or any(n is None for n in numbers):
                    continue
                if len(set(numbers)) != len(numbers):
                    continue
                said = ", ".join(quoted(v) for v in values[:-1]) + f" and {quoted(values[-1])}"
                for word, pick in (("highest", max), ("lowest", min)):
                    best = pick(n for n in numbers if n is not None)
                    winner = values[numbers.index(best)]
                    answer = {param: winner, field: singles[numbers.index(best)][field]}
                    asked = f"which {phrase(param)} has the {word} {phrase(field)}, and what is it?"
                    out.append(  # the value with it, not the name alone: naming every option is no answer
                        proposal(
                            f"Of {said}, {asked}",
                            calls,
                            answer,
                            swept(field, values, word, param),
                            "superlative",
                            ["superlative", "chain"],
                            {"field": field, "values": values},
                            weight=1.4,
                        )
                    )
                for first, second in zip(range(1, len(values)), range(len(values) - 1), strict=False):
                    out.append(
                        proposal(
                            f"Is the {phrase(field)} for {phrase(param)} {quoted(values[first])} higher "
                            f"than for {quoted(values[second])}?",
                            [calls[first], calls[second]],
                            numbers[first] > numbers[second],  # type: ignore[operator]
                            swept(field, [values[first], values[second]], "greater", param),
                            "comparison",
                            ["comparison", "chain"],
                            {"field": field, "values": [values[first], values[second]]},
                        )
                    )
        return out

    def aggregates(self) -> list[Proposal]:
        """Questions over the details of every record of a listing: "Which note in the folder "notes" was
        updated last?" needs the listing and each note (three calls or more), since the listing does
        not give the field. Only for a complete listing whose every record was fetched by one tool."""
        out: list[Proposal] = []
        for first in self.found.observations:
            context = self.say.context(first, listing=True)
            if context is None or searched(first):
                continue
            for table in first.reading.tables:
                named = common_name_key(table.records)
                if named is None or not table.complete:
                    continue
                for kind, group in _groups(table):
                    if 2 <= len(group.records) <= MAX_FETCHED:
                        out += self._over_details(first, group, named, context, kind)
        return out

    def _over_details(
        self, first: Observation, table: Table, named: str, context: str, kind: str | None = None
    ) -> list[Proposal]:
        details: list[tuple[Observation, tuple[str, Any]]] = []
        for record in table.records:
            found = next(
                (
                    (second, link)
                    for second in self.found.observations
                    if (link := _link(first, record, second)) is not None
                    and second.reading.single
                    and not second.reading.summary
                ),
                None,
            )
            if found is None or (details and found[0].tool != details[0][0].tool):
                return []
            details.append(found)
        singles = [second.reading.single or {} for second, _ in details]
        names = [record[named] for record in table.records]
        if len(set(map(str, names))) != len(names) or not all(short_scalar(n) for n in names):
            return []
        noun = kind or self.say.noun(first, table)
        calls = [(first.tool, first.arguments), *((second.tool, second.arguments) for second, _ in details)]
        where = (table.key, table.label, named, table.kind_field, kind)
        links = [link for _, link in details]
        have = {" ".join(words(k)) for k in table.records[0]}
        out: list[Proposal] = []
        for field in fields_of(singles):
            if " ".join(words(field)) in have or is_id_name(field) or field == "text":
                continue
            values = values_of(singles, field)
            kind = order_kind(values, field)
            if kind is not None and len(out) < 2:
                for highest in (True, False):
                    keyed = [sort_key(v, kind) for v in values]
                    best = (max if highest else min)(keyed)
                    if keyed.count(best) != 1:
                        continue
                    out.append(
                        proposal(
                            f"Which {noun}{context} has the {_order_word(kind, highest)} "
                            f"{field_phrase(field, values[0])}?",
                            calls,
                            names[keyed.index(best)],
                            over_details(where, links, field, ("extreme", kind, highest)),
                            "superlative",
                            ["superlative", "chain"],
                            {"noun": noun, "field": field, "records": len(names)},
                            weight=1.5,
                        )
                    )
            elif all(category(v) for v in values) and 2 <= len(set(values)) < len(values):
                shared = max(set(values), key=lambda v: (values.count(v), str(v)))
                if values.count(shared) >= 2:
                    out.append(
                        proposal(
                            f"How many {plural(noun)}{context} have {phrase(field)} {quoted(shared)}?",
                            calls,
                            values.count(shared),
                            over_details(where, links, field, ("count", shared)),
                            "filter-count",
                            ["count", "filter", "chain"],
                            {"noun": noun, "field": field, "value": shared},
                            weight=1.5,
                        )
                    )
        return out

    def mentions(self) -> list[Proposal]:
        """ "Which note mentions "readings"?": a search by a word read in one record's text that finds
        that record alone, and no other record read holds the word."""
        texts: dict[str, list[str]] = {}
        for obs in self.found.observations:
            for record in [*(r for t in obs.reading.tables for r in t.records), obs.reading.single or {}]:
                named = name_key(record)
                if named is None:
                    continue
                body = " ".join(str(v) for k, v in record.items() if k != named and isinstance(v, str))
                texts.setdefault(str(record[named]), []).append(body.lower())
        out: list[Proposal] = []
        for obs in self.found.observations:
            term = next((v for k, v in obs.arguments.items() if set(words(k)) & SEARCH_WORDS), None)
            if not isinstance(term, str) or len(obs.reading.tables) != 1 or len(out) >= 3:
                continue
            table = obs.reading.tables[0]
            named = common_name_key(table.records)
            if named is None or len(table.records) != 1:
                continue
            name = table.records[0][named]
            word = re.compile(rf"\b{re.escape(term.lower())}\b")
            holders = {n for n, bodies in texts.items() if any(word.search(b) for b in bodies)}
            if holders != {str(name)} or term.lower() in str(name).lower():
                continue
            key, label = table.key, table.label
            out.append(
                proposal(
                    f"Which {self.say.noun(obs, table)} mentions {quoted(term)}?",
                    [(obs.tool, obs.arguments)],
                    name,
                    lambda rs, k=key, lb=label, n=named: only_name(rs[-1], k, lb, n),
                    "lookup",
                    ["lookup", "search"],
                    {"word": term, "record": name},
                    weight=1.3,
                )
            )
        return out

    def edges(self) -> list[Proposal]:
        """Records that join two records of another table by name (`from`, `to`, `relationType`):
        ""Ada" lived in which entity?", "Which entities does "Ada" have relations with?"."""
        out: list[Proposal] = []
        for obs in self.found.observations:
            if self.say.context(obs, listing=True) != "":
                continue
            for edges in obs.reading.tables:
                for nodes in obs.reading.tables:
                    if nodes is edges or (named := common_name_key(nodes.records)) is None:
                        continue
                    out += self._edge_questions(obs, edges, nodes, named)
        return out

    def _edge_questions(self, obs: Observation, edges: Table, nodes: Table, named: str) -> list[Proposal]:
        role = _edge_roles(edges, nodes, named)
        if role is None:
            return []
        source, target, kind = role
        names = {r[named] for r in nodes.records}
        noun = self.say.noun(obs, nodes)
        call = [(obs.tool, obs.arguments)]
        where = (edges.key, edges.label)
        out: list[Proposal] = []
        for edge in edges.records[:4]:
            same = [r for r in edges.records if r[source] == edge[source] and r[kind] == edge[kind]]
            targets = [r[target] for r in same]
            one = len(targets) == 1
            out.append(
                proposal(
                    f"{quoted(edge[source])} {edge[kind]} which {noun if one else plural(noun)}?",
                    call,
                    targets[0] if len(targets) == 1 else targets,
                    edge_rule(where, (source, edge[source]), (kind, edge[kind]), target, len(targets) == 1),
                    "lookup" if len(targets) == 1 else "list",
                    ["lookup", "relation"],
                    {"from": edge[source], "relation": edge[kind]},
                    weight=1.3,
                )
            )
        for node in sorted(names, key=str)[:3]:
            linked = [r[target] for r in edges.records if r[source] == node]
            if len(linked) >= 2:
                out.append(
                    proposal(
                        f"How many relations start from {quoted(node)}?",
                        call,
                        len(linked),
                        edge_rule(where, (source, node), None, target, False, count=True),
                        "filter-count",
                        ["count", "relation"],
                        {"from": node},
                        weight=1.3,
                    )
                )
        return out

    def hops(self) -> list[Proposal]:
        """A relation followed to the record at its other end, then a field only that record's own call
        gives: "What is the entity type of the entity that "Ada" programmed?" needs the search that
        finds Ada's relations, then the call that opens the entity they lead to. Which field of a
        relation is its start, its end and its kind is learnt where a result holds both ends' records."""
        roles: dict[tuple[str, str], tuple[str, str, str]] = {}
        for obs in self.found.observations:
            for edges, nodes, named in self._paired_tables(obs):
                found = _edge_roles(edges, nodes, named)
                if found is not None:
                    roles.setdefault((edges.key, edges.label), found)
        out: list[Proposal] = []
        for first in self.found.observations:
            for edges, nodes, named in self._paired_tables(first):
                role = roles.get((edges.key, edges.label))
                if role is not None:
                    out += self._hops_from(first, edges, nodes, named, role)
        return out

    @staticmethod
    def _paired_tables(obs: Observation) -> Iterator[tuple[Table, Table, str]]:
        for edges in obs.reading.tables:
            for nodes in obs.reading.tables:
                if nodes is not edges and (named := common_name_key(nodes.records)) is not None:
                    yield edges, nodes, named

    def _hops_from(
        self, first: Observation, edges: Table, nodes: Table, named: str, role: tuple[str, str, str]
    ) -> list[Proposal]:
        source, target, kind = role
        starts = [
            r for r in edges.records if searched_by_name(first, [{named: r.get(source)}], named)
        ]  # only from a search by the relation's start: a whole graph answers in one call
        out: list[Proposal] = []
        for edge in starts[:4]:
            same = [r[target] for r in starts if r[source] == edge[source] and r[kind] == edge[kind]]
            if len(same) != 1 or not short_scalar(edge[kind]):
                continue
            end = same[0]
            for second in self.found.observations:
                if second is first or not any(
                    end == v or isinstance(v, list) and end in v for v in second.arguments.values()
                ):
                    continue
                table = next(
                    (t for t in second.reading.tables if t.key == nodes.key and t.label == nodes.label), None
                )
                record = (
                    None if table is None else next((r for r in table.records if r.get(named) == end), None)
                )
                if table is None or record is None or len(table.records) != 1:
                    continue
                subject = f"the {self.say.noun(first, nodes)} that {quoted(edge[source])} {edge[kind]}"
                calls = [(first.tool, first.arguments), (second.tool, second.arguments)]
                where = ((edges.key, edges.label), (nodes.key, nodes.label, named))
                for field in askable_fields([record], {named})[:2]:
                    out.append(
                        proposal(
                            field_question(field, subject, record[field]),
                            calls,
                            record[field],
                            hop_rule(where, (source, edge[source]), (kind, edge[kind]), target, end, field),
                            "chain",
                            ["lookup", "relation", "chain"],
                            {"from": edge[source], "relation": edge[kind], "to": end, "field": field},
                            weight=1.4,
                        )
                    )
                break
        return out

    def chains(self) -> list[Proposal]:
        """A record of one result, then a field of it only another call gives."""
        out: list[Proposal] = []
        for first in self.found.observations:
            for table in first.reading.tables:
                named = common_name_key(table.records)
                if named is None or not table.records:
                    continue
                context = self.say.context(first, listing=True)
                by_name = searched_by_name(first, table.records, named)
                if context is None and not by_name:
                    continue
                out += self._chains_from(first, table, named, context or "")
        return out

    def _chains_from(self, first: Observation, table: Table, named: str, context: str) -> Iterator[Proposal]:
        noun = self.say.noun(first, table)
        names = values_of(table.records, named)
        where = (table.key, table.label, named)
        made = 0
        for record, how in self._ranked_records(table, named):
            name = record[named]
            if names.count(name) != 1 or not short_scalar(name):
                continue
            if how is None:
                subject = f"the {noun} {quoted(name)}{context}"
                pick = named_pick(where, name)
            else:
                rank, highest, kind = how
                word = _order_word(kind, highest)
                subject = f"the {noun}{context} with the {word} {field_phrase(rank, record[rank])}"
                pick = extreme_pick(where, rank, kind, highest)
            for second in self.found.observations:
                link = _link(first, record, second)
                if link is None or not _needs_first(link, record, first, chosen=how is not None):
                    continue
                calls = [(first.tool, first.arguments), (second.tool, second.arguments)]
                for made_one in self._second_step(second, calls, subject, record, named, pick, link):
                    made += 1
                    yield made_one
                if made >= PER_TABLE:
                    return

    def _second_step(
        self,
        second: Observation,
        calls: list[tuple[str, dict[str, Any]]],
        subject: str,
        record: dict[str, Any],
        named: str,
        pick: Any,
        link: tuple[str, Any],
    ) -> Iterator[Proposal]:
        """What the second call tells about the record the first found: a field it alone gives, or the
        records it lists."""
        facts = {"record": record[named], "via": link[0]}
        if second.reading.single and not second.reading.summary:
            single = second.reading.single
            have = {" ".join(words(k)) for k in record}
            fresh = [
                f
                for f in askable_fields([single], {named})
                if " ".join(words(f)) not in have and single[f] != record[named]
            ]
            turn = self.turns.get(second.tool, 0)
            self.turns[second.tool] = turn + 1
            for field in fresh[turn % len(fresh) :][:1] if fresh else []:
                yield proposal(
                    field_question(field, subject, single[field]),
                    calls,
                    single[field],
                    then(pick, link, lambda r, f=field: (r.single or {}).get(f)),
                    "chain",
                    ["lookup", "chain"],
                    {**facts, "field": field},
                    weight=1.4,
                )
        for table in second.reading.tables:
            inner = common_name_key(table.records)
            if inner is None or not 2 <= len(table.records) <= 8 or not table.complete:
                continue
            items = [r[inner] for r in table.records]
            if not all(short_item(i) for i in items) or len(set(items)) != len(items):
                continue
            thing = plural(self.say.noun(second, table))
            source = self.say.tool_noun(second.tool)
            if source == "item" or plural(source) == thing:  # the second call lists the record's own things
                asked, count_asked = f"belong to {subject}", f"does {subject} have"
            else:
                asked = count_asked = f"does the {source} of {subject} list"
            listed = then(pick, link, lambda r, k=table.key, lb=table.label, i=inner: names_in(r, k, lb, i))
            yield proposal(
                f"Which {thing} {asked}?",
                calls,
                items,
                listed,
                "chain",
                ["list", "chain"],
                {**facts, "listing": thing},
                weight=1.4,
            )
            yield proposal(
                f"How many {thing} {count_asked}?",
                calls,
                len(items),
                count_of(listed),
                "chain",
                ["count", "chain"],
                {**facts, "listing": thing},
                weight=1.2,
            )
            break

    def _ranked_records(self, table: Table, named: str) -> list[tuple[dict[str, Any], tuple | None]]:
        """The records to chain from: the first few by name, and the extremes of a date or number."""
        out: list[tuple[dict[str, Any], tuple | None]] = [(r, None) for r in table.records[:3]]
        if not table.complete or len(table.records) < 3:
            return out
        for field in fields_of(table.records):
            kind = (
                order_kind(values_of(table.records, field), field)
                if field != named and not is_id_name(field)
                else None
            )
            if kind is None:
                continue
            for highest in (True, False):
                winner = extreme(table.records, field, kind, highest)
                if winner is not None:
                    out.insert(0, (winner, (field, highest, kind)))
            break
        return out


def _edge_roles(edges: Table, nodes: Table, named: str) -> tuple[str, str, str] | None:
    """(start, end, kind) of records that join two records of `nodes` by name, or None."""
    names = {r[named] for r in nodes.records}
    fields = fields_of(edges.records)
    ends = [f for f in fields if all(r.get(f) in names for r in edges.records)]
    kinds = [f for f in fields if f not in ends and all(category(r.get(f)) for r in edges.records)]
    if len(ends) != 2 or not kinds:
        return None
    return ends[0], ends[1], kinds[0]


def _groups(table: Table) -> list[tuple[str | None, Table]]:
    """The table, or its records of each kind when they say theirs (`[FILE]` and `[DIR]` entries): only
    files can be read, so "Which file in the folder …" asks about the files alone."""
    field = next((f for f in ("type", "kind") if all(isinstance(r.get(f), str) for r in table.records)), None)
    if field is None:
        return [(None, table)]
    kinds = sorted({r[field] for r in table.records})
    return [
        (kind, Table(table.key, [r for r in table.records if r[field] == kind], True, table.label, field))
        for kind in kinds
    ]


def _link(first: Observation, record: dict[str, Any], second: Observation) -> tuple[str, Any] | None:
    """(field, value) of `record` that `second` was called with, or ("path", …) for a listed entry."""
    if second is first or second.tool == first.tool and second.arguments == first.arguments:
        return None
    path = record_path(first, record)
    for value in second.arguments.values():
        items = value if isinstance(value, list) else [value]
        for item in items:
            if path is not None and item == path:
                return ("path", path)
            for key, held in record.items():
                if (
                    isinstance(held, str | int)
                    and not isinstance(held, bool)
                    and held == item
                    and len(str(held)) > 2
                ):
                    return (key, held)
    return None


def _needs_first(link: tuple[str, Any], record: dict[str, Any], first: Observation, chosen: bool) -> bool:
    """Whether the second call fetches the record the first found, by something only the first gives:
    its identifier, or its path when the user does not name the entry (a search found it, or it is
    the `chosen` latest or largest); a folder listing's entry has a path the user can say."""
    key, value = link
    if key == "path":
        return chosen or searched(first)
    return key == identifier_key(record) or bool(IDENTIFIER.match(str(value)))


def _order_word(kind: str, highest: bool) -> str:
    if kind == "date":
        return "latest" if highest else "earliest"
    return "largest" if highest else "smallest"
