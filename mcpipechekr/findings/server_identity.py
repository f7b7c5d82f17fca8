"""Which server a finding belongs to, so that only runs of that server can verify it.

One findings home can hold the findings of several servers (a home shared by
projects through `MCPIPECHEKR_HOME`, or a project that changed servers). A
verification is evidence about the server it ran against; counted for the
finding of another server, a healthy `victim` would close the open findings of
a broken `otherserver`. So a finding is owned by a `ServerKey`, its server's
name and the identity of its source, and a run counts only for findings with
the run's key (`lifecycle/ownership.py` keeps and checks it).

The source identity is where the server's code comes from, not how it is
started, so that a flag added to the command line or a package's new version
is still the same server:

- streamable HTTP: the URL without its query (which may carry a key);
- stdio, a file git tracks (`server/source.py`): the repository, by its first
  commit, and the file's path in it; so a project folder moved or copied, or
  another clone of the repository, is still the same server;
- otherwise, once launchers are looked through (`server/program.py`): the
  script's absolute path, the module and the folder it is imported from, the
  package or image without its version, or the executable (its absolute path
  where PATH finds it); a program given as code (`python -c`) or a command
  line nothing can be read from is identified by a hash of its whole command
  line.

Limits: two servers named alike and run from the same file are one server
here; a server whose code outside git moved to another path is another one.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from mcpipechekr._util.hashing import sha256_json
from mcpipechekr.config import ServerConfig
from mcpipechekr.server.program import program_name, program_of
from mcpipechekr.server.source import find_server_source, git_output


@dataclass(frozen=True)
class ServerKey:
    """A server as findings know it: its name and the identity of its source."""

    name: str
    source: str

    def describe(self) -> str:
        return f"'{self.name}' ({self.source})"


def server_key(server: ServerConfig) -> ServerKey:
    """The key of the server a command talks to (its paths already made absolute)."""
    return ServerKey(server.name, source_identity(server))


def source_identity(server: ServerConfig) -> str:
    """Where the server's code comes from, as one line (see the module docstring)."""
    if server.url is not None:
        parts = urlsplit(server.url)
        return (
            f"url:{parts.scheme}://{parts.hostname or ''}{f':{parts.port}' if parts.port else ''}{parts.path}"
        )
    tracked = find_server_source(server)
    root = _first_commit(tracked.repo) if tracked is not None else None
    if tracked is not None and root is not None and tracked.file.is_relative_to(tracked.repo):
        return f"git:{root[:12]}:{tracked.file.relative_to(tracked.repo).as_posix()}"
    argv = [server.command or "", *server.args]
    program = program_of(argv)
    folder = Path(server.cwd) if server.cwd else Path.cwd()
    folder = folder.joinpath(*program.chdir)
    if program.kind == "script":
        return f"script:{_absolute(folder / Path(program.target).expanduser())}"
    if program.kind == "module":
        return f"module:{program.target} in {_absolute(folder)}"
    if program.kind in ("package", "image"):
        return f"{program.kind}:{program_name(program) or program.target}"
    if program.kind == "executable" and "-c" not in server.args:
        word = program.target
        found = shutil.which(word) if "/" not in word else str(folder / Path(word).expanduser())
        return f"executable:{_absolute(Path(found)) if found else word}"
    return f"command line:{sha256_json(argv)[:16]}"


def _first_commit(repo: Path) -> str | None:
    """The repository's first commit (the oldest root, where history merged several): its lasting name."""
    roots = (git_output(repo, "rev-list", "--max-parents=0", "HEAD") or "").split()
    return roots[-1] if roots else None


def _absolute(path: Path) -> str:
    try:
        return str(path.resolve())
    except OSError:
        return str(path.absolute())
