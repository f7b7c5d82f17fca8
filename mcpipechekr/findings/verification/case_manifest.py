"""The verification manifest: a cases file (check layer's format) tied to one finding, with a version.

`mcpipechekr generate` writes one; `mcpipechekr verify` reads it and runs one
of its cases. The cases are exactly the check layer's functional cases
(`check/cases.py`: tool, arguments, expect, steps, cleanup), so a case proven
here can be pasted into a project's checks/*.cases.yaml and vice versa. Two
fields are added at the top: `version` (the manifest format, part of the
credit binding) and `finding` (the finding the cases verify, so a manifest
cannot be used as evidence for another finding by mistake).

Generated arguments are placeholders, `<fill: TYPE>`, because only argument
shapes are ever stored: the person verifying knows which values reproduce
the failure. A placeholder left in a case is an error naming its line.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from mcpipechekr._util.fields import StrictModel
from mcpipechekr._util.yamlsrc import (
    ConfigFileError,
    Problem,
    YamlDocument,
    load_yaml,
    parse_yaml,
    validate_document,
)
from mcpipechekr.artifacts.findings import FINDING_ID_PATTERN
from mcpipechekr.check.cases import Case, CasesFile, Expect, OptIn, _raw_problems, describe_case_loc

MANIFEST_VERSION = 1
PLACEHOLDER = re.compile(r"^<fill: [^<>]*>$")


class VerificationManifest(StrictModel):
    """A verification manifest: the cases that verify one finding."""

    version: Literal[1] = Field(description="Format version of this file.")
    finding: str = Field(pattern=FINDING_ID_PATTERN, description="The finding these cases verify.")
    opt_in: list[OptIn] = Field(
        default_factory=list, description="Tools allowed to be called although they change state."
    )
    cases: list[Case] = Field(min_length=1, description="The cases; `verify --case ID` runs one.")

    def case(self, case_id: str) -> Case | None:
        return next((case for case in self.cases if case.id == case_id), None)

    def as_cases_file(self, case: Case) -> CasesFile:
        """The one case as a check-layer cases file, for the functional layer."""
        return CasesFile(opt_in=self.opt_in, cases=[case])


class LoadedManifest:
    """A validated manifest and the document it came from, for messages with lines."""

    def __init__(self, manifest: VerificationManifest, doc: YamlDocument):
        self.manifest = manifest
        self.doc = doc

    def problem(self, loc: tuple[str | int, ...], message: str) -> ConfigFileError:
        return ConfigFileError([self.doc.problem(loc, f"{describe_case_loc(self.doc.data, loc)}: {message}")])

    def case_index(self, case: Case) -> int:
        return self.manifest.cases.index(case)


def load_manifest(path: str | Path, *, text: str | None = None) -> LoadedManifest:
    """Read and validate a manifest; raise ConfigFileError listing every problem as file:line: field.

    `text` is the manifest when the caller has read it already (from the
    home's cases folder, without following links); `path` then only names it.
    """
    what = "verification manifest"
    doc = load_yaml(path, what=what) if text is None else parse_yaml(text, path, what=what)
    manifest = validate_document(
        doc,
        VerificationManifest,
        problems=_raw_problems(doc),
        describe=lambda loc: describe_case_loc(doc.data, loc),
    )
    return LoadedManifest(manifest, doc)


def probe_label(manifest_path: Path, case_id: str) -> str:
    """How a verification names its probe: the manifest's absolute path and the case, `PATH#CASE`."""
    return f"{Path(manifest_path).resolve()}#{case_id}"


def placeholder_problems(loaded: LoadedManifest, case: Case) -> list[Problem]:
    """Every `<fill: …>` placeholder still in the case's arguments, each with its line and field."""
    index = loaded.case_index(case)
    raw = loaded.doc.data["cases"][index]
    problems: list[Problem] = []
    for loc, value in _placeholders(raw, ("cases", index)):
        where = describe_case_loc(loaded.doc.data, loc)
        problems.append(
            loaded.doc.problem(
                loc, f"{where}: still the placeholder {value!r}: put the value that reproduced the failure"
            )
        )
    return problems


def _placeholders(value: Any, loc: tuple[str | int, ...]) -> list[tuple[tuple[str | int, ...], str]]:
    if isinstance(value, str):
        return [(loc, value)] if PLACEHOLDER.match(value) else []
    if isinstance(value, dict):
        return [hit for key, item in value.items() for hit in _placeholders(item, (*loc, key))]
    if isinstance(value, list):
        return [hit for number, item in enumerate(value) for hit in _placeholders(item, (*loc, number))]
    return []


def asserts_result(expect: Expect) -> bool:
    """True when an expectation can tell a false success from a real one.

    `outcome: ok` alone cannot: a false success *is* an ok outcome. It takes an
    expected error, or an assertion on the result's content.
    """
    return expect.outcome == "error" or any(
        (
            expect.required_result_fields,
            expect.equals,
            expect.required_result_paths,
            expect.equals_paths,
            expect.min_items,
            expect.max_items,
            expect.contains,
            expect.sorted_by is not None,
            expect.top_k_contains is not None,
        )
    )


def case_asserts_result(case: Case, tool: str | None) -> bool:
    """Every call of `tool` in the case (cleanup aside) carries an expectation that can catch a false success.

    With no tool named, every call must. A case that never calls the tool proves nothing about it.
    """
    calls = [step for step in case.calls() if tool is None or step.tool == tool]
    return bool(calls) and all(asserts_result(step.expect) for step in calls)
