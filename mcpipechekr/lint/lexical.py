"""The offline selector's scoring: BM25F over a tool's fields, with the query's read or write intent.

A plain BM25 over one bag of words per tool misleads on real servers in two
ways. Parameter text inflates a document: a tool whose parameters are well
described matches words of unrelated queries, so following lint's own advice
("describe the parameters") on one tool makes it steal queries from the
others. And a write verb in a tool's name (`git_commit`, `create_note`) wins a
read query that merely contains the word as a noun ("the most recent commit").

So each tool is four fields, scored BM25F-style (Robertson, Zaragoza, Taylor
2004): a term's frequency is normalised by each field's length against that
field's average over the server's tools, weighted (`FIELD_WEIGHTS`: the name
counts most, parameter text least and fully length-normalised), summed, and
only then saturated, so no field can win a term on volume alone.

Intent, by general English rules and never by a server's words:

- a query is a *write* request when a clause starts with a write verb
  (`WRITE_VERBS`: create, add, delete, commit, push, rename, …), after polite
  openings ("please", "can you", "I want to"); otherwise it is a *read*
  request. A write verb elsewhere ("the most recent commit", "changes staged
  for commit") is a noun or an object and sets nothing;
- a tool writes when its annotations say so (`readOnlyHint: false` or
  `destructiveHint: true`), reads when they say `readOnlyHint: true`, and
  without annotations writes when a word of its name is a write verb;
- a tool whose kind is the opposite of the query's keeps `MISMATCH` of its
  score, so the read tool that shares the noun wins a read query, and the
  write tool wins "commit my work";
- the verb that opens a query is widened to its family (`VERB_FAMILIES`:
  "remove" also looks for *delete*, "show" for *read*, *get*, *view*), and a
  few nouns to the words tool descriptions use for them (`NOUN_FAMILIES`:
  "folder" and *directory*, "latest" and *history*, *log*).

Terms are the shared tokenizer's words (`_text.words`) folded once more so
that inflections meet (`deleted`/`delete`, `entities`/`entity`,
`committed`/`commit`). Limits: English only; a verb-less request ("README.md
to the index") counts as a read; the ranking shows which descriptions share
the request's words, not what a model would choose.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from mcpipechekr.artifacts.tools_snapshot import ToolDefinition
from mcpipechekr.lint._text import STOPWORDS, schema_properties, words

Intent = Literal["read", "write"]

K1 = 1.2
FIELD_WEIGHTS = {"name": 3.0, "title": 2.0, "description": 1.0, "parameters": 0.35}
"""How much a match in each field counts: a tool is what its name and description say it does."""
FIELD_B = {"name": 0.3, "title": 0.3, "description": 0.75, "parameters": 1.0}
"""Length normalisation per field (BM25's b): parameter text is normalised fully, names hardly."""
MISMATCH = 0.5
"""The share of its score a read tool keeps for a write request, and a write tool for a read request."""


def _fold(word: str) -> str:
    """Fold `_text.words` once more: `entitie` -> `entity`, `committ` -> `commit`, `delete` -> `delet`."""
    if len(word) > 4 and word.endswith("ie"):
        word = word[:-2] + "y"
    if len(word) > 4 and word[-1] == word[-2] and word[-1] not in "aeiousl":
        word = word[:-1]
    if len(word) > 3 and word.endswith("e"):
        word = word[:-1]
    return word


def terms(text: str | None) -> list[str]:
    """The scoring terms of a text: content words, stemmed and folded."""
    return [_fold(word) for word in words(text)]


def _family(*groups: str) -> dict[str, tuple[str, ...]]:
    """Every word of each group maps to the terms of its whole group."""
    table: dict[str, tuple[str, ...]] = {}
    for group in groups:
        members = tuple(dict.fromkeys(terms(group)))
        for member in members:
            table[member] = members
    return table


WRITE_VERBS = frozenset(
    terms(
        """add append apply archive assign cancel change checkout clear commit copy create delete deploy
        drop edit erase forget insert link make merge modify move overwrite publish purge push put record
        register remove rename replace reset restore revert save send set stage start store submit switch
        tag unlink unstage update upload write"""
    )
)
"""Verbs that ask a server to change something, as the first word of a clause or of a tool's name."""

VERB_FAMILIES = _family(
    "delete remove drop erase forget purge discard destroy",
    "create make new",
    "edit change modify update replace",
    "move rename",
    "read show display view open get see fetch",
    "find search look locate lookup",
    "list enumerate",
    "save write store",
    "add insert append",
    "compare diff difference",
)
"""A verb that opens a request also looks for the words of its family (only in that position)."""

NOUN_FAMILIES = _family(
    "folder directory",
    "picture photo image",
    "recent latest newest last history log",
    "big large size space",
    "link relation relationship connection",
    "now current present",
)
"""Words whose meaning a description says differently, wherever they stand in the request."""

_OPENINGS = re.compile(
    r"^(?:(?:please|pls|kindly|now|then|also|and|just|ok|okay|so|first|next|finally|go ahead and|"
    r"(?:can|could|would|will) you|i (?:want|need|would like|wish|'d like) to|i'd like to|"
    r"let's|lets|let me|help me|try to)\s+)+",
    re.IGNORECASE,
)
_CLAUSES = re.compile(r"[.;:!?\n]+|,\s*(?:then|and)\s+|\s+(?:and then|then)\s+")


def opening_verbs(text: str) -> list[str]:
    """The first word of each clause of a request, after polite openings, as a term."""
    found = []
    for clause in _CLAUSES.split(text):
        clause = _OPENINGS.sub("", clause.strip())
        first = re.match(r"[A-Za-z]+", clause)
        if first and first.group(0).lower() not in STOPWORDS:
            found += terms(first.group(0))[:1]
    return found


def query_intent(text: str) -> Intent:
    """`write` when a clause opens with a write verb ("commit my work", "please delete x"), else `read`."""
    return "write" if any(verb in WRITE_VERBS for verb in opening_verbs(text)) else "read"


def tool_intent(tool: ToolDefinition) -> Intent:
    """What a tool does by its annotations, or, without them, by the verbs of its name."""
    hints = tool.annotations or {}
    if hints.get("readOnlyHint") is True and hints.get("destructiveHint") is not True:
        return "read"
    if hints.get("readOnlyHint") is False or hints.get("destructiveHint") is True:
        return "write"
    return "write" if any(word in WRITE_VERBS for word in terms(tool.name)) else "read"


_FILE_NAME = re.compile(r"(?<![\w.])[\w-]+\.[A-Za-z][A-Za-z0-9]{0,4}\b")


Concept = dict[str, float]
"""One idea of a query: the terms that express it, each with how much a match on it counts."""
FAMILY_WEIGHT = 0.8
"""A match on a word's family counts less than a match on the word itself."""


def expand_query(text: str, extra: Iterable[str] = ()) -> list[Concept]:
    """The query's ideas: each term with its families (opening verbs' and nouns'), then `extra` terms.

    A file name ("notes.txt") also stands for *file*, and two or more for *multiple* files. A tool
    scores each idea once, by its best-matching term, so a family of six verbs cannot outweigh the
    word the user typed.
    """
    names = _FILE_NAME.findall(text)
    base = list(dict.fromkeys(terms(_FILE_NAME.sub(" ", text))))
    base += [
        t for t in terms("file" if len(names) == 1 else "file multiple" if names else "") if t not in base
    ]
    verbs = set(opening_verbs(text))
    concepts = []
    for term in base:
        concept = {member: FAMILY_WEIGHT for member in NOUN_FAMILIES.get(term, ())}
        if term in verbs:
            concept.update({member: FAMILY_WEIGHT for member in VERB_FAMILIES.get(term, ())})
        concept[term] = 1.0
        concepts.append(concept)
    concepts += [{term: 1.0} for term in dict.fromkeys(extra) if term not in base]
    return concepts


def tool_fields(tool: ToolDefinition) -> dict[str, list[str]]:
    """A tool's terms per field: name, title, description, and every parameter's name, description
    and enum values (the words a user names a choice by: "cups", "vegan")."""
    parameters: list[str] = []
    for name, prop in schema_properties(tool.input_schema).items():
        parameters += terms(name)
        if isinstance(prop.get("description"), str):
            parameters += terms(prop["description"])
        parameters += terms(" ".join(str(value) for value in _enum_values(prop)))
    return {
        "name": terms(tool.name),
        "title": terms(tool.title),
        "description": terms(tool.description),
        "parameters": parameters,
    }


def _enum_values(prop: dict) -> list[object]:
    """The allowed values of a parameter: its `enum`, or the `enum`/`const` of its `anyOf` branches."""
    values = list(prop.get("enum") or [])
    for branch in prop.get("anyOf") or []:
        if isinstance(branch, dict):
            values += list(branch.get("enum") or [])
            values += [branch["const"]] if "const" in branch else []
    return values


@dataclass
class LexicalIndex:
    """BM25F statistics of one server's tools, built once and asked for every query."""

    tools: list[ToolDefinition]
    fields: list[dict[str, Counter[str]]]
    lengths: list[dict[str, int]]
    average: dict[str, float]
    idf: dict[str, float]
    intents: list[Intent]

    @classmethod
    def build(cls, tools: Sequence[ToolDefinition]) -> LexicalIndex:
        fields = [{f: Counter(ts) for f, ts in tool_fields(tool).items()} for tool in tools]
        lengths = [{f: sum(c.values()) for f, c in doc.items()} for doc in fields]
        n = len(tools)
        average = {f: (sum(length[f] for length in lengths) / n if n else 0.0) for f in FIELD_WEIGHTS}
        df: Counter[str] = Counter()
        for doc in fields:
            df.update(set().union(*(c.keys() for c in doc.values())))
        idf = {term: math.log(1 + (n - freq + 0.5) / (freq + 0.5)) for term, freq in df.items()}
        return cls(list(tools), fields, lengths, average, idf, [tool_intent(tool) for tool in tools])

    def scores(self, concepts: Sequence[Concept], intent: Intent) -> list[float]:
        """Each tool's BM25F score for the query's ideas, times `MISMATCH` if its kind is not the query's."""
        return [
            sum(
                max(weight * self._term_score(i, term) for term, weight in concept.items())
                for concept in concepts
            )
            * (1.0 if self.intents[i] == intent else MISMATCH)
            for i in range(len(self.tools))
        ]

    def _term_score(self, i: int, term: str) -> float:
        """BM25F of one term in tool i: field-normalised, weighted frequencies summed, then saturated."""
        idf = self.idf.get(term)
        if idf is None:
            return 0.0
        weighted = 0.0
        for name, weight in FIELD_WEIGHTS.items():
            tf = self.fields[i][name].get(term, 0)
            if tf:
                b = FIELD_B[name]
                relative = self.lengths[i][name] / (self.average[name] or 1.0)
                weighted += weight * tf / (1 - b + b * relative)
        return idf * weighted * (K1 + 1) / (K1 + weighted) if weighted else 0.0

    def best(self, concepts: Sequence[Concept], intent: Intent) -> str | None:
        """The top-scoring tool (the first listed on a tie), or None when no term matches any tool."""
        scores = self.scores(concepts, intent)
        best = max(range(len(scores)), key=lambda i: (scores[i], -i), default=None)
        return self.tools[best].name if best is not None and scores[best] > 0 else None
