"""Scores of the selection test: per-tool precision, recall, F1, confusions, and the misleading rule.

Every sample counts as one prediction (a query asked `repeat` times gives
`repeat` predictions), so an unstable model lowers the scores it deserves to.
For tool T:

    precision = samples that picked T and expected T / samples that picked T      (absent if never picked)
    recall    = samples that picked T and expected T / samples that expected T    (absent if never expected)
    f1        = 2 * precision * recall / (precision + recall)                      (absent unless both exist;
                                                                                    0 when both are 0)
    support   = queries (not samples) that expected T

A sample that picks no tool lowers the expected tool's recall and no one's
precision.

Misleading rule: T is misleading when it drew at least `min_wrong` wrong picks
(samples that picked T for a query expecting another tool) and the share of
those wrong picks made with `high` confidence is at least the threshold
(config `thresholds.misleading_confidence`). A description that a model
confidently takes for another tool's job steers agents wrong; a tool picked
wrongly but hesitantly is only imprecise.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from mcpipechekr.artifacts.tef_report import Confusion
from mcpipechekr.lint.selection import Choice, SelectionQuery

MIN_WRONG_PICKS = 2


@dataclass(frozen=True)
class Prediction:
    expected: str
    picked: str | None
    confidence: str


@dataclass
class ToolScores:
    """Selection scores of one tool."""

    name: str
    precision: float | None
    recall: float | None
    f1: float | None
    support: int
    picked: int
    wrong_picks: int
    confident_wrong_picks: int
    misleading: bool
    confusions: list[Confusion]


def predictions(queries: Sequence[SelectionQuery], answers: Sequence[Sequence[Choice]]) -> list[Prediction]:
    """One prediction per sample, pairing each answer with its query's expected tool."""
    return [
        Prediction(query.expected_tool, choice.tool, choice.confidence)
        for query, samples in zip(queries, answers, strict=True)
        for choice in samples
    ]


def _ratio(numerator: int, denominator: int) -> float | None:
    return None if denominator == 0 else numerator / denominator


def score_tools(
    tool_names: Sequence[str],
    preds: Sequence[Prediction],
    support: Counter[str],
    *,
    misleading_share: float,
    min_wrong: int = MIN_WRONG_PICKS,
) -> dict[str, ToolScores]:
    """Scores for every tool in `tool_names`, from the predictions and per-tool query counts."""
    picked = Counter(p.picked for p in preds if p.picked)
    expected = Counter(p.expected for p in preds)
    correct = Counter(p.picked for p in preds if p.picked and p.picked == p.expected)
    pairs = Counter((p.picked, p.expected) for p in preds if p.picked and p.picked != p.expected)
    confident = Counter(
        p.picked for p in preds if p.picked and p.picked != p.expected and p.confidence == "high"
    )
    scores = {}
    for name in tool_names:
        precision = _ratio(correct[name], picked[name])
        recall = _ratio(correct[name], expected[name])
        f1 = None
        if precision is not None and recall is not None:
            f1 = 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)
        wrong = picked[name] - correct[name]
        confusions = [
            Confusion(picked=a, expected=b, count=count)
            for (a, b), count in sorted(pairs.items(), key=lambda item: (-item[1], item[0]))
            if name in (a, b)
        ]
        scores[name] = ToolScores(
            name=name,
            precision=precision,
            recall=recall,
            f1=f1,
            support=support[name],
            picked=picked[name],
            wrong_picks=wrong,
            confident_wrong_picks=confident[name],
            misleading=wrong >= max(1, min_wrong) and confident[name] / wrong >= misleading_share,
            confusions=confusions,
        )
    return scores
