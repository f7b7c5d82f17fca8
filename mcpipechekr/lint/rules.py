"""Static rules: what a tool's description and schema lack, found without any model.

Each rule is one function taking the tool (and the server's other tools, where
the rule compares them) and returning findings. Rule ids are stable, because
accepted risks and docs/lint.md name them:

| id | severity | fires when |
| --- | --- | --- |
| TEF-D001 | error | the tool has no description |
| TEF-D002 | info | the description is shorter than MIN_DESCRIPTION_WORDS content words |
| TEF-D003 | warning | the description only restates the name |
| TEF-D004 | warning | nothing says what the tool returns (no output schema, no "returns …") |
| TEF-D005 | warning | the description uses as an argument a name the server does not know |
| TEF-D006 | warning | the description is longer than LONG_DESCRIPTION_TOKENS (estimated) |
| TEF-P001 | warning | a parameter has no description |
| TEF-P002 | info | a required parameter is not mentioned in the description nor described |
| TEF-P003 | info | an enum parameter's values are not explained in its description |
| TEF-N001 | warning | the tool's name style differs from most of the server's tools |
| TEF-A001 | warning | the tool declares no annotations (readOnlyHint, destructiveHint, …) |

Limits: the rules read words, not meaning. D005 only considers identifiers that
look like parameter names (snake_case or camelCase) and ignores names the
server uses anywhere else (other parameters, output fields, tool names), so it
misses plain-word parameters and cannot judge prose. A mention that is a
parameter written in another case style (`max_days` for `maxDays`) is named as
that parameter, since an agent may send it as written.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from mcpipechekr._util.tokens import estimate_tokens
from mcpipechekr.artifacts.tef_report import StaticFinding
from mcpipechekr.artifacts.tools_snapshot import ToolDefinition
from mcpipechekr.lint._text import all_property_names, schema_properties, words
from mcpipechekr.lint.vocabulary import ARGUMENT_AFTER, PARAMETER_SECTIONS, ServerVocabulary, docstring_items

MIN_DESCRIPTION_WORDS = 5
LONG_DESCRIPTION_TOKENS = 500
RETURN_WORDS = re.compile(
    r"\b(return|returns|returned|returning|gives?|lists?|yields?|outputs?|responds?|results?|"
    r"reports?|answers?|provides?|produces?|shows?|reads?|counts?)\b",
    re.IGNORECASE,
)
# A sentence that opens with a verb of reading or making and its object names what the tool hands back:
# "Get the … information", "Search a paper for passages …", "Take a screenshot", "Generate a chart".
PRODUCING = re.compile(
    r"(?:^|[.!?:]\s+|\n\s*)(?:this\s+tool\s+|tool\s+to\s+)?"
    r"(?:gets?|retrieves?|fetch(?:es)?|reads?|search(?:es)?|finds?|look(?:s)?\s+up|quer(?:y|ies)|takes?|captures?|"
    r"generates?|renders?|describes?|explains?|calculates?|computes?|counts?|extracts?|summari[sz]es?|"
    r"shows?|views?|inspects?|echo(?:es)?)\b"
    r"(?!\s+(?:by|in|into|on|across|with|within|to|from|if|whether|that|and|or)\b)\s+\S",
    re.IGNORECASE,
)
_IDENTIFIER = re.compile(r"`?\b([a-z][a-z0-9]*(?:_[a-z0-9]+)+|[a-z]+(?:[A-Z][a-z0-9]+)+)\b`?")


@dataclass(frozen=True)
class ServerContext:
    """What rules comparing a tool with the rest of the server need, computed once per server.

    Computing it per tool would make linting quadratic in the number of tools.
    """

    known_names: frozenset[str]
    """Tool names and every property name in any tool's input or output schema."""
    name_styles: Counter[str]
    """How many tools use each naming style."""
    vocabulary: ServerVocabulary
    """Result fields, enum values, titles: names a description may use that are not parameters."""
    tools: frozenset[str]
    """The server's tool names."""

    @classmethod
    def of(cls, tools: Sequence[ToolDefinition]) -> ServerContext:
        known = {tool.name for tool in tools}
        for tool in tools:
            known.update(all_property_names(tool.input_schema))
            known.update(all_property_names(tool.output_schema))
        styles = Counter(style for tool in tools if (style := name_style(tool.name)))
        names = frozenset(tool.name for tool in tools)
        return cls(frozenset(known), styles, ServerVocabulary.of(tools), names)


Rule = Callable[[ToolDefinition, ServerContext], list[StaticFinding]]


def _finding(rule_id: str, severity: str, message: str, suggestion: str) -> StaticFinding:
    return StaticFinding(rule_id=rule_id, severity=severity, message=message, suggestion=suggestion)


def _description(tool: ToolDefinition) -> str:
    return (tool.description or "").strip()


def rule_description_present(tool: ToolDefinition, _: ServerContext) -> list[StaticFinding]:
    description = _description(tool)
    if not description:
        return [
            _finding(
                "TEF-D001",
                "error",
                "no description: an agent sees only the name",
                "Say what the tool does, when to use it instead of the others, and what it returns.",
            )
        ]
    count = len(words(description))
    if count < MIN_DESCRIPTION_WORDS:
        return [
            _finding(
                "TEF-D002",
                "info",
                f"description is very short ({count} content word(s)): '{description}'",
                "Add when to use the tool, what its inputs mean and what it returns.",
            )
        ]
    return []


def rule_not_just_the_name(tool: ToolDefinition, _: ServerContext) -> list[StaticFinding]:
    description = _description(tool)
    said = set(words(description))
    named = set(words(tool.name)) | set(words(tool.title))
    if said and said <= named:
        return [
            _finding(
                "TEF-D003",
                "warning",
                f"description only restates the name '{tool.name}'",
                "Describe behaviour the name cannot: inputs, limits, result, and when not to use it.",
            )
        ]
    return []


def rule_states_result(tool: ToolDefinition, _: ServerContext) -> list[StaticFinding]:
    description = _description(tool)
    if not description or tool.output_schema or RETURN_WORDS.search(description):
        return []
    if PRODUCING.search(description):
        return []  # "Get the reviews on a pull request" says what comes back as plainly as "Lists …"
    return [
        _finding(
            "TEF-D004",
            "warning",
            "nothing says what the tool returns (no output schema, no 'returns …' in the description)",
            "Add a sentence such as 'Returns … with fields …', or declare an outputSchema.",
        )
    ]


def rule_mentions_existing_parameters(tool: ToolDefinition, server: ServerContext) -> list[StaticFinding]:
    description = _description(tool)
    params = schema_properties(tool.input_schema)
    known = set(server.known_names)
    for prop in params.values():
        known.update(re.findall(r"\w+", str(prop.get("description") or "")))
    respelled = {_spelling(name): name for name in params}
    unknown: list[str] = []
    written: dict[str, str] = {}  # a mention -> the parameter it means, written in another case style
    for match in _IDENTIFIER.finditer(description):
        name = match.group(1)
        if name in known or name.lower() in server.vocabulary or name in unknown or name in written:
            continue
        if (param := respelled.get(_spelling(name))) is not None:
            written[name] = param
        elif _as_parameter(description, match.start(1), match.end(1), server.tools):
            unknown.append(name)
    if not unknown and not written:
        return []
    have = ", ".join(params) or "none"
    problems = [
        f"description writes {name!r} for the parameter {param!r}: an agent may send the name as written"
        for name, param in written.items()
    ]
    if unknown:
        problems.append(
            f"description mentions {', '.join(repr(n) for n in unknown)}, which is not a parameter "
            f"(parameters: {have})"
        )
    return [
        _finding(
            "TEF-D005",
            "warning",
            "; ".join(problems),
            "Rename the mention to the real parameter, or add the parameter the text promises.",
        )
    ]


_PARAMETER_BEFORE = re.compile(
    r"\b(?:set|sets|pass|passing|use|using|provide|providing|specify|specifying|supply|give|with|via)"
    r"\s+(?:the\s+)?[`'\"]?$",
    re.IGNORECASE,
)
_CALL_ARGUMENTS = re.compile(r"\b([A-Za-z_][\w.-]*)\(([^()]*)$")


def _as_parameter(text: str, start: int, end: int, tools: frozenset[str]) -> bool:
    """Whether a name is used as an argument: "set express_delivery", "the `limit` parameter",
    "get_item(itemId, …)" for a tool of the server, or an item of a docstring `Args:` section; not a
    result field, a value or a setting."""
    for section, item_start, item_end in docstring_items(text):
        if item_start <= start < item_end:
            return section in PARAMETER_SECTIONS and not text[item_start:start].strip()
    if re.match(r"^[`'\"]?\s*(?:setting|config)", text[end : end + 20], re.IGNORECASE):
        return False
    if ARGUMENT_AFTER.match(text[end : end + 20]):
        return True
    call = _CALL_ARGUMENTS.search(text, max(0, start - 80), start)
    if call is not None and call.group(1) in tools:
        # an argument's name ("get_item(itemId, …)"), not a value ("promptId='onb2_01'") or escaped text
        return not re.split(r"[(,]", call.group(2))[-1].strip()
    return bool(_PARAMETER_BEFORE.search(text, max(0, start - 30), start))


def _spelling(name: str) -> str:
    """A name without its case style: `max_days`, `maxDays` and `max-days` read the same."""
    return re.sub(r"[_-]", "", name).lower()


def rule_not_too_long(tool: ToolDefinition, _: ServerContext) -> list[StaticFinding]:
    tokens = estimate_tokens(_description(tool))
    if tokens <= LONG_DESCRIPTION_TOKENS:
        return []
    return [
        _finding(
            "TEF-D006",
            "warning",
            f"description is about {tokens} tokens (estimated), over {LONG_DESCRIPTION_TOKENS}: "
            "every agent pays for it on every request",
            "Keep the first sentence decisive and move reference material to parameter descriptions.",
        )
    ]


def rule_parameters_described(tool: ToolDefinition, _: ServerContext) -> list[StaticFinding]:
    bare = [name for name, prop in schema_properties(tool.input_schema).items() if not _prop_text(prop)]
    if not bare:
        return []
    return [
        _finding(
            "TEF-P001",
            "warning",
            f"parameter(s) without a description: {', '.join(bare)}",
            "Give each parameter a description with its format and an example value.",
        )
    ]


def rule_required_mentioned(tool: ToolDefinition, _: ServerContext) -> list[StaticFinding]:
    description_words = set(words(_description(tool)))
    params = schema_properties(tool.input_schema)
    missing = []
    for name in tool.input_schema.get("required") or []:
        if name not in params:
            continue
        if _prop_text(params[name]) or set(words(name)) <= description_words:
            continue
        missing.append(name)
    if not missing:
        return []
    return [
        _finding(
            "TEF-P002",
            "info",
            f"required parameter(s) neither mentioned in the description nor described: {', '.join(missing)}",
            "Say what each required argument is, in the description or the parameter's own description.",
        )
    ]


def rule_enums_explained(tool: ToolDefinition, _: ServerContext) -> list[StaticFinding]:
    findings = []
    description = _description(tool).lower()
    for name, prop in schema_properties(tool.input_schema).items():
        values = [str(v) for v in _enum_values(prop)]
        if len(values) < 2:
            continue
        text = (_prop_text(prop) + " " + description).lower()
        unexplained = [value for value in values if value.lower() not in text]
        if unexplained:
            findings.append(
                _finding(
                    "TEF-P003",
                    "info",
                    f"parameter '{name}' has enum values not explained anywhere: {', '.join(unexplained)}",
                    f"In '{name}''s description, say what each value does and which is the default.",
                )
            )
    return findings


NAME_STYLES = ("snake_case", "camelCase", "kebab-case", "PascalCase", "dotted.name")


def name_style(name: str) -> str | None:
    """The naming style of a tool name; None for one lower-case word, which fits every style."""
    if re.fullmatch(r"[a-z][a-z0-9]*", name):
        return None
    if re.fullmatch(r"[a-z][a-z0-9]*(_[a-z0-9]+)+", name):
        return "snake_case"
    if re.fullmatch(r"[a-z][a-z0-9]*(-[a-z0-9]+)+", name):
        return "kebab-case"
    if re.fullmatch(r"[a-z][a-z0-9]*(\.[a-z0-9_]+)+", name):
        return "dotted.name"
    if re.fullmatch(r"[a-z][a-z0-9]*([A-Z][a-z0-9]*)+", name):
        return "camelCase"
    if re.fullmatch(r"([A-Z][a-z0-9]*)+", name):
        return "PascalCase"
    return "mixed"


def rule_name_style(tool: ToolDefinition, server: ServerContext) -> list[StaticFinding]:
    styles = server.name_styles
    mine = name_style(tool.name)
    if mine is None or not styles:
        return []
    (usual, count), *_ = styles.most_common(1)
    if mine == usual or count <= styles[mine]:
        return []
    return [
        _finding(
            "TEF-N001",
            "warning",
            f"name '{tool.name}' is {mine} while most of this server's tools ({count}) are {usual}",
            f"Rename it in {usual} so tool names read as one family.",
        )
    ]


def rule_annotations(tool: ToolDefinition, _: ServerContext) -> list[StaticFinding]:
    if tool.annotations:
        return []
    return [
        _finding(
            "TEF-A001",
            "warning",
            "no annotations: clients cannot tell whether the tool only reads or changes state",
            "Declare readOnlyHint, destructiveHint, idempotentHint and openWorldHint.",
        )
    ]


RULES: tuple[Rule, ...] = (
    rule_description_present,
    rule_not_just_the_name,
    rule_states_result,
    rule_mentions_existing_parameters,
    rule_not_too_long,
    rule_parameters_described,
    rule_required_mentioned,
    rule_enums_explained,
    rule_name_style,
    rule_annotations,
)

SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}


def lint_tool(tool: ToolDefinition, server: ServerContext) -> list[StaticFinding]:
    """Every static finding for one tool, worst first."""
    findings = [finding for rule in RULES for finding in rule(tool, server)]
    return sorted(findings, key=lambda f: (SEVERITY_ORDER[f.severity], f.rule_id))


def lint_tools(tools: Sequence[ToolDefinition]) -> dict[str, list[StaticFinding]]:
    """Static findings of every tool, by name."""
    server = ServerContext.of(tools)
    return {tool.name: lint_tool(tool, server) for tool in tools}


def _prop_text(prop: dict[str, Any]) -> str:
    """A parameter's own description; its `title` does not count (generators derive it from the name)."""
    description = prop.get("description")
    return description.strip() if isinstance(description, str) else ""


def _enum_values(prop: dict[str, Any]) -> list[Any]:
    if isinstance(prop.get("enum"), list):
        return prop["enum"]
    items = prop.get("items")
    if isinstance(items, dict) and isinstance(items.get("enum"), list):
        return items["enum"]
    for key in ("anyOf", "oneOf"):
        for option in prop.get(key) or []:
            if isinstance(option, dict) and isinstance(option.get("enum"), list):
                return option["enum"]
    return []
