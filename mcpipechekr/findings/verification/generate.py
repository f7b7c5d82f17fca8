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
"""

from __future__ import annotations

from pathlib import Path

import yaml

from mcpipechekr.artifacts.atomic import atomic_write_text, read_model
from mcpipechekr.artifacts.findings import Finding, shape_text
from mcpipechekr.check.cases import Case, Expect
from mcpipechekr.errors import UserError
from mcpipechekr.findings.home import Home
from mcpipechekr.findings.lifecycle.store import load_finding
from mcpipechekr.findings.verification.case_manifest import (
    MANIFEST_VERSION,
    VerificationManifest,
    asserts_result,
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
    if output.exists():
        raise UserError(f"{output} already exists: choose another --output, or delete it to generate again")
    atomic_write_text(output, render_manifest(finding, tool, expect, output))
    return output


def read_expect(path: Path) -> Expect:
    """An `expect` block from a JSON file; problems name the file, line and field."""
    return read_model(path, Expect)


def case_id_for(finding: Finding) -> str:
    """The generated case's id: the finding id, so `--case` and `--finding` read alike."""
    return finding.id


def render_manifest(finding: Finding, tool: str, expect: Expect, output: Path) -> str:
    """The manifest's text: comments that say what to fill and how to run it, then the YAML."""
    shape = finding.arg_shapes[0] if finding.arg_shapes else {}
    case = Case(
        id=case_id_for(finding),
        description=f"{finding.defect_class} on {tool} is fixed",
        tool=tool,
        arguments={key: placeholder(kind) for key, kind in shape.items()},
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
        "2. Run the case against the fixed server; three consecutive greens with the same case,",
        "   server files and harness close the finding:",
        f"   mcpipechekr verify --finding {finding.id} --case {case.id} --manifest {output} "
        "-- <server command…>",
    ]
    for other in finding.arg_shapes[1:]:
        header.append(f"Another argument shape seen: {shape_text(other)}")
    comments = "".join(f"# {line}\n" for line in header)
    return comments + yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


def placeholder(kind: str) -> str:
    return f"<fill: {kind}>"
