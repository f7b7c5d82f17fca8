"""A person accepts a case before it can close a finding: what they are shown, and what is recorded.

Whoever writes a case chooses what counts as green. An agent fixing the
server (through `mcpipechekr serve`, or by editing a manifest) can write one
that a still-broken server passes: expecting the error it gives, or asserting
nothing the defect changes. So a case is *proposed* until a person has read
it and accepted it (`mcpipechekr verify --accept-case`, at a terminal); only
runs of an accepted case count toward a finding's streak
(`lifecycle/trust.py`). The acceptance is of the case as validated, by its
hash (`credit.case_sha`): the same case in another file, reformatted or with
comments, stays accepted; a case whose calls or expectations change is a new
proposal.

`describe_case` is what the person reads: the case as YAML and, in words, what
makes it green, with a warning where the case expects an error (a server that
still fails can pass it) or asserts nothing about the result.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import yaml

from mcpipechekr.artifacts.findings import Finding
from mcpipechekr.check.cases import Case, Expect
from mcpipechekr.errors import UserError
from mcpipechekr.findings.home import Home
from mcpipechekr.findings.lifecycle.trust import accept_case, case_accepted
from mcpipechekr.findings.verification.case_manifest import (
    LoadedManifest,
    asserts_result,
    load_manifest,
    probe_label,
)
from mcpipechekr.findings.verification.credit import case_sha


def accept_command(finding_id: str, case_id: str, manifest: Path) -> str:
    """The command a person types to read and accept a case (then run it)."""
    return shlex.join(
        [
            "mcpipechekr",
            "verify",
            "--accept-case",
            "--finding",
            finding_id,
            "--case",
            case_id,
            "--manifest",
            str(manifest),
        ]
    )


def unaccepted_case(home: Home, finding: Finding, manifest: Path, case_id: str) -> str | None:
    """Why the case cannot count yet (no person accepted it), with the command that accepts it; None
    when it is accepted. UserError when the manifest cannot be read or has no such case."""
    loaded = load_manifest(manifest)
    case = loaded.manifest.case(case_id)
    if case is None:
        raise UserError(f"{manifest}: no case '{case_id}'")
    if case_accepted(home, finding.id, case_sha(case)):
        return None
    command = accept_command(finding.id, case_id, manifest)
    return f"case '{case_id}' is proposed, no person accepted it: read it and accept it with `{command}`"


def record_acceptance(home: Home, finding: Finding, loaded: LoadedManifest, case: Case) -> bool:
    """A person accepted `case` for `finding`; False when it was accepted already."""
    return accept_case(home, finding.id, case_sha(case), probe_label(loaded.doc.path, case.id))


def describe_case(finding: Finding, loaded: LoadedManifest, case: Case) -> list[str]:
    """What a person reads before accepting: the case as YAML, what makes it green, and warnings."""
    raw = loaded.doc.data["cases"][loaded.case_index(case)]
    lines = [
        f"Case '{case.id}' of {loaded.doc.path}, proposed as evidence that {finding.id} is fixed",
        f"  finding: {finding.defect_class} on tool {finding.tool or '(none)'} of server {finding.server}",
        "",
        *(f"  {line}" for line in yaml.safe_dump(raw, sort_keys=False, allow_unicode=True).splitlines()),
        "",
        "It is green when every call below answers as stated, on every attempt:",
    ]
    for step in case.calls():
        lines.append(f"  {step.tool}: {_expectation(step.expect)}")
    warnings = [
        f"  warning: the call of {step.tool} EXPECTS AN ERROR: a server that still fails can pass this case"
        for step in case.calls()
        if step.expect.outcome == "error" and (finding.tool is None or step.tool == finding.tool)
    ]
    warnings += [
        f"  warning: the call of {step.tool} asserts nothing about its result: any answer passes"
        for step in case.calls()
        if not asserts_result(step.expect)
    ]
    if not any(step.tool == finding.tool for step in case.calls()) and finding.tool:
        warnings.append(f"  warning: the case never calls {finding.tool}, the tool the finding is about")
    return [*lines, *warnings]


def _expectation(expect: Expect) -> str:
    """An expectation in words: the outcome, then each assertion."""
    parts = ["returns an error" if expect.outcome == "error" else "returns a result"]
    named = expect.model_dump(exclude_defaults=True, exclude={"outcome"})
    parts.extend(f"{key} {value!r}" for key, value in named.items())
    return "; ".join(parts)
