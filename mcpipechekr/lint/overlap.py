"""Tool pairs that a selector could confuse: similar descriptions and similar parameters.

Score of a pair (a, b), every part in [0, 1]:

    lexical       cosine similarity of TF-IDF vectors of name + title + description
                  (tf = 1 + ln(count), idf = ln((1 + n) / (1 + df)) + 1, vectors L2-normalised)
    param_jaccard |params(a) ∩ params(b)| / |params(a) ∪ params(b)| over parameter names
    score         LEXICAL_WEIGHT * lexical + PARAM_WEIGHT * param_jaccard,
                  or lexical alone when neither tool takes parameters

Pairs whose score reaches the threshold (config `thresholds.overlap`) are
reported with the terms that contribute most to their lexical similarity.

Why this is fast enough for servers with hundreds of tools: it never compares
two tools that share no term and no parameter. Each term's postings (the tools
that use it, in index order) are walked once per tool that has the term, which
is a sparse matrix product written with dicts: the work grows with the number of
term co-occurrences, not with n² string comparisons. The smoothed idf keeps
terms that every tool uses from vanishing on a two-tool server, where plain idf
would be zero for exactly the words a near-duplicate pair shares.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from mcpipechekr.artifacts.tef_report import Overlap
from mcpipechekr.artifacts.tools_snapshot import ToolDefinition
from mcpipechekr.lint._text import schema_properties, tool_text, words

LEXICAL_WEIGHT = 0.7
PARAM_WEIGHT = 0.3
SHARED_TERMS = 8


@dataclass
class _Index:
    vectors: list[dict[str, float]]
    postings: dict[str, tuple[list[int], list[float]]]
    params: list[frozenset[str]]
    param_postings: dict[str, list[int]]


def tfidf_vectors(documents: Sequence[Sequence[str]]) -> list[dict[str, float]]:
    """L2-normalised TF-IDF vectors (term -> weight), one per document."""
    n = len(documents)
    counts = [Counter(doc) for doc in documents]
    df: Counter[str] = Counter()
    for count in counts:
        df.update(count.keys())
    idf = {term: math.log((1 + n) / (1 + freq)) + 1.0 for term, freq in df.items()}
    vectors = []
    for count in counts:
        vector = {term: (1.0 + math.log(tf)) * idf[term] for term, tf in count.items()}
        norm = math.sqrt(sum(w * w for w in vector.values())) or 1.0
        vectors.append({term: w / norm for term, w in vector.items()})
    return vectors


def _index(tools: Sequence[ToolDefinition]) -> _Index:
    vectors = tfidf_vectors([words(tool_text(tool, with_parameters=False)) for tool in tools])
    postings: dict[str, tuple[list[int], list[float]]] = defaultdict(lambda: ([], []))
    for i, vector in enumerate(vectors):  # in index order, so each postings list is sorted by tool
        for term, weight in vector.items():
            ids, weights = postings[term]
            ids.append(i)
            weights.append(weight)
    params = [frozenset(schema_properties(tool.input_schema)) for tool in tools]
    param_postings: dict[str, list[int]] = defaultdict(list)
    for i, names in enumerate(params):
        for name in names:
            param_postings[name].append(i)
    return _Index(vectors, postings, params, param_postings)


def combined_score(lexical: float, params_a: frozenset[str], params_b: frozenset[str]) -> tuple[float, float]:
    """(score, param_jaccard) of a pair from its lexical similarity and parameter names."""
    union = len(params_a | params_b)
    if union == 0:
        return lexical, 0.0
    jaccard = len(params_a & params_b) / union
    return LEXICAL_WEIGHT * lexical + PARAM_WEIGHT * jaccard, jaccard


def find_overlaps(tools: Sequence[ToolDefinition], threshold: float) -> list[Overlap]:
    """Every pair scoring at least `threshold`, highest first (ties by name)."""
    index = _index(tools)
    # The parameters add at most PARAM_WEIGHT, so a pair below this lexical score cannot reach the threshold.
    lexical_floor = (threshold - PARAM_WEIGHT) / LEXICAL_WEIGHT
    found: list[Overlap] = []
    for i, vector in enumerate(index.vectors):
        dots: dict[int, float] = defaultdict(float)
        for term, weight in vector.items():
            ids, weights = index.postings[term]
            start = bisect_right(ids, i)  # only tools after i: each pair once
            for j, other in zip(ids[start:], weights[start:], strict=True):
                dots[j] += weight * other
        candidates = {j for j, dot in dots.items() if dot >= lexical_floor}
        if threshold <= PARAM_WEIGHT:  # a pair sharing only parameters can reach such a low threshold
            for name in index.params[i]:
                candidates.update(j for j in index.param_postings[name] if j > i)
        for j in candidates:
            lexical = min(1.0, dots.get(j, 0.0))
            score, jaccard = combined_score(lexical, index.params[i], index.params[j])
            if score >= threshold and score > 0:
                found.append(
                    Overlap(
                        tool_a=tools[i].name,
                        tool_b=tools[j].name,
                        score=round(min(score, 1.0), 4),
                        lexical=round(lexical, 4),
                        param_jaccard=round(jaccard, 4),
                        shared_terms=_shared_terms(vector, index.vectors[j]),
                    )
                )
    found.sort(key=lambda o: (-o.score, o.tool_a, o.tool_b))
    return found


def _shared_terms(a: dict[str, float], b: dict[str, float]) -> list[str]:
    shared = sorted(a.keys() & b.keys(), key=lambda term: (-a[term] * b[term], term))
    return shared[:SHARED_TERMS]
