"""Oversized results: tool results far above the check layer's response budget."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from mcpipechekr._util.tokens import estimate_tokens
from mcpipechekr.evaluate.base import BugSighting, TraceContext


@dataclass
class OversizedResults:
    """Flags results over `factor` times the tool's response budget (`check.tool_budgets`, else
    `check.budget_tokens`).

    Rule: the whole result's estimated tokens (what the server returned, even
    when the client showed the model only a preview of it) against the budget;
    one sighting per tool per trace, priced as the tokens above budget of what
    the model read, so a result a client previewed costs only its preview.
    `mcpipechekr check` warns at the budget itself; here only what is far
    above it counts, because agents legitimately ask for big pages now and then.

    Blind spots: the estimate is 4 bytes per token, so JSON-heavy results are
    underestimated; a big result the task really needed is still flagged.
    """

    name: ClassVar[str] = "oversized"
    factor: float = 2.0

    def analyze(self, ctx: TraceContext) -> list[BugSighting]:
        over: dict[str, list[tuple[int, int, int]]] = {}
        for call in ctx.calls:
            budget = ctx.budgets.for_tool(call.tool)
            if call.whole_result_tokens > self.factor * budget:
                over.setdefault(call.tool, []).append((call.index, call.whole_result_tokens, budget))
        sightings = []
        for tool, rows in sorted(over.items()):
            biggest = max(tokens for _, tokens, _ in rows)
            budget = rows[0][2]
            seen = [ctx.trace.steps[step].result_tokens_estimated for step, _, _ in rows]  # type: ignore[union-attr]
            observed = sum(seen)
            args_cost = sum(estimate_tokens(ctx.trace.steps[step].arguments) for step, _, _ in rows)  # type: ignore[union-attr]
            sightings.append(
                BugSighting(
                    type="efficiency",
                    slug=("oversized-result", tool),
                    severity="high" if biggest > 5 * budget else "medium",
                    tool=tool,
                    trigger=f"calling `{tool}`",
                    observed=f"{len(rows)} result(s) of up to {biggest} estimated tokens, "
                    f"over {self.factor:g}x the {budget}-token budget",
                    expected=f"results within {budget} tokens (a smaller default page, or a projection)",
                    acceptance_criteria=[
                        f"{tool}'s default result stays under {budget} estimated tokens",
                        "mcpipechekr check reports no response-budget warning for it",
                    ],
                    steps=[step for step, _, _ in rows],
                    observed_tokens=observed + args_cost,
                    optimal_tokens=sum(min(budget, tokens) for tokens in seen) + args_cost,
                    details={"budget_tokens": budget, "largest_tokens": biggest},
                )
            )
        return sightings
