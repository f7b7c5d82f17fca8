"""Phase 2: traces in, bugs out, each waste priced in tokens.

One module per analyzer (`call_count`, `repeated_calls`, `date_windows`,
`pagination`, `error_workaround`, `unread_fields`, `wrong_tool`, `oversized`),
each a small class whose docstring states its rule and its blind spots; then
`correctness` (answers against the baseline), `costing` (the token prices,
with `turns`: the model requests around each call),
`aggregate` (sightings into bugs), `stats` (Wilson, pass@k, pass^k),
`narrative` (phase2_narrative.md, and the optional model evaluator),
`issues` (the bugs as issue files, which the review's `export` writes) and
`orchestrate` (`evaluate_run`). docs/evaluation.md explains them for users.
"""

from mcpipechekr.evaluate.base import Analyzer, Budgets, BugSighting, TraceContext
from mcpipechekr.evaluate.orchestrate import (
    default_analyzers,
    evaluate_contexts,
    evaluate_run,
    evaluate_trace,
    load_contexts,
    write_evaluation,
)

__all__ = [
    "Analyzer",
    "Budgets",
    "BugSighting",
    "TraceContext",
    "default_analyzers",
    "evaluate_contexts",
    "evaluate_run",
    "evaluate_trace",
    "load_contexts",
    "write_evaluation",
]
