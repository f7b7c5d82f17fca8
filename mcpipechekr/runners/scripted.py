"""The generic scripted agent: the demo model for a server nobody wrote a demo agent for.

Why: `mcpipechekr init` sets every phase to `demo`, so `mcpipechekr run` and
`doit loop` must give a sensible trace offline on any server, not only on the
bundled example (whose own rule-based agent lives in its repository, see
`runners/demo.py`). This one is deliberately plain: it decides only from the
prompt, the tool list and the results so far, the same on every run.

A request takes at most two calls:
- the tool whose name and description share the most words with the prompt
  (its name's words count twice; on a tie, one whose required arguments the
  prompt can fill, then the server's order);
- required arguments come from the prompt: an identifier from a token with a
  digit in it, enums from a value the prompt names, numbers from its numbers,
  strings from a quoted string, then a capitalised name, then the first word
  of the prompt the tool's own text does not use; else the schema's default,
  example, first enum value or minimum. An optional parameter is set only when
  the prompt names one of its enum values, names the parameter next to a
  number ("in 20 minutes" for `max_minutes`), or has a quoted string or a name
  for a search parameter (`query`, `text`, ...);
- a tool needing an identifier the prompt lacks is called after a search (the
  best tool the prompt can fill), with the identifier of the hit that best
  matches the prompt; after a listing, the hit is opened with a get-by-id tool
  when the prompt asks for something only that tool's description offers;
- the answer says what the last result said, and every tool error met.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ThinkingPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo
from pydantic_ai.tools import ToolDefinition

from mcpipechekr.runners.messages import ToolResult, tool_results, user_prompt

_STOP = set(
    "a an and are as at be by can could did do does for from give has have i in is it its me my of on or "
    "please show tell that the their there this to was were what when which who with would you your".split()
)
_LEADING = _STOP | {"how", "where", "why", "find", "list", "get", "name"}
_SEARCH = {"search", "find", "list", "query", "lookup", "browse"}
_QUERY = {"query", "q", "text", "search", "keywords", "keyword", "terms"}
"""Optional string parameters that take the prompt's quoted string or name."""
_IDENTIFIER = re.compile(r"(^|_)(id|isbn|sku|uuid|slug|key)$|[a-z]Id$")
SHOWN_ITEMS = 10
"""Most listed items the answer quotes."""


def words(text: str) -> set[str]:
    """Lower-case words of a text (names split at `_` and camel case), a plural's `s` dropped."""
    text = " ".join(re.findall(r"[a-z]+", re.sub(r"([a-z])([A-Z])", r"\1 \2", text).lower()))
    found = {w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w for w in text.split()}
    return found - _STOP


def _schema(prop: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    """A parameter's schema with a `$defs` reference and a nullable `anyOf` unwrapped."""
    ref = prop.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        target = (root.get("$defs") or {}).get(ref.rsplit("/", 1)[1]) or {}
        prop = {**target, **{k: v for k, v in prop.items() if k != "$ref"}}
    options = [o for o in prop.get("anyOf") or [] if isinstance(o, dict) and o.get("type") != "null"]
    if len(options) == 1:
        return {**_schema(options[0], root), **{k: v for k, v in prop.items() if k != "anyOf"}}
    return prop


@dataclass
class Tool:
    name: str
    params: dict[str, dict[str, Any]]
    required: list[str]
    text: set[str]
    name_words: set[str]

    @classmethod
    def of(cls, tool: ToolDefinition) -> Tool:
        root = tool.parameters_json_schema or {}
        params = {n: _schema(p, root) for n, p in (root.get("properties") or {}).items()}
        described = " ".join(f"{n} {p.get('description', '')}" for n, p in params.items())
        text = words(f"{tool.name} {tool.description or ''} {described}")
        return cls(tool.name, params, list(root.get("required") or []), text, words(tool.name))

    @property
    def ids(self) -> list[str]:
        """Required parameters that identify one thing (`id`, `*_id`, `isbn`, ...)."""
        return [n for n in self.required if _IDENTIFIER.search(n)]


class Prompt:
    """What the agent reads from the request: its words, quoted strings, names, numbers, id-like tokens."""

    def __init__(self, text: str):
        self.lower, self.words = text.lower(), words(text)
        self.quoted = [a or b for a, b in re.findall(r'"([^"]+)"|“([^”]+)”', text)]
        self.names: list[str] = []  # runs of capitalised words, less a leading "Which", "How", ...
        for run in re.findall(r"\b[A-Z][a-z]+(?:\s+[A-Z][a-z]+)*", text):
            kept = run.split()
            while kept and kept[0].lower() in _LEADING:
                kept.pop(0)
            if kept and " ".join(kept) not in self.quoted:
                self.names.append(" ".join(kept))
        self.ids = [t for t in re.findall(r"#?([A-Za-z]*\d[\w-]*)", text) if not re.fullmatch(r"\d{4}", t)]
        self.numbers = [float(n) if "." in n else int(n) for n in re.findall(r"\b\d+(?:\.\d+)?\b", text)]

    def score(self, tool: Tool) -> int:
        return len(self.words & tool.text) + len(self.words & tool.name_words)

    def mentioned(self, values: list[Any]) -> list[Any]:
        """The values the prompt names (`date_desc` also as "date desc"), in the order it names them."""
        spots = []
        for index, value in enumerate(values):
            found = [
                self.lower.find(form) for form in {str(value).lower(), str(value).lower().replace("_", " ")}
            ]
            if any(at >= 0 for at in found):
                spots.append((min(at for at in found if at >= 0), index, value))
        return [value for _, _, value in sorted(spots)]

    def fill(self, tool: Tool) -> dict[str, Any] | None:
        """Arguments for the tool from the prompt, or None when a required identifier is missing."""
        args: dict[str, Any] = {}
        left = [w for w in re.findall(r"[a-z']+", self.lower) if words(w) and not words(w) & tool.text]
        strings = [*self.quoted, *self.names, *left[:1]]
        numbers, ids = list(self.numbers), list(self.ids)
        for name, schema in tool.params.items():
            kind, required = schema.get("type"), name in tool.required
            named = [v for v in self.mentioned(schema.get("enum") or []) if v not in args.values()]
            if named:
                args[name] = named[0]
            elif name in tool.ids:
                if not ids:
                    return None
                token = ids.pop(0)
                args[name] = int(token) if kind == "integer" and token.isdigit() else token
            elif kind in ("integer", "number") and numbers and (required or words(name) & self.words):
                args[name] = numbers.pop(0)
            elif kind == "string" and "enum" not in schema and (required or name in _QUERY):
                if strings and (required or strings[0] not in left):
                    args[name] = strings.pop(0)
                elif required:
                    args[name] = schema.get("default", "")
            elif required:
                examples = schema.get("examples") or schema.get("enum") or [schema.get("minimum", 1)]
                args[name] = schema.get("default", False if kind == "boolean" else examples[0])
        return args


def items_of(data: Any) -> list[dict[str, Any]]:
    """The listed objects of a result: the result itself when a list, else its first list of objects."""
    lists = [data] if isinstance(data, list) else list(data.values()) if isinstance(data, dict) else []
    found = (v for v in lists if isinstance(v, list) and v and all(isinstance(i, dict) for i in v))
    return next(found, [])


def _flat(item: dict[str, Any]) -> str:
    return " | ".join(str(v) for v in item.values() if isinstance(v, str | int | float | bool))


def describe(result: ToolResult) -> str:
    """What one result said, in a few lines."""
    items = items_of(result.data)
    if items:
        lines = [f"- {_flat(item)}" for item in items[:SHOWN_ITEMS]]
        more = [f"- ... and {len(items) - SHOWN_ITEMS} more"] if len(items) > SHOWN_ITEMS else []
        return "\n".join([f"{result.tool} listed {len(items)}:", *lines, *more])
    if isinstance(result.data, dict):
        return f"{result.tool}: " + ", ".join(f"{k}: {v}" for k, v in result.data.items() if v is not None)
    return f"{result.tool}: {result.text}"


@dataclass(frozen=True)
class Step:
    """The next call (`tool` and `args`) or the answer (`text`), with the thinking line shown for it."""

    thought: str
    tool: str | None = None
    args: dict[str, Any] = field(default_factory=dict)
    text: str = ""


def next_step(prompt: Prompt, tools: list[Tool], done: list[ToolResult]) -> Step:
    """The agent's one decision: what to call next, or what to answer."""
    ranked = sorted(tools, key=lambda t: (-prompt.score(t), prompt.fill(t) is None))
    if not ranked:
        return Step("The server lists no tools.", text="The server offers no tools, so I cannot answer.")
    target, target_args = ranked[0], prompt.fill(ranked[0])
    if not done:
        if target_args is not None:
            return Step(f"{target.name} matches the request best.", target.name, target_args)
        searcher = next((t for t in ranked if t.text & _SEARCH and prompt.fill(t) is not None), None)
        if searcher is not None:
            thought = (
                f"{target.name} needs {target.ids[0]}, which the request does not give: searching first."
            )
            return Step(thought, searcher.name, prompt.fill(searcher) or {})
        return Step(
            f"{target.name} needs {target.ids[0]}.", text=f"I need {target.ids[0]} to use {target.name}."
        )
    last = done[-1]
    items = items_of(last.data) if last.ok and len(done) == 1 else []
    if last.tool != target.name:  # the search made for the target's identifier
        reader: Tool | None = target
    else:  # a get-by-id tool, when the prompt asks for something only it offers
        reader = next((t for t in ranked if len(t.ids) == 1 and (t.text - target.text) & prompt.words), None)
    if items and reader is not None and reader.ids:
        key = reader.ids[0]
        best = max(items, key=lambda item: len(words(_flat(item)) & prompt.words))
        value = best.get(key, best.get("id") if key.lower().endswith("id") else None)
        if value is not None:
            args = {**(prompt.fill(reader) or {}), key: value}
            return Step(
                f"Opening the hit that matches the request best with {reader.name}.", reader.name, args
            )
    errors = [f"- {r.tool}({json.dumps(r.args)}) failed: {r.text}" for r in done if not r.ok]
    said = describe(last) if last.ok else f"{last.tool} failed."
    text = said + ("\n\nErrors from the tools:\n" + "\n".join(errors) if errors else "")
    return Step(f"Answering from what {last.tool} returned.", text=text)


def scripted_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """The generic scripted model (a pydantic-ai `FunctionModel` function): one decision per request."""
    tools = [Tool.of(definition) for definition in info.function_tools]
    step = next_step(Prompt(user_prompt(messages)), tools, tool_results(messages))
    if step.tool is None:
        return ModelResponse(parts=[ThinkingPart(step.thought), TextPart(step.text)])
    return ModelResponse(parts=[ThinkingPart(step.thought), ToolCallPart(step.tool, step.args)])
