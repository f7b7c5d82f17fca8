"""The cases file: calls to make against the server and what each answer must look like.

A case is one call (`tool`, `arguments`, `expect`) or a small workflow
(`steps`, each a call with its own id whose arguments may reference earlier
results as `${steps.ID.path}`), plus `cleanup` calls that always run, so a case
may create data and still leave none behind. Expectations address the result
through JSON Pointers into the CallToolResult as the wire carries it (see
`check/pointer.py`); the functional layer (`check/functional.py`) evaluates them
and the quality layer (`check/quality.py`) reads the optional `quality:` blocks.

Problems are reported like tasks.yaml's, as `cases.yaml:LINE: case 'ID' field
'NAME': message`, all at once. Duplicate ids and references to steps that do not
exist (or come later) are found on the raw file, so they are reported together
with every validation error. docs/check_cases.md documents every field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    Field,
    PrivateAttr,
    field_validator,
    model_validator,
)

from mcpipechekr._util.fields import MAX_SECONDS, Count, Number, StrictModel, not_blank, slug_checker
from mcpipechekr._util.yamlsrc import (
    Loc,
    Problem,
    YamlDocument,
    field_path,
    load_yaml,
    validate_document,
)
from mcpipechekr.check.pointer import check_pointer, parse_reference, step_references

_SLUG, _SLUG_RULE, _slug = slug_checker(underscore=True, example="find-by-sender")

Scalar = str | int | float | bool | None
Pointer = Annotated[str, AfterValidator(check_pointer)]


class SortedBy(StrictModel):
    """The list at `path` must be ordered by the value at `key` inside each item."""

    path: Pointer = Field(description="JSON Pointer to the list, e.g. /structuredContent/emails.")
    key: Pointer = Field(default="", description="JSON Pointer inside each item, e.g. /date; '' the item.")
    order: Literal["asc", "desc"] = Field(default="asc", description="asc: smallest first; desc: largest.")


class TopKContains(StrictModel):
    """Search relevance: the first `k` items of the list must include every one of `values`."""

    path: Pointer = Field(description="JSON Pointer to the ranked list.")
    k: Count = Field(ge=1, le=100_000, description="How many leading items to look at.")
    key: Pointer = Field(default="", description="JSON Pointer inside each item to the value compared.")
    values: list[Scalar] = Field(min_length=1, description="Each must be found among the top k values.")
    match: Literal["equals", "contains"] = Field(
        default="equals",
        description="equals: an item's value equals it; contains: an item's text contains it "
        "(case-insensitive).",
    )


class Expect(StrictModel):
    """What a call's answer must satisfy. Every expectation that fails is reported, not only the first."""

    outcome: Literal["ok", "error"] = Field(
        default="ok",
        description="ok: a result without isError; error: a result with isError: true or a JSON-RPC error.",
    )
    error_code: Count | None = Field(
        default=None,
        ge=-(2**31),
        le=2**31 - 1,
        description="The JSON-RPC error code the call must fail with (outcome error).",
    )
    required_result_fields: list[str] = Field(
        default_factory=list, description="Top-level keys the structured result must have."
    )
    equals: dict[str, Scalar] = Field(
        default_factory=dict, description="Top-level keys of the structured result and their exact values."
    )
    required_result_paths: list[Pointer] = Field(
        default_factory=list, description="JSON Pointers into the result that must exist."
    )
    equals_paths: dict[Pointer, Scalar] = Field(
        default_factory=dict, description="JSON Pointers into the result and their exact scalar values."
    )
    min_items: dict[Pointer, Annotated[int, Field(ge=0)]] = Field(
        default_factory=dict, description="JSON Pointer to a list -> fewest items it may have."
    )
    max_items: dict[Pointer, Annotated[int, Field(ge=0)]] = Field(
        default_factory=dict, description="JSON Pointer to a list -> most items it may have."
    )
    contains: list[str] = Field(
        default_factory=list,
        description="Texts that must all appear in the result's text blocks joined (or the error message).",
    )
    sorted_by: SortedBy | None = Field(default=None, description="A list that must be in order.")
    top_k_contains: TopKContains | None = Field(
        default=None, description="Values that must appear among a ranked list's first k items."
    )

    @field_validator("contains", mode="before")
    @classmethod
    def _one_text(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @model_validator(mode="after")
    def _error_code_needs_error(self) -> Expect:
        if self.error_code is not None and self.outcome != "error":
            raise ValueError("error_code needs outcome: error")
        return self


class Quality(StrictModel):
    """Structural checks of a response's shape (quality layer, ids QC-02 to QC-04)."""

    has_headers: bool | None = Field(
        default=None, description="true: the text has markdown headers; false: it has none."
    )
    list_formatting: bool | None = Field(
        default=None, description="true: every non-blank text line is a list item (or a header)."
    )
    consistent_items: Pointer | None = Field(
        default=None, description="JSON Pointer to a list whose items must all have the same keys."
    )


class Step(StrictModel):
    """One call of a case: a workflow step, a cleanup call, or the whole of a single-call case."""

    id: str = Field(description="Slug naming the step; later steps reference it as ${steps.ID...}.")
    tool: str = Field(min_length=1, description="The tool to call.")
    arguments: dict[str, Any] = Field(default_factory=dict, description="The call's arguments, as JSON.")
    expect: Expect = Field(default_factory=Expect, description="What the answer must satisfy.")
    quality: Quality | None = Field(default=None, description="Structural checks of the answer.")
    timeout_s: Number | None = Field(
        default=None, gt=0, le=MAX_SECONDS, description="Limit for this call; default the case's."
    )

    _id = field_validator("id")(_slug)


class Case(StrictModel):
    """One functional case: a single call, or steps with cleanup."""

    id: str = Field(description="Unique slug; the check's id is FC:<id>.")
    description: str = Field(default="", description="What the case proves, shown in reports.")
    group: str = Field(default="Cases", min_length=1, description="Heading the case is reported under.")
    tool: str | None = Field(default=None, description="Single-call case: the tool to call.")
    arguments: dict[str, Any] = Field(default_factory=dict, description="Single-call case: arguments.")
    expect: Expect | None = Field(default=None, description="Single-call case: what the answer must satisfy.")
    quality: Quality | None = Field(default=None, description="Single-call case: structural checks.")
    steps: list[Step] = Field(default_factory=list, description="Workflow case: calls made in order.")
    cleanup: list[Step] = Field(
        default_factory=list, description="Calls that always run afterwards, even after a failure or crash."
    )
    timeout_s: Number | None = Field(
        default=None,
        gt=0,
        le=MAX_SECONDS,
        description="Limit for each call of the case; default check.call_timeout_s.",
    )

    _id = field_validator("id")(_slug)

    @model_validator(mode="after")
    def _one_shape(self) -> Case:
        if self.tool is not None and self.steps:
            raise ValueError("give either `tool` (a single call) or `steps` (a workflow), not both")
        if self.tool is None and not self.steps:
            raise ValueError("give `tool` (a single call) or `steps` (a workflow)")
        if self.steps and (self.arguments or self.expect is not None or self.quality is not None):
            raise ValueError("with `steps`, put arguments, expect and quality in each step")
        return self

    @property
    def single(self) -> bool:
        return self.tool is not None

    def calls(self) -> list[Step]:
        """The calls in order; a single-call case is one step whose id is the case id."""
        if self.tool is None:
            return list(self.steps)
        return [
            Step(
                id=self.id,
                tool=self.tool,
                arguments=self.arguments,
                expect=self.expect or Expect(),
                quality=self.quality,
                timeout_s=self.timeout_s,
            )
        ]

    def tools(self) -> list[str]:
        """Every tool the case calls, cleanup included, in order, without repeats."""
        return list(dict.fromkeys(step.tool for step in [*self.calls(), *self.cleanup]))

    def source_for(self, step: Step) -> str:
        """How a response of `step` is named in sizes and quality results: the case id, or `case/step`."""
        return self.id if self.single else f"{self.id}/{step.id}"


class OptIn(StrictModel):
    """A tool the cases may call although it is destructive or not read-only."""

    tool: str = Field(min_length=1, description="The tool's name.")
    reason: str = Field(description="Why calling it in a check is safe (e.g. cleanup deletes what it makes).")

    _reason = field_validator("reason")(not_blank)


class CasesFile(StrictModel):
    """The whole cases file."""

    opt_in: list[OptIn] = Field(
        default_factory=list, description="Tools allowed to be called although they change state."
    )
    cases: list[Case] = Field(min_length=1, description="The cases, in the order they run.")

    _source: YamlDocument | None = PrivateAttr(default=None)

    @property
    def source(self) -> YamlDocument | None:
        return self._source

    @property
    def opt_in_tools(self) -> set[str]:
        """Tools the file allows to be called although destructive or not read-only."""
        return {entry.tool for entry in self.opt_in}

    def case_for_tool(self, name: str) -> Case | None:
        """The first single-call case of `name` that expects success and references nothing.

        A protocol probe can reuse its arguments: they are known to be valid for the tool.
        """
        for case in self.cases:
            if (
                case.tool == name
                and (case.expect is None or case.expect.outcome == "ok")
                and not step_references(case.arguments)
            ):
                return case
        return None

    def quality_for(self, source: str) -> Quality | None:
        """The quality block of the call that produced a response named `source` (see Case.source_for)."""
        for case in self.cases:
            for step in case.calls():
                if case.source_for(step) == source:
                    return step.quality
        return None

    def line_of(self, case: Case) -> int | None:
        """The line a case starts on, for messages."""
        if self._source is None:
            return None
        index = self.cases.index(case)
        return self._source.line_for(("cases", index))


def describe_case_loc(data: Any, loc: Loc) -> str:
    """`('cases', 2, 'expect', 'outcome')` -> `case 'find-by-sender' field 'expect.outcome'`."""
    if len(loc) >= 2 and loc[0] in ("cases", "opt_in") and isinstance(loc[1], int):
        if loc[0] == "cases":
            items = data.get("cases") if isinstance(data, dict) else None
            item = items[loc[1]] if isinstance(items, list) and 0 <= loc[1] < len(items) else None
            case_id = item.get("id") if isinstance(item, dict) else None
            who = f"case '{case_id}'" if isinstance(case_id, str) and case_id else f"case #{loc[1] + 1}"
        else:
            who = f"opt_in #{loc[1] + 1}"
        rest = tuple(part for part in loc[2:] if part != "[key]")  # pydantic's marker for a bad dict key
        return f"{who} field '{field_path(rest)}'" if rest else who
    return f"field '{field_path(loc)}'" if loc else "the file"


def load_cases(path: str | Path) -> CasesFile:
    """Read and validate a cases file; raise ConfigFileError listing every problem with its line."""
    doc = load_yaml(path, what="cases file")
    cases = validate_document(
        doc, CasesFile, problems=_raw_problems(doc), describe=lambda loc: describe_case_loc(doc.data, loc)
    )
    cases._source = doc
    return cases


def _raw_problems(doc: YamlDocument) -> list[Problem]:
    """Problems the models cannot see one item at a time: duplicate ids and step references."""
    problems: list[Problem] = []

    def problem(loc: Loc, message: str) -> None:
        problems.append(doc.problem(loc, f"{describe_case_loc(doc.data, loc)}: {message}"))

    raw_cases = doc.data.get("cases")
    first_line: dict[str, int | None] = {}
    for index, case in enumerate(raw_cases if isinstance(raw_cases, list) else []):
        if not isinstance(case, dict):
            continue
        case_id = case.get("id")
        if isinstance(case_id, str):
            line = doc.line_for(("cases", index, "id"))
            if case_id in first_line:
                problem(("cases", index, "id"), f"duplicate id (first used at line {first_line[case_id]})")
            else:
                first_line[case_id] = line
        _step_problems(doc, index, case, problem)
    return problems


def _step_problems(doc: YamlDocument, index: int, case: dict[str, Any], problem: Any) -> None:
    steps = case.get("steps") if isinstance(case.get("steps"), list) else []
    cleanup = case.get("cleanup") if isinstance(case.get("cleanup"), list) else []
    case_id = case.get("id")
    all_ids: list[str] = []
    if case.get("tool") is not None and isinstance(case_id, str):
        all_ids.append(case_id)
    seen: dict[str, int | None] = {}
    for part, items in (("steps", steps), ("cleanup", cleanup)):
        for number, step in enumerate(items):
            step_id = step.get("id") if isinstance(step, dict) else None
            if not isinstance(step_id, str):
                continue
            loc = ("cases", index, part, number, "id")
            if step_id in seen:
                problem(loc, f"duplicate step id '{step_id}' (first used at line {seen[step_id]})")
            else:
                seen[step_id] = doc.line_for(loc)
            if part == "steps":
                all_ids.append(step_id)

    # Single-call case: its own arguments may not reference anything; cleanup may reference the case.
    if case.get("tool") is not None:
        _reference_problems(("cases", index), case, ["arguments", "expect"], [], problem)
    earlier: list[str] = []
    for number, step in enumerate(steps):
        if isinstance(step, dict):
            _reference_problems(
                ("cases", index, "steps", number), step, ["arguments", "expect"], earlier, problem
            )
            if isinstance(step.get("id"), str):
                earlier.append(step["id"])
    for number, step in enumerate(cleanup):
        if isinstance(step, dict):
            _reference_problems(
                ("cases", index, "cleanup", number), step, ["arguments", "expect"], all_ids, problem
            )


def _reference_problems(
    base: Loc, item: dict[str, Any], keys: list[str], allowed: list[str], problem: Any
) -> None:
    for key in keys:
        for loc, value in _strings(item.get(key), (*base, key)):
            for text, body in step_references(value):
                try:
                    step_id, _ = parse_reference(body)
                except ValueError as exc:
                    problem(loc, str(exc))
                    continue
                if step_id not in allowed:
                    where = (
                        f"earlier steps: {', '.join(allowed)}" if allowed else "no earlier step to refer to"
                    )
                    problem(loc, f"reference '{text}' names no earlier step '{step_id}' ({where})")


def _strings(value: Any, loc: Loc) -> list[tuple[Loc, str]]:
    if isinstance(value, str):
        return [(loc, value)]
    if isinstance(value, dict):
        return [pair for key, item in value.items() for pair in _strings(item, (*loc, str(key)))]
    if isinstance(value, list):
        return [pair for number, item in enumerate(value) for pair in _strings(item, (*loc, number))]
    return []
