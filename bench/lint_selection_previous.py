"""The lexical selector as it was before BM25F fields and read/write intent: kept for comparison only.

A frozen copy of the earlier `LexicalSelector` (plain BM25, k1=1.2, b=0.75, over
one document per tool: name, title, description and every parameter's name and
description run together) with its two query intents, so that
`lint_selection_accuracy.py` prints the previous and the current scorer's
accuracy measured in the same run. The tokenizer is the library's (it did not
change). Nothing in the package imports this.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

from mcpipechekr.artifacts.tools_snapshot import ToolDefinition
from mcpipechekr.lint._text import schema_properties, words
from mcpipechekr.lint.selection import Choice, SelectionQuery

_SHOW_ONE = (
    r"\b(full|whole|entire|complete)\b"
    r"|\b(show|open|read|display) (me )?(the )?(email|message|item|record|document|file)\b"
)
_INTENTS = (
    (re.compile(r"\bhow many\b|\bnumber of\b|\bhow often\b", re.IGNORECASE), "count number total"),
    (re.compile(_SHOW_ONE, re.IGNORECASE), "read complete full one"),
)


def _tool_text(tool: ToolDefinition) -> str:
    parts = [tool.name, tool.title or "", tool.description or ""]
    for name, prop in schema_properties(tool.input_schema).items():
        parts.append(name)
        if isinstance(prop.get("description"), str):
            parts.append(prop["description"])
    return "\n".join(parts)


def _query_words(text: str) -> list[str]:
    extra = [more for pattern, more in _INTENTS if pattern.search(text)]
    return words(text) + words(" ".join(extra))


class PreviousLexicalSelector:
    """Plain BM25 over one bag of words per tool; the top-scoring tool wins, none if no word matches."""

    label = "lexical-bm25 (previous)"
    K1 = 1.2
    B = 0.75

    def select(
        self, queries: Sequence[SelectionQuery], tools: Sequence[ToolDefinition], repeat: int
    ) -> list[list[Choice]]:
        docs = [Counter(words(_tool_text(tool))) for tool in tools]
        lengths = [sum(doc.values()) for doc in docs]
        average = (sum(lengths) / len(lengths)) if lengths else 0.0
        df: Counter[str] = Counter()
        for doc in docs:
            df.update(doc.keys())
        n = len(docs)
        idf = {term: math.log(1 + (n - freq + 0.5) / (freq + 0.5)) for term, freq in df.items()}
        answers = []
        for query in queries:
            scores = [0.0] * n
            for term in set(_query_words(query.text)):
                if term not in idf:
                    continue
                for i, doc in enumerate(docs):
                    tf = doc.get(term, 0)
                    if tf:
                        norm = self.K1 * (1 - self.B + self.B * lengths[i] / (average or 1.0))
                        scores[i] += idf[term] * tf * (self.K1 + 1) / (tf + norm)
            best = max(range(n), key=lambda i: (scores[i], -i), default=None)
            tool = tools[best].name if best is not None and scores[best] > 0 else None
            answers.append([Choice(tool, "low")])
        return answers
