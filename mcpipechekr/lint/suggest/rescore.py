"""The selection test run again with a rewrite: does the right tool come out on top now?

The queries are lint's own (`selection.selection_queries`: each task's prompt
with the tool it needs first, then tasks.yaml's `selection_cases`) plus the
prompt of each of the bug's tasks that has no query of its own. Each selector
answers them twice, with the run's tools.json as it is and with the edits
applied; the answers with the current texts are asked once per selector and
shared by every suggestion.

Figures per selector: queries answered by their expected tool (a model's
samples averaged), each query of the bug's tasks and every other query whose
pick moved, precision and recall of the tools the bug concerns
(`metrics.score_tools`), and for the lexical selector the expected tool's place
among all tools (1: picked; none when it shares no word with the query) and,
for a parameter, its place among its tool's parameters by the same BM25F
(each parameter a document of its name, description and enum values).

Verdict: `worse` when fewer queries are answered right, or the bug's own
tasks lose (right answers first, then the places of their right tool);
`better` when either gains and neither loses; else, for a parameter's text,
its places among its tool's parameters for the bug's tasks decide; else `same`.

Blind spot: the lexical selector counts words; it cannot read a negation
("not for …") or tell a good sentence from a list of the query's words, so
its `better` says the right words are there now, not that an agent will pick
right. A model selector (`providers.phase05`) is the closer judge.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from mcpipechekr._util.hashing import sha256_json
from mcpipechekr.artifacts.description_suggestions import (
    ParameterRank,
    QueryChange,
    Rescore,
    TextEdit,
    ToolFigures,
    Verdict,
)
from mcpipechekr.artifacts.tools_snapshot import ToolDefinition
from mcpipechekr.lint._text import schema_properties
from mcpipechekr.lint.lexical import LexicalIndex, query_intent
from mcpipechekr.lint.metrics import predictions, score_tools
from mcpipechekr.lint.selection import LEXICAL, Choice, SelectionQuery, Selector, query_terms
from mcpipechekr.lint.suggest.evidence import enum_values


def apply_edits(tools: Sequence[ToolDefinition], edits: Sequence[TextEdit]) -> list[ToolDefinition]:
    """The tools with the edits' texts in place (a parameter's description inside its schema)."""
    out = []
    for tool in tools:
        changed = tool
        for edit in (edit for edit in edits if edit.tool == tool.name):
            if edit.parameter is None:
                changed = changed.model_copy(update={"description": edit.proposed})
                continue
            schema = dict(changed.input_schema)
            properties = dict(schema.get("properties") or {})
            properties[edit.parameter] = {
                **(properties.get(edit.parameter) or {}),
                "description": edit.proposed,
            }
            schema["properties"] = properties
            changed = changed.model_copy(update={"input_schema": schema})
        out.append(changed)
    return out


@dataclass(frozen=True)
class Answers:
    """One selector's answers to every query, for one version of the tool texts."""

    picks: list[list[Choice]]
    ranks: list[int | None] | None
    """Lexical only: the expected tool's place per query."""

    def right(self, queries: Sequence[SelectionQuery], index: int) -> float:
        samples = self.picks[index]
        return sum(1 for choice in samples if choice.tool == queries[index].expected_tool) / max(
            1, len(samples)
        )


def answer(
    selector: Selector, queries: Sequence[SelectionQuery], tools: Sequence[ToolDefinition], repeat: int
) -> Answers:
    """The selector's picks for every query; with the lexical selector, the expected tool's places too."""
    picks = selector.select(queries, tools, repeat) if queries else []
    return Answers(picks, lexical_places(queries, tools) if selector.label == LEXICAL else None)


def lexical_places(queries: Sequence[SelectionQuery], tools: Sequence[ToolDefinition]) -> list[int | None]:
    """The expected tool's place among the tools per query (ties: the first listed wins, as in `best`)."""
    index = LexicalIndex.build(tools)
    names = [tool.name for tool in tools]
    places: list[int | None] = []
    for query in queries:
        scores = index.scores(query_terms(query.text), query_intent(query.text))
        places.append(
            _place(scores, names.index(query.expected_tool)) if query.expected_tool in names else None
        )
    return places


def _place(scores: Sequence[float], i: int) -> int | None:
    if scores[i] <= 0:
        return None
    return 1 + sum(1 for j, score in enumerate(scores) if (score, -j) > (scores[i], -i))


def parameter_places(tool: ToolDefinition, parameter: str, text: str) -> tuple[int, int | None]:
    """(how many parameters, this one's place) for a query, each parameter scored as a document."""
    documents = []
    for name, prop in schema_properties(tool.input_schema).items():
        description = prop.get("description") if isinstance(prop.get("description"), str) else ""
        words = " ".join([description, *(str(value) for value in enum_values(prop))])
        fields = {
            "name": name,
            "description": words,
            "input_schema": {},
            "annotations": {"readOnlyHint": True},
        }
        documents.append(ToolDefinition(**fields, definition_hash=sha256_json(fields)))
    names = [document.name for document in documents]
    if parameter not in names:
        return len(names), None
    scores = LexicalIndex.build(documents).scores(query_terms(text), query_intent(text))
    return len(names), _place(scores, names.index(parameter))


def verdict(
    queries: Sequence[SelectionQuery], focus: Sequence[int], before: Answers, after: Answers, tools: int
) -> Verdict:
    """`better`, `same` or `worse` (the module's rule)."""
    total = _total(queries, after) - _total(queries, before)
    own = _compare(_focus(queries, focus, after, tools), _focus(queries, focus, before, tools))
    if total < 0 or own < 0:
        return "worse"
    return "better" if total > 0 or own > 0 else "same"


def _with_parameter(tools_verdict: Verdict, ranks: Sequence[ParameterRank]) -> Verdict:
    """A tool verdict of `same` decided by the parameter's places, when a parameter's text changed."""
    if tools_verdict != "same" or not ranks:
        return tools_verdict
    before = sum(rank.rank_before or rank.parameters + 1 for rank in ranks)
    after = sum(rank.rank_after or rank.parameters + 1 for rank in ranks)
    return "better" if after < before else "worse" if after > before else "same"


def _total(queries: Sequence[SelectionQuery], answers: Answers) -> float:
    return sum(answers.right(queries, i) for i in range(len(queries)))


def _focus(
    queries: Sequence[SelectionQuery], focus: Sequence[int], answers: Answers, tools: int
) -> tuple[float, int]:
    right = sum(answers.right(queries, i) for i in focus)
    places = -sum((answers.ranks[i] or tools + 1) for i in focus) if answers.ranks is not None else 0
    return right, places


def _compare(a: tuple[float, int], b: tuple[float, int]) -> int:
    return (a > b) - (a < b)


def _most(samples: Sequence[Choice]) -> str | None:
    counts = Counter(choice.tool for choice in samples)
    return max(counts, key=lambda tool: (counts[tool], tool is not None)) if counts else None


def rescore(
    label: str,
    queries: Sequence[SelectionQuery],
    focus: Sequence[int],
    before: Answers,
    after: Answers,
    *,
    tools: Sequence[ToolDefinition],
    after_tools: Sequence[ToolDefinition],
    concern: Sequence[str],
    parameter: tuple[str, str] | None = None,
) -> Rescore:
    """The figures of one selector for one rewrite (see the module docstring)."""
    changes = []
    for i in [*focus, *(i for i in range(len(queries)) if i not in focus)]:
        query = queries[i]
        old, new = _most(before.picks[i]), _most(after.picks[i])
        rank_before = before.ranks[i] if before.ranks is not None else None
        rank_after = after.ranks[i] if after.ranks is not None else None
        if (
            i in focus
            or old != new
            or rank_before != rank_after
            or before.right(queries, i) != after.right(queries, i)
        ):
            changes.append(
                QueryChange(
                    source=query.source,
                    query=query.text,
                    expected_tool=query.expected_tool,
                    picked_before=old,
                    picked_after=new,
                    rank_before=rank_before,
                    rank_after=rank_after,
                    right_before=round(before.right(queries, i), 4),
                    right_after=round(after.right(queries, i), 4),
                )
            )
    names = [tool.name for tool in tools]
    support = Counter(query.expected_tool for query in queries)
    old_scores = score_tools(names, predictions(queries, before.picks), support, misleading_share=1.0)
    new_scores = score_tools(names, predictions(queries, after.picks), support, misleading_share=1.0)
    figures = [
        ToolFigures(
            tool=name,
            precision_before=_round(old_scores[name].precision),
            precision_after=_round(new_scores[name].precision),
            recall_before=_round(old_scores[name].recall),
            recall_after=_round(new_scores[name].recall),
        )
        for name in dict.fromkeys(concern)
        if name in old_scores
    ]
    ranks = []
    if parameter is not None and label == LEXICAL:
        tool_name, name = parameter
        old_tool = next(tool for tool in tools if tool.name == tool_name)
        new_tool = next(tool for tool in after_tools if tool.name == tool_name)
        for i in focus:
            count, old_place = parameter_places(old_tool, name, queries[i].text)
            _, new_place = parameter_places(new_tool, name, queries[i].text)
            ranks.append(
                ParameterRank(
                    source=queries[i].source, parameters=count, rank_before=old_place, rank_after=new_place
                )
            )
    return Rescore(
        selector=label,
        queries=len(queries),
        right_before=round(_total(queries, before), 4),
        right_after=round(_total(queries, after), 4),
        changes=changes,
        tools=figures,
        parameter=ranks,
        verdict=_with_parameter(verdict(queries, focus, before, after, len(tools)), ranks),
    )


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)
