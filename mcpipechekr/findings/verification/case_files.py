"""The home's cases folder: the verification manifests `mcpipechekr serve` writes and runs, one per finding.

A case file is `<home>/cases/<finding-id>.yaml`. Its name is made from a
finding id only after the id matched `FINDING_ID_PATTERN` in full
(`finding-` and 16 hex digits), so no caller ever names a path: not `..`, not
an absolute path, not another folder. Reads and writes go through
`artifacts/confined.py`, which follows no symbolic link below the home (in
place of the file or of the `cases` folder) and reads only a regular file
with one link: a link planted there is refused, never followed.
"""

from __future__ import annotations

import re
from pathlib import Path

from mcpipechekr.artifacts.confined import read_confined, write_confined
from mcpipechekr.artifacts.findings import FINDING_ID_PATTERN
from mcpipechekr.errors import UserError
from mcpipechekr.findings.home import CASES_FOLDER, Home

CASE_SUFFIX = ".yaml"


def require_finding_id(finding_id: str) -> str:
    """`finding_id` when it is one (`finding-` and 16 hex digits, nothing else); UserError otherwise."""
    if not isinstance(finding_id, str) or re.fullmatch(FINDING_ID_PATTERN, finding_id) is None:
        raise UserError(
            "finding_id must be a finding id, `finding-` and 16 hex digits: list_findings shows them"
        )
    return finding_id


def _parts(finding_id: str) -> tuple[str, str]:
    return (CASES_FOLDER, require_finding_id(finding_id) + CASE_SUFFIX)


def case_file(home: Home, finding_id: str) -> Path:
    """Where the case file of a finding lives: `<home>/cases/<finding-id>.yaml`."""
    return home.root.joinpath(*_parts(finding_id))


def write_case_file(home: Home, finding_id: str, text: str) -> Path:
    """Write (or replace) a finding's case file, atomically, inside the home only; returns its path."""
    return write_confined(home.root, _parts(finding_id), text)


def read_case_file(home: Home, finding_id: str) -> str | None:
    """The text of a finding's case file; None when there is none yet."""
    try:
        return read_confined(home.root, _parts(finding_id))
    except FileNotFoundError:
        return None
