"""The offline rewrite: a new text built from the evidence alone, with no model.

Every rewrite keeps the current text whole and adds one sentence, so nothing
the author wrote is lost and the change reads as a diff of one line:

- the right tool of a wrong or late choice gets the requests it answers, in
  the tasks' own words: each task's prompt with its data left out (names,
  quoted values, numbers, dates: `…`), which holds exactly the words the
  description lacked ("Use it for requests such as "What did the customer …
  complain about most recently?"");
- the tool the agent took instead gets what it is not for, by the right tool's
  own summary ("For entries of the support log for a person, use `ticket_log`
  instead."), never the request's words, which a word-counting selector would
  read as a reason to pick it;
- an unused ordering parameter gets what its values do and when to set it
  ("`desc` lists the latest first, `asc` the earliest first. Set it to `desc`
  to get the latest match on the first page, in one call, instead of paging
  …"); a value's meaning is read from its words (asc/desc, newest/oldest, …)
  only when the task asked for one end of a date order;
- an unused field-choosing parameter gets the fields agents used and those
  they never read, with what the latter cost;
- a parameter whose value was refused gets the value that worked and the one
  refused, with the server's message.

Limits: English; a prompt whose data is not marked (a lower-case name) keeps
it; the sentence is built from one run's tasks, so it describes the requests
seen, not every request the tool serves (a person edits it, or a model drafts
it: `draft.py`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from mcpipechekr.artifacts.description_suggestions import TextEdit
from mcpipechekr.artifacts.tools_snapshot import ToolDefinition
from mcpipechekr.lint._text import schema_properties
from mcpipechekr.lint.suggest.evidence import Case, enum_values, value_end

MAX_REQUEST_WORDS = 24
MAX_SUMMARY_WORDS = 14
ELIDED = "…"

_QUOTED = re.compile(r"\"[^\"]*\"|“[^”]*”|'[^']{2,}'|`[^`]*`")
_WITH_DIGIT = re.compile(r"\S*\d\S*")
_ADDRESS = re.compile(r"\S+@\S+|https?://\S+")
_NAME = re.compile(r"(?<=[\w,;:] )[A-Z][\w'’-]+(?: [A-Z][\w'’-]+)*")
_RUNS = re.compile(rf"{ELIDED}(?:[\s,]*{ELIDED})+")


def request_phrase(prompt: str) -> str:
    """A task's prompt with its data left out: quoted values, numbers, dates, addresses, names (`…`)."""
    text = " ".join(prompt.split())
    for pattern in (_QUOTED, _ADDRESS, _WITH_DIGIT):
        text = pattern.sub(lambda match: ELIDED + _trailing(match.group(0)), text)
    text = _NAME.sub(ELIDED, text)
    text = _RUNS.sub(ELIDED, text)
    words = text.split()
    if len(words) > MAX_REQUEST_WORDS:
        text = " ".join(words[:MAX_REQUEST_WORDS]) + " " + ELIDED
    return text.strip()


def _trailing(token: str) -> str:
    """The sentence punctuation a removed token carried (`SO-9?` keeps its `?`)."""
    found = re.search(r"[.,;:!?]+$", token)
    return found.group(0) if found else ""


def _sentence(text: str | None) -> str:
    """The text ending in sentence punctuation, so one more sentence can follow it; "" for none."""
    text = (text or "").strip()
    if not text:
        return ""
    return text if text[-1] in ".!?)" else text + "."


def _join(current: str | None, sentence: str) -> str:
    head = _sentence(current)
    return f"{head} {sentence}" if head else sentence


def right_tool_text(tool: ToolDefinition, prompts: Sequence[str]) -> str:
    """The right tool's description with the requests it answers, as the tasks put them."""
    phrases = list(dict.fromkeys(request_phrase(prompt) for prompt in prompts if prompt.strip()))[:2]
    quoted = " or ".join(f'"{phrase}"' for phrase in phrases)
    end = "" if phrases and phrases[-1][-1:] in (".", "?", "!", ELIDED) else "."
    return _join(tool.description, f"Use it for requests such as {quoted}{end}")


def summary(tool: ToolDefinition) -> str:
    """The first sentence of a tool's description, as a noun phrase to follow "For", when it is short."""
    first = re.split(r"(?<=[.!?])\s", (tool.description or "").strip(), maxsplit=1)[0].rstrip(".!?")
    if not first or len(first.split()) > MAX_SUMMARY_WORDS or "`" in first:
        return f"what `{tool.name}` answers"
    return first[0].lower() + first[1:] if not first[:2].isupper() else first


def misled_tool_text(misled: ToolDefinition, right: ToolDefinition) -> str:
    """The misleading tool's description with what it is not for, pointing at the right tool."""
    return _join(misled.description, f"For {summary(right)}, use `{right.name}` instead.")


def order_parameter_text(prop: dict[str, Any], name: str, facts: dict[str, Any]) -> str:
    """An ordering parameter's description: what its values do, and the walk it saves."""
    wanted, value = facts.get("wanted"), facts.get("value")
    values = enum_values(prop)
    if wanted and values and all(value_end(item) for item in values):
        meaning = ", ".join(f"`{item}` lists the {value_end(item)} first" for item in values)
        head = f"The order of the results: {meaning}."
    elif values:
        head = f"The order of the results: one of {', '.join(f'`{item}`' for item in values)}."
    else:
        head = "The order of the results."
    walk = "querying one date window after another" if "window" in str(facts.get("walk")) else "paging"
    target = f"the {wanted} match" if wanted else "the wanted item"
    setting = f"Set it to `{value}`" if value else "Set it"
    return _join(
        prop.get("description"),
        f"{head} {setting} to get {target} on the first page, in one call, instead of {walk}.",
    )


def field_parameter_text(prop: dict[str, Any], facts: dict[str, Any]) -> str:
    """A field-choosing parameter's description: the fields agents used, those never read and their cost."""
    kept = [f"`{name}`" for name in facts.get("kept", [])[:4]]
    unread = [f"`{name}`" for name in facts.get("unread", [])[:4]]
    example = f", e.g. {', '.join(kept)}" if kept else ""
    cost = f" (about {facts['tokens']} tokens a call)" if facts.get("tokens") else ""
    return _join(
        prop.get("description"),
        f"Name only the fields needed{example}: without it every field comes back, "
        f"{', '.join(unread)} included{cost}.",
    )


def values_parameter_text(prop: dict[str, Any], facts: dict[str, Any]) -> str:
    """A parameter's description with the value that worked and the one refused, with the server's words."""
    error = " ".join(str(facts.get("error") or "").split())
    error = re.sub(r"^error executing tool [\w.-]+:\s*", "", error, flags=re.I)
    reason = f" ({error[:100].rstrip()})" if error else ""
    worked, failed = _literal(facts.get("worked")), _literal(facts.get("failed"))
    return _join(prop.get("description"), f"For example {worked}; {failed} is refused{reason}.")


def _literal(value: Any) -> str:
    return f"`{json.dumps(value, ensure_ascii=False)}`" if not isinstance(value, str) else f"`{value}`"


def evidence_edits(
    case: Case, tools: dict[str, ToolDefinition], prompts: Sequence[str]
) -> tuple[TextEdit, list[TextEdit]]:
    """The offline rewrite of a case: its main edit, and the edits to go with it (the misleading tool's)."""
    tool = tools[case.tool]
    if case.kind in ("wrong_tool", "late_tool"):
        main = TextEdit(tool=tool.name, current=tool.description, proposed=right_tool_text(tool, prompts))
        also = []
        if case.misled is not None and case.misled in tools:
            misled = tools[case.misled]
            also.append(
                TextEdit(
                    tool=misled.name, current=misled.description, proposed=misled_tool_text(misled, tool)
                )
            )
        return main, also
    assert case.parameter is not None
    prop = schema_properties(tool.input_schema).get(case.parameter, {})
    current = prop.get("description") if isinstance(prop.get("description"), str) else None
    if case.kind == "parameter_values":
        text = values_parameter_text(prop, case.facts)
    elif "unread" in case.facts:
        text = field_parameter_text(prop, case.facts)
    else:
        text = order_parameter_text(prop, case.parameter, case.facts)
    return TextEdit(tool=tool.name, parameter=case.parameter, current=current, proposed=text), []


def reasoning(case: Case) -> str:
    """How the offline text of a case was built, in one sentence for the report."""
    if case.kind in ("wrong_tool", "late_tool"):
        taken = f"`{case.misled}`" if case.misled else "another tool"
        return (
            f"the agent took {taken} for requests `{case.tool}` answers: `{case.tool}` gets those requests "
            f"in the tasks' words (their data left out), {taken} a pointer to `{case.tool}`"
        )
    if case.kind == "parameter_values":
        return f"a value of `{case.parameter}` was refused and another accepted: the description gets both"
    if "unread" in case.facts:
        return (
            f"`{case.tool}` returned fields the agent never used while `{case.parameter}` could have left "
            "them out: the description says so"
        )
    return (
        f"the agent {case.facts.get('walk')} on `{case.tool}` without setting `{case.parameter}`, which "
        "orders the results: the description says what its values do and when to set it"
    )
