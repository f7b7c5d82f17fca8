"""`mcpipechekr generate`: a one-case verification manifest for a finding, with placeholders to fill.

The case calls the finding's tool with its argument shape, every value a
`<fill: TYPE>` placeholder (only shapes are ever stored), and expects what a
fixed server answers: `outcome: ok` unless `--expect` gives a check-layer
`expect` block as JSON. A false-success finding is the exception: its bad
answers are already ok, so it needs an expectation that looks at the result
(a result assertion) or an expected error, and `outcome: ok` alone is refused.

`verify` calls the tool repeatedly (see `probes.py`), so generating requires
`--confirm-read-only`: the person generating the case says that calling the
tool changes nothing worth protecting.

`generate_case_file` is `mcpipechekr serve`'s `generate_case`: the same
manifest, written to the finding's case file in the home's cases folder
(`case_files.py`; the caller names no path), with the placeholders of the
keys the caller gives filled in. It replaces an earlier case file of the
finding, except one a credited verification ran: the loop reruns that one, so
`serve` never changes it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from mcpipechekr.artifacts.atomic import atomic_write_text, read_model
from mcpipechekr.artifacts.findings import Finding, shape_text
from mcpipechekr.check.cases import Case, Expect
from mcpipechekr.errors import UserError
from mcpipechekr.findings.home import Home
from mcpipechekr.findings.lifecycle.states import probe_followed
from mcpipechekr.findings.lifecycle.store import load_finding
from mcpipechekr.findings.verification.case_files import (
    case_file,
    read_case_file,
    require_finding_id,
    write_case_file,
)
from mcpipechekr.findings.verification.case_manifest import (
    MANIFEST_VERSION,
    VerificationManifest,
    asserts_result,
    probe_label,
)

FALSE_SUCCESS_RULE = (
    "a false-success finding answers ok while it fails, so `outcome: ok` alone cannot verify it: "
    "the expectation needs a result assertion (equals_paths, required_result_paths, contains, "
    'min_items, …) or an expected error ({"outcome": "error"})'
)


def find_finding(home: Home, finding_id: str) -> Finding:
    """The registered finding, or a UserError that says how to list them."""
    finding = load_finding(home, finding_id)
    if finding is None:
        raise UserError(
            f"no finding {finding_id} in {home.root}: `mcpipechekr findings` lists them "
            "(run `mcpipechekr promote` first if the list is empty)"
        )
    return finding


def require_probe(finding: Finding) -> str:
    """The tool a case must call; UserError for a finding no case can verify."""
    if not finding.probe or finding.tool is None:
        how = (
            "the loop's next run verifies it"
            if finding.probe
            else f"close it by hand once resolved: `mcpipechekr verify --finding {finding.id} "
            "--close-manually NOTE`"
        )
        raise UserError(f"{finding.id} has no tool a case could call ({finding.defect_class}): {how}")
    return finding.tool


def generate_manifest(
    home: Home,
    finding_id: str,
    *,
    confirm_read_only: bool,
    output: Path,
    expect: Expect | None = None,
    expect_source: str = "--expect",
) -> Path:
    """Write the manifest for one finding to `output` (atomically; an existing file is never replaced).

    `expect` is the case's expectation (default `outcome: ok`); `expect_source`
    names where it came from in messages (the --expect file).
    """
    finding, tool, expect = _case_inputs(home, finding_id, confirm_read_only, expect, expect_source)
    if output.exists():
        raise UserError(f"{output} already exists: choose another --output, or delete it to generate again")
    atomic_write_text(output, render_manifest(finding, tool, expect, output))
    return output


@dataclass(frozen=True)
class GeneratedCase:
    """A case file written to the home's cases folder: where, the case's id, and the manifest's text."""

    path: Path
    case_id: str
    text: str


def generate_case_file(
    home: Home,
    finding_id: str,
    *,
    confirm_read_only: bool,
    arguments: Mapping[str, Any] | None = None,
    expect: Expect | None = None,
    expect_source: str = "expect",
) -> GeneratedCase:
    """Write the finding's case file in the home's cases folder (see the module docstring).

    `arguments` replaces the placeholders of the keys it names (and adds keys
    the finding's argument shape lacks); the others stay `<fill: TYPE>`. The
    same inputs write the same file. Raises UserError for a bad id, an
    unknown finding, a missing confirmation, an expectation that cannot
    verify a false success, or a case file the loop follows.
    """
    finding, tool, expect = _case_inputs(
        home, require_finding_id(finding_id), confirm_read_only, expect, expect_source
    )
    path = case_file(home, finding.id)
    case_id = case_id_for(finding)
    text = render_manifest(finding, tool, expect, path, arguments=arguments)
    if probe_followed(home, probe_label(path, case_id)) and read_case_file(home, finding.id) != text:
        raise UserError(
            f"{path} is the case a credited verification of {finding.id} ran, and the loop reruns it: "
            "it is not replaced. Verify with it as it is, or ask a person to change it"
        )
    write_case_file(home, finding.id, text)
    return GeneratedCase(path, case_id, text)


def _case_inputs(
    home: Home, finding_id: str, confirm_read_only: bool, expect: Expect | None, expect_source: str
) -> tuple[Finding, str, Expect]:
    """The finding, its tool and the case's expectation, each checked as generating requires."""
    finding = find_finding(home, finding_id)
    tool = require_probe(finding)
    if not confirm_read_only:
        raise UserError(
            f"verifying {finding.id} calls tool '{tool}' several times in a row: pass --confirm-read-only "
            "to confirm those calls change nothing that matters"
        )
    expect = expect or Expect()
    if finding.defect_class == "false_success" and not asserts_result(expect):
        raise UserError(f"{expect_source}: {FALSE_SUCCESS_RULE}")
    return finding, tool, expect


def read_expect(path: Path) -> Expect:
    """An `expect` block from a JSON file; problems name the file, line and field."""
    return read_model(path, Expect)


def case_id_for(finding: Finding) -> str:
    """The generated case's id: the finding id, so `--case` and `--finding` read alike."""
    return finding.id


def render_manifest(
    finding: Finding,
    tool: str,
    expect: Expect,
    output: Path,
    *,
    arguments: Mapping[str, Any] | None = None,
) -> str:
    """The manifest's text: comments that say what to fill and how to run it, then the YAML.

    `arguments` are values that replace the placeholders of their keys.
    """
    shape = finding.arg_shapes[0] if finding.arg_shapes else {}
    case = Case(
        id=case_id_for(finding),
        description=f"{finding.defect_class} on {tool} is fixed",
        tool=tool,
        arguments={**{key: placeholder(kind) for key, kind in shape.items()}, **(arguments or {})},
        expect=expect,
    )
    manifest = VerificationManifest(version=MANIFEST_VERSION, finding=finding.id, cases=[case])
    data = manifest.model_dump(mode="json", exclude_defaults=True)
    expect_data = data["cases"][0].setdefault("expect", {})
    expect_data.setdefault("outcome", expect.outcome)
    header = [
        f"Verifies {finding.id}: {finding.defect_class} on tool '{tool}' (severity {finding.severity}).",
        f"Fix hint: {finding.hint}",
        "1. Replace every <fill: TYPE> with a value that reproduced the failure.",
        "2. Accept the case and run it against the fixed server (once accepted, drop --accept-case);",
        "   three consecutive greens with the same case, server files and harness close the finding:",
        f"   mcpipechekr verify --accept-case --finding {finding.id} --case {case.id} --manifest {output} "
        "-- <server command…>",
    ]
    for other in finding.arg_shapes[1:]:
        header.append(f"Another argument shape seen: {shape_text(other)}")
    comments = "".join(f"# {line}\n" for line in header)
    return comments + yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


def placeholder(kind: str) -> str:
    return f"<fill: {kind}>"
