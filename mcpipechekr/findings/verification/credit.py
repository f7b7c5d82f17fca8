"""Credit binding: what a green verification is evidence *of*, so streaks only count like with like.

A pass says "this case, against this server, under this harness, passed". If
any of those change between passes, three greens no longer prove one thing
three times, so a streak counts a pass only when its binding's fingerprint
equals the streak's. The binding holds:

- the case definition, as validated (so formatting, comments and key order in
  the manifest do not matter, and other cases in the same file do not either),
  and the manifest's format version;
- the call timeout actually used;
- the target: for stdio the resolved executable, its arguments and working
  folder; for HTTP the URL (header values are secrets and are left out);
- the harness version;
- for stdio, the sha256 of the resolved executable's bytes and of every
  argument that names a regular file (relative names are taken from the
  server's working folder). A script edited in place is a different server even
  though its command line is not.

`verify` computes the binding before launching the server and again before
recording: a file that changed during the run makes the run's result
unattributable, so it records no credit.

Limits: only whole arguments are looked at (`--db=/x/y` is not opened), files a
script imports are not hashed, and an HTTP server's code is invisible: pass a
new URL or restart the streak by hand when it changes behind the same URL.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from pydantic import Field

from mcpipechekr import __version__
from mcpipechekr._util.hashing import sha256_file, sha256_json
from mcpipechekr.artifacts._base import ArtifactModel
from mcpipechekr.check.cases import Case
from mcpipechekr.config import ServerConfig
from mcpipechekr.errors import UserError


class CreditBinding(ArtifactModel):
    """Everything a pass is bound to; two passes extend one streak only when their fingerprints match."""

    case_sha: str = Field(description="sha256 of the validated case definition (key-order independent).")
    manifest_version: int = Field(description="Format version of the verification manifest.")
    timeout_s: float = Field(gt=0, description="Seconds allowed for each call of the case.")
    target: str = Field(description="stdio: executable, arguments and working folder; http: the URL.")
    harness_version: str = Field(description="The mcpipechekr version that ran the case.")
    files: dict[str, str] = Field(
        default_factory=dict,
        description="stdio: absolute path -> sha256 of the executable and of regular-file arguments.",
    )

    @property
    def fingerprint(self) -> str:
        """The streak key: equal bindings have equal fingerprints whatever the field order."""
        return sha256_json(self.model_dump(mode="json"))


def case_sha(case: Case) -> str:
    """The case as validated, hashed: defaults filled in, key order and YAML formatting gone."""
    return sha256_json(case.model_dump(mode="json"))


def credit_binding(
    case: Case, *, manifest_version: int, timeout_s: float, server: ServerConfig
) -> CreditBinding:
    """The binding of one verification run; raises UserError when the stdio executable cannot be found."""
    files: dict[str, str] = {}
    if server.command is None:
        target = f"http: {server.url}"
    else:
        cwd = Path(server.cwd) if server.cwd else Path.cwd()
        executable = resolve_executable(server.resolved_command() or server.command, cwd)
        files[str(executable)] = sha256_file(executable)
        for arg in server.args:
            path = _regular_file(arg, cwd)
            if path is not None:
                files[str(path)] = sha256_file(path)
        target = f"stdio: {' '.join([str(executable), *server.args])} (in {cwd})"
    return CreditBinding(
        case_sha=case_sha(case),
        manifest_version=manifest_version,
        timeout_s=timeout_s,
        target=target,
        harness_version=__version__,
        files=files,
    )


def resolve_executable(command: str, cwd: Path) -> Path:
    """The file the OS would run for `command`: a path as given (from `cwd`), else the first on PATH."""
    if os.sep in command:
        candidate = Path(command).expanduser()
        found: str | None = str(candidate if candidate.is_absolute() else cwd / candidate)
        found = found if os.access(found, os.X_OK) and Path(found).is_file() else None
    else:
        found = shutil.which(command)
    if found is None:
        raise UserError(
            f"cannot find the server's executable {command!r} (looked in {cwd} and on PATH): "
            "check the command after `--`"
        )
    return Path(found).resolve()


def _regular_file(arg: str, cwd: Path) -> Path | None:
    if not arg or arg.startswith("-"):
        return None
    candidate = Path(arg).expanduser()
    path = candidate if candidate.is_absolute() else cwd / candidate
    try:
        return path.resolve() if path.is_file() else None
    except OSError:
        return None


def changed_files(before: CreditBinding, after: CreditBinding) -> list[str]:
    """Paths whose hash differs (or that appeared or vanished) between two bindings, for messages."""
    paths = sorted(set(before.files) | set(after.files))
    return [path for path in paths if before.files.get(path) != after.files.get(path)]
