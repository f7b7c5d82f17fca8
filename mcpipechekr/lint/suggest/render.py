"""description_suggestions.json as `mcpipechekr lint --suggest` prints it: a readable list, plain text."""

from __future__ import annotations

from mcpipechekr.artifacts.description_suggestions import (
    DescriptionSuggestion,
    DescriptionSuggestions,
    Rescore,
    TextEdit,
)


def ordinal(place: int | None) -> str:
    """`1st`, `2nd`, `3rd`, `11th`, …; `unranked` for a tool that shares no word with the query."""
    if place is None:
        return "unranked"
    suffix = "th" if 10 <= place % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(place % 10, "th")
    return f"{place}{suffix}"


def _share(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def _count(value: float) -> str:
    return str(int(value)) if value == int(value) else f"{value:.2f}"


def title(item: DescriptionSuggestion) -> str:
    """What the suggestion is about, in one line."""
    taken = next((edit.tool for edit in item.also), None)
    if item.kind == "wrong_tool":
        return f"`{item.tool}` was never called" + (f"; the agent took `{taken}`" if taken else "")
    if item.kind == "late_tool":
        return f"`{item.tool}` was called only after " + (f"`{taken}`" if taken else "other tools")
    if item.kind == "unused_parameter":
        return f"`{item.parameter}` of `{item.tool}` went unused"
    return f"`{item.parameter}` of `{item.tool}` does not say what it accepts"


def _edit(edit: TextEdit) -> list[str]:
    name = f"{edit.tool}.{edit.parameter}" if edit.parameter else edit.tool
    return [f"  {name}", f"    now:      {edit.current or '(none)'}", f"    proposed: {edit.proposed}"]


def _rescore(figures: Rescore) -> list[str]:
    right = (
        f"{_count(figures.right_before)}/{figures.queries} → {_count(figures.right_after)}/{figures.queries}"
    )
    lines = [f"  re-score, {figures.selector}: {figures.verdict}; right {right} queries"]
    for change in figures.changes:
        picks = f"picked {change.picked_before or 'none'} → {change.picked_after or 'none'}"
        if figures.selector == "lexical-bm25":
            place = f"{change.expected_tool} {ordinal(change.rank_before)} → {ordinal(change.rank_after)}"
        else:
            place = (
                f"{change.expected_tool} right {_share(change.right_before)} → {_share(change.right_after)}"
            )
        lines.append(f"    {change.source}: {place} ({picks})")
    for rank in figures.parameter:
        lines.append(
            f"    {rank.source}: the parameter {ordinal(rank.rank_before)} → {ordinal(rank.rank_after)} of "
            f"{rank.parameters}"
        )
    for tool in figures.tools:
        lines.append(
            f"    {tool.tool}: precision {_share(tool.precision_before)} → {_share(tool.precision_after)}, "
            f"recall {_share(tool.recall_before)} → {_share(tool.recall_after)}"
        )
    return lines


def render_suggestion(item: DescriptionSuggestion) -> list[str]:
    """One suggestion: its title, the texts, the steps that motivate it, its re-scores and notes."""
    origin = "" if item.origin == "evidence" else " (drafted by the model)"
    lines = [f"{item.bug_id}: {title(item)}{origin}", f"  why: {item.reasoning}"]
    for edit in item.edits():
        lines += _edit(edit)
    if item.quotes:
        lines.append("  evidence:")
    for quote in item.quotes:
        lines.append(f"    {quote.trace} step {quote.step}: {quote.call}")
        if quote.agent_said:
            lines.append(f'      the agent said: "{quote.agent_said}"')
        lines.append(f"      {quote.why}")
    for figures in item.rescores:
        lines += _rescore(figures)
    lines += [f"  note: {note}" for note in item.notes]
    return lines


def nothing_to_rewrite(suggestions: DescriptionSuggestions) -> str:
    """The line that says a run has no suggestion, and why: no bug at all, or none a description caused."""
    if not suggestions.skipped:
        return "The run's bug report lists no bugs: there is no description to rewrite."
    return (
        "No bug of this run was caused by a tool or parameter description (a wrong or late tool, an "
        "unused parameter, a parameter's values guessed): there is no description to rewrite."
    )


def render_suggestions(suggestions: DescriptionSuggestions, written_to: str | None = None) -> str:
    """The whole list: a head line, each suggestion, then the bugs without one and why."""
    where = f" → {written_to}" if written_to else ""
    lines = [
        f"{suggestions.run_id}: {len(suggestions.suggestions)} description suggestion(s), "
        f"{len(suggestions.skipped)} bug(s) without ({', '.join(suggestions.selectors)}){where}"
    ]
    if not suggestions.suggestions:
        lines.append(nothing_to_rewrite(suggestions))
    for item in suggestions.suggestions:
        lines += ["", *render_suggestion(item)]
    if suggestions.skipped:
        lines += ["", "No suggestion:"]
        lines += [f"  {skip.bug_id}: {skip.reason}" for skip in suggestions.skipped]
    return "\n".join(lines) + "\n"
