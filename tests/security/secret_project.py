"""A project whose server is handed secrets of every kind and prints them all, for the redaction tests.

The server is tests/servers/leaky_server.py. Its config.yaml gives it:
- `LEAKY_SUBST: ${SUBST_SOURCE}`: a value substituted from the environment;
- `LEAKY_LITERAL`: a secret written into config.yaml itself;
- `LEAKY_QUOTED: ${QUOTED_SOURCE}`: a secret with `"` and `\\`, whose
  JSON-escaped form differs from the raw one;
- `--token ${ARG_SOURCE}` in `server.args`;
and the process environment holds OPENAI_API_KEY, `.env` an ANTHROPIC_API_KEY.

The commands run as a user runs them (`python -m mcpipechekr` in the project
folder) with TMPDIR pointed at a folder of the test's own, so every file a
command leaves anywhere is under `tmp_path` and can be scanned.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, quote_plus

import yaml

import mcpipechekr

LEAKY_SERVER = Path(__file__).resolve().parents[1] / "servers" / "leaky_server.py"
SERVER_NAME = "leaky"
PACKAGE_ROOT = str(Path(mcpipechekr.__file__).resolve().parents[1])

SUBST = "subst-6d1f0a9e"
LITERAL = "literal-3b7c55d2"
QUOTED = 'q"uo\\te-8f2a41'
ARG = "argtok-91e2c4f7"
OPENAI_KEY = "sk-test-5a8e0c3b7d"
DOTENV_KEY = "sk-ant-dotenv-2c9e71"
SECRETS = {
    "substituted": SUBST,
    "literal": LITERAL,
    "quoted": QUOTED,
    "argument": ARG,
    "provider key": OPENAI_KEY,
    ".env key": DOTENV_KEY,
}

TASKS = """\
tasks:
  - task_id: report-tokens
    prompt: Report the service tokens.
    task_type: deterministic
    expected_tool: token_report
    min_calls: 1
    reference_calls:
      - tool: token_report
        arguments: {}
"""

INPUTS = ("config.yaml", "tasks.yaml", ".env")
"""The project's own files, where the user wrote the secrets: not scanned."""


def forms(secret: str) -> set[str]:
    """Every way the secret can be written down: raw, JSON-, URL- and shell-escaped, and each of those
    inside a JSON string (text holding the secret, written into a JSON file)."""
    once = {
        secret,
        json.dumps(secret)[1:-1],
        quote(secret, safe=""),
        quote_plus(secret),
        shlex.quote(secret),
    }
    return once | {json.dumps(form)[1:-1] for form in once}


@dataclass(frozen=True)
class SecretProject:
    """The project folder, its findings home, its temp folder, and the environment commands run with."""

    tmp: Path
    root: Path
    home: Path
    tmpdir: Path
    env: dict[str, str]

    def mcpipechekr(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        """`python -m mcpipechekr ARGS` in the project folder, as a user runs it."""
        return subprocess.run(
            [sys.executable, "-m", "mcpipechekr", *args],
            cwd=self.root,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )

    def logs(self) -> list[Path]:
        """Every server stderr log the commands left anywhere under the test's folder."""
        return sorted(path for path in self.tmp.rglob("*.stderr.log") if not path.is_symlink())


def secret_project(tmp_path: Path, *, exit_at_start: bool = False) -> SecretProject:
    """The project (see the module doc); with `exit_at_start` its server prints the secrets and exits 3."""
    root = tmp_path / "project"
    root.mkdir()
    args = [str(LEAKY_SERVER), "--token", "${ARG_SOURCE}"]
    if exit_at_start:
        args += ["--exit-at-start", "3"]
    server = {
        "name": SERVER_NAME,
        "command": "python",
        "args": args,
        "env": {
            "LEAKY_SUBST": "${SUBST_SOURCE}",
            "LEAKY_LITERAL": LITERAL,
            "LEAKY_QUOTED": "${QUOTED_SOURCE}",
        },
        "health": {"timeout_s": 30},
    }
    (root / "config.yaml").write_text(yaml.safe_dump({"server": server}), encoding="utf-8")
    (root / "tasks.yaml").write_text(TASKS, encoding="utf-8")
    (root / ".env").write_text(f"ANTHROPIC_API_KEY={DOTENV_KEY}\n", encoding="utf-8")
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    home = tmp_path / "findings-home"
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.endswith("_API_KEY") and not key.startswith("MCPIPECHEKR")
    }
    env.update(
        {
            "SUBST_SOURCE": SUBST,
            "QUOTED_SOURCE": QUOTED,
            "ARG_SOURCE": ARG,
            "OPENAI_API_KEY": OPENAI_KEY,
            "MCPIPECHEKR_HOME": str(home),
            "TMPDIR": str(tmpdir),
            "COLUMNS": "200",
            # The package under test, whatever the folder the command runs in.
            "PYTHONPATH": os.pathsep.join(filter(None, [PACKAGE_ROOT, os.environ.get("PYTHONPATH")])),
        }
    )
    return SecretProject(tmp_path, root, home, tmpdir, env)


def leaks_in_text(text: str) -> list[str]:
    """'kind: form' for every form of every secret found in `text`."""
    return [f"{kind}: {form!r}" for kind, secret in SECRETS.items() for form in forms(secret) if form in text]


def leaks_under(project: SecretProject, *, skip: tuple[Path, ...] = ()) -> dict[str, list[str]]:
    """Per file under the test's folder (links not followed; the project's inputs and `skip` left out),
    the secrets it holds."""
    inputs = {project.root / name for name in INPUTS}
    found: dict[str, list[str]] = {}
    for path in sorted(project.tmp.rglob("*")):
        if path.is_symlink() or not path.is_file() or path in inputs or path in skip:
            continue
        leaked = leaks_in_text(path.read_bytes().decode("utf-8", errors="replace"))
        if leaked:
            found[str(path.relative_to(project.tmp))] = leaked
    return found
