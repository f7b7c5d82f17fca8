"""Where a stdio server's source lives: the git checkout that tracks the file its command runs.

`init` sets `server.repo` from this, so that a server run from a checkout is
ready for the fix loop and one installed from a package is evaluated only. The
file that counts, once the launchers are looked through (`server/program.py`):

- the script an interpreter runs (`python x.py`, `node dist/index.js`,
  `uv run server.py`), taken from the server's `cwd` and the folders the
  launchers change into;
- the module of `python -m pkg`, found under that folder, else where the
  interpreter would import it from;
- the command itself when it is a file path (`./bin/notes`);
- the module file of a Python console script (a file whose shebang is a Python
  interpreter, as pip and uv write them): that interpreter is asked, with a
  short timeout, where `importlib.util.find_spec` finds the package, which for
  an editable install is the checkout.

The checkout is the work tree in which git tracks that file
(`git ls-files --error-unmatch`). Never a file under `site-packages` or
`dist-packages`, nor an untracked or ignored one: a package installed into a
`.venv` inside a checkout is not that checkout's source, and a fix committed
there would not change what runs.

Limits: a package a runner fetches (`npx`, `uvx`, `docker run`) has no local
source; a console script whose text does not say `from MODULE import …` is
not followed; the interpreter's answer is trusted as given.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from mcpipechekr.config import ServerConfig
from mcpipechekr.server.program import Program, program_of

FIND_SPEC_TIMEOUT_S = 10.0
"""How long the server's interpreter may take to say where a module lives."""
GIT_TIMEOUT_S = 10.0

_INSTALLED = frozenset({"site-packages", "dist-packages"})
_PYTHON_NAME = re.compile(r"^(python|pypy)(\d+(\.\d+)*)?[a-z]?$")
_PIP_TRAMPOLINE = re.compile(r"^'''exec' (.+?) \"\$0\" \"\$@\"")
_ENTRY_IMPORT = re.compile(r"^from\s+([A-Za-z_][\w.]*)\s+import\s+", re.MULTILINE)
_FIND_SPEC = """\
import importlib.util, sys
spec = importlib.util.find_spec(sys.argv[1])
if spec is not None:
    print(spec.origin or "")
    for folder in spec.submodule_search_locations or []:
        print(folder)
"""
"""Asks for the top-level package only: finding a submodule would import (run) its parents."""


@dataclass(frozen=True)
class ServerSource:
    """The git checkout holding a server's source, and the tracked file that showed it."""

    repo: Path
    """The work tree's top folder."""
    file: Path
    """The file the command runs (or its module), tracked by git in `repo`."""


def find_server_source(server: ServerConfig) -> ServerSource | None:
    """The checkout whose tracked file the server's command runs; None for a URL server or no such file."""
    if server.command is None:
        return None
    program = program_of([server.command, *server.args])
    folder = Path(server.cwd or Path.cwd()).expanduser()
    folder = folder.joinpath(*(Path(step).expanduser() for step in program.chdir))
    for candidate in _candidates(program, folder, server):
        source = _tracked(candidate)
        if source is not None:
            return source
    return None


def _candidates(program: Program, folder: Path, server: ServerConfig) -> Iterator[Path]:
    """Files that may hold the server's code, most direct first; the ones that cost a process come last."""
    if program.kind == "script":
        yield folder / Path(program.target).expanduser()
    elif program.kind == "module":
        local = _module_files(program.target, [folder])
        if local:
            yield local[0]
            return
        interpreter = _interpreter(program.interpreter, server, folder)
        if interpreter is not None:
            yield from _installed_module_files(interpreter, program.target, folder)
    elif program.kind == "executable":
        word = program.target
        if "/" in word:
            path = folder / Path(word).expanduser()
            yield path
        else:
            found = shutil.which(word, path=_plain(server.env.get("PATH")))
            if found is None:
                return
            path = Path(found)  # a program found on PATH counts only through its module, not as a file
        yield from _console_script_module(path, folder)
    # a package or an image is fetched when the server starts: it has no local source


def git_output(folder: Path, *args: str) -> str | None:
    """What `git -C folder ARGS` prints, stripped; None when git fails, is missing or takes too long.

    Asked about a folder of the server's, never of ours: the caller's GIT_* variables (a hook's
    GIT_DIR, say) are left out, and the read takes no optional lock, so it never rewrites the index.
    """
    env = {key: value for key, value in os.environ.items() if not key.startswith("GIT_")}
    env["GIT_OPTIONAL_LOCKS"] = "0"
    try:
        done = subprocess.run(
            ["git", "-C", str(folder), *args], capture_output=True, text=True, env=env, timeout=GIT_TIMEOUT_S
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def _tracked(path: Path) -> ServerSource | None:
    """The work tree where git tracks `path`, unless it is an installed package's file."""
    try:
        file = path.resolve()
    except OSError:
        return None
    if not file.is_file() or _INSTALLED & set(file.parts):
        return None
    if git_output(file.parent, "ls-files", "--error-unmatch", "--", file.name) is None:
        return None
    top = git_output(file.parent, "rev-parse", "--show-toplevel")
    return ServerSource(Path(top), file) if top else None


def _module_files(module: str, roots: list[Path]) -> list[Path]:
    """The file of dotted `module` under any of `roots` (`a/b.py`, `a/b/__main__.py`, `a/b/__init__.py`)."""
    parts = module.removesuffix(".__main__").split(".")
    found = []
    for root in roots:
        base = root.joinpath(*parts)
        for path in (base.with_name(base.name + ".py"), base / "__main__.py", base / "__init__.py"):
            if path.is_file():
                found.append(path)
                break
    return found


def _installed_module_files(interpreter: str, module: str, folder: Path) -> list[Path]:
    """Where `interpreter` imports `module` from: asks for its top package, then looks for the rest."""
    top, _, below = module.partition(".")
    try:
        done = subprocess.run(
            [interpreter, "-I", "-c", _FIND_SPEC, top],
            capture_output=True,
            text=True,
            timeout=FIND_SPEC_TIMEOUT_S,
            cwd=folder if folder.is_dir() else None,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    if done.returncode != 0 or not done.stdout.strip():
        return []
    origin, *locations = done.stdout.splitlines()
    if not below:
        return [Path(origin)] if origin and Path(origin).is_file() else []
    return _module_files(below, [Path(location) for location in locations if location])


def _console_script_module(script: Path, folder: Path) -> list[Path]:
    """The module file a Python console script imports its entry point from; [] for any other file."""
    try:
        with open(script, "rb") as handle:
            head = handle.read(4096).decode("utf-8", errors="replace")
    except OSError:
        return []
    interpreter = _shebang_python(head)
    match = _ENTRY_IMPORT.search(head)
    if interpreter is None or match is None:
        return []
    return _installed_module_files(interpreter, match.group(1), folder)


def _shebang_python(head: str) -> str | None:
    """The Python interpreter a script's first lines name (`#!/v/bin/python`, `#!/usr/bin/env python3`,
    pip's `#!/bin/sh` trampoline for long paths); None when it is not a Python script."""
    lines = head.splitlines()
    if not lines or not lines[0].startswith("#!"):
        return None
    words = _split(lines[0][2:])
    if words and Path(words[0]).name == "sh" and len(lines) > 1:
        trampoline = _PIP_TRAMPOLINE.match(lines[1])
        words = _split(trampoline.group(1)) if trampoline else []
    if words and Path(words[0]).name == "env":
        words = [word for word in words[1:] if not word.startswith("-") and "=" not in word]
        found = shutil.which(words[0]) if words else None
        words = [found] if found else []
    if not words or not _PYTHON_NAME.match(Path(words[0]).name):
        return None
    return words[0]


def _interpreter(word: str | None, server: ServerConfig, folder: Path) -> str | None:
    """The interpreter a command word runs: the server's own `python` is ours (config's rule), a path is
    taken from the folder, another word from PATH; None (a launcher's choice): the folder's `.venv`."""
    if word is None:
        venv = folder / ".venv" / "bin" / "python"
        return str(venv) if venv.exists() else shutil.which("python3")
    if word == server.command:
        word = server.resolved_command() or word
    if "/" in word:
        path = folder / Path(word).expanduser()
        return str(path) if path.exists() else None
    return shutil.which(word, path=_plain(server.env.get("PATH")))


def _plain(value: str | None) -> str | None:
    """A setting's value unless it is still a `${NAME}` reference (then: None, the default)."""
    return None if value is None or "${" in value else value


def _split(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError:
        return text.split()
