"""Expected failures: check ids a team knows fail today, each with the reason, so CI stays green.

The file is a YAML list of `{id, reason}`. An entry matches a result whose id
is exactly the listed id (`FC:keywords-with-fields`, `PC-07:get_email`), or
whose id before the first ':' is the listed id (`PC-07` covers that check on
every tool). A matching FAIL is reported as expected and does not fail the run.
An entry whose every matching result PASSed is stale: the defect was fixed, and
the list must be updated, or it would hide the defect's return.

An entry that matches no result at all is not stale: the layer that would
produce it may simply not have run (`--layer`), so it cannot be judged.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from mcpipechekr._util import yamlsrc
from mcpipechekr._util.yamlsrc import ConfigFileError, Loc, Problem, field_path
from mcpipechekr.artifacts.check_report import CheckResult


class ExpectedFailure(BaseModel):
    """One listed check id and why it is allowed to fail."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(
        min_length=1, description="A check id (`FC:case-id`, `PC-07:tool`) or its prefix (`PC-07`)."
    )
    reason: str = Field(description="Why it fails and what would fix it, for whoever sees it next.")

    @field_validator("id")
    @classmethod
    def _no_spaces(cls, value: str) -> str:
        if any(ch.isspace() for ch in value):
            raise ValueError("must not contain spaces (e.g. FC:find-by-sender or PC-07)")
        return value

    @field_validator("reason")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty: say why it fails and what would fix it")
        return value


def _describe(data: Any, loc: Loc) -> str:
    if loc and isinstance(loc[0], int):
        item = data[loc[0]] if isinstance(data, list) and loc[0] < len(data) else None
        listed = item.get("id") if isinstance(item, dict) else None
        who = f"entry '{listed}'" if isinstance(listed, str) and listed else f"entry #{loc[0] + 1}"
        rest = loc[1:]
        return f"{who} field '{field_path(rest)}'" if rest else who
    return "the file"


def load_expected_failures(path: str | Path) -> dict[str, str]:
    """Read the expected-failures list: id -> reason. Raises ConfigFileError with every problem's line."""
    doc = yamlsrc.load_yaml(
        path, what="expected-failures file", top="list", shape="a list of {id, reason} entries"
    )
    problems: list[Problem] = []
    expected: dict[str, str] = {}
    first_line: dict[str, int | None] = {}
    for index, item in enumerate(doc.data):
        try:
            entry = ExpectedFailure.model_validate(item)
        except ValidationError as exc:
            problems.extend(
                yamlsrc.problems_from_validation(
                    doc, exc, ExpectedFailure, prefix=(index,), describe=lambda loc: _describe(doc.data, loc)
                )
            )
            continue
        if entry.id in first_line:
            problems.append(
                doc.problem(
                    (index, "id"),
                    f"{_describe(doc.data, (index, 'id'))}: duplicate id (first listed at line "
                    f"{first_line[entry.id]})",
                )
            )
            continue
        first_line[entry.id] = doc.line_for((index, "id"))
        expected[entry.id] = entry.reason.strip()
    if problems:
        problems.sort(key=lambda problem: problem.line or 0)
        raise ConfigFileError(problems)
    return expected


def matches(listed: str, check_id: str) -> bool:
    """True when a listed id covers a result's id: the same id, or the id's part before ':'."""
    return check_id == listed or check_id.split(":", 1)[0] == listed


def apply_expected_failures(results: list[CheckResult], expected: dict[str, str]) -> list[str]:
    """Mark results covered by the list (`expected_failure` = the reason); return the stale listed ids.

    An exact id wins over a prefix when both are listed. Stale: every result the id covers PASSed.
    """
    statuses: dict[str, list[str]] = {listed: [] for listed in expected}
    for result in results:
        listed = (
            result.id
            if result.id in expected
            else next((candidate for candidate in expected if matches(candidate, result.id)), None)
        )
        if listed is None:
            continue
        result.expected_failure = expected[listed]
        statuses[listed].append(result.status)
    return [listed for listed, seen in statuses.items() if seen and all(status == "PASS" for status in seen)]
