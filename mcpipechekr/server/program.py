"""What a stdio server's command line really runs: the program behind its launchers.

A command line often starts with something other than the server: `env
HOME=/h my-server`, `sh -c "cd x && node dist/index.js"`, `npx -y
@acme/notes-mcp`, `uv run server.py`, `docker run -i --rm ghcr.io/acme/notes:1.2`.
`program_of` looks through such launchers and says what remains: a script an
interpreter runs, a Python module (`python -m`), a package a package runner
fetches, a container image, or an executable. Two things are built on it:

- the server's name in reports and file names (`program_name`): the program's
  own, so that two servers started through `env` in one folder get logs and
  pins of their own;
- where the server's source lives (`server/source.py`): the file to look up in git.

The rules are about launchers and their options, never about one server. A
script whose stem says nothing (`index.js`, `server.py`, `__main__.py`) is named
after the nearest folder on its path that does, skipping the folders that hold
code for something else (`dist`, `src`, `bin`, ...).

Limits: an option is known to take a value only where the tables below say so;
an unknown option given its value as a separate word makes that value read as
the program. In a shell command line (`sh -c`) only `;`, `&&`, `||`, `&` and
`|` between commands, `cd DIR`, assignments and redirections are understood;
the last command is the program.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import Literal

ProgramKind = Literal["script", "module", "package", "image", "executable", "unknown"]

GENERIC_STEMS = frozenset({"index", "main", "server", "app", "cli", "__main__", "run", "start", "mod"})
"""Entry-point names that say nothing about the server (`mod` is Deno's `index`)."""

_HOLDER_FOLDERS = frozenset(
    {"dist", "build", "lib", "src", "bin", "out", "venv", "node_modules", "site-packages", "dist-packages"}
)
"""Folders that hold code for whatever contains them, so they never name it (hidden ones neither)."""

_SCRIPT_SUFFIXES = (
    ".py",
    ".pyw",
    ".js",
    ".mjs",
    ".cjs",
    ".ts",
    ".mts",
    ".cts",
    ".tsx",
    ".jsx",
    ".sh",
    ".exe",
)
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_PYTHON = re.compile(r"^(python|pypy)(\d+(\.\d+)*)?[a-z]?$")
_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh"})
_PREFIXES = frozenset({"exec", "nohup"})
_NODES = frozenset({"node", "nodejs", "tsx", "ts-node"})
_PACKAGE_RUNNERS = frozenset({"npx", "bunx", "pnpx"})
_CONTAINERS = frozenset({"docker", "podman"})
_SEPARATORS = frozenset({";", "&&", "||", "&", "|", "(", ")", ";;"})
_REDIRECTIONS = frozenset({"<", ">", ">>", ">&", "<&", "&>", ">|", "<<", "<<<"})
_SHELL_SETUP = frozenset({"export", "set", "source", ".", "ulimit", "umask", "unset", "true", ":"})
_MAX_DEPTH = 8


@dataclass(frozen=True)
class _Options:
    """A program's options that take a value as the next word (a `--name=value` word needs no entry)."""

    short: str = ""
    long: frozenset[str] = frozenset()


_ENV = _Options("uCS", frozenset({"--unset", "--chdir", "--split-string"}))
_PYTHON_OPTIONS = _Options("cmWX", frozenset({"--check-hash-based-pycs"}))
_NODE_OPTIONS = _Options(
    "erpC",
    frozenset(
        {
            "--require",
            "--import",
            "--loader",
            "--experimental-loader",
            "--eval",
            "--print",
            "--conditions",
            "--input-type",
            "--env-file",
            "--env-file-if-exists",
            "--title",
            "--inspect-port",
            "--redirect-warnings",
            "--disable-warning",
            "--watch-path",
            "--tsconfig",
        }
    ),
)
_NPX = _Options("pc", frozenset({"--package", "--call", "--cache", "--userconfig", "--registry"}))
_UV_GLOBAL = frozenset(
    {
        "--directory",
        "--project",
        "--cache-dir",
        "--config-file",
        "--color",
        "--python-preference",
        "--allow-insecure-host",
    }
)
_UV_RUN = _Options(
    "pPfiwC",
    _UV_GLOBAL
    | frozenset(
        {
            "--from",
            "--with",
            "--with-editable",
            "--with-requirements",
            "--python",
            "--package",
            "--extra",
            "--group",
            "--no-group",
            "--only-group",
            "--env-file",
            "--index",
            "--default-index",
            "--index-url",
            "--extra-index-url",
            "--find-links",
            "--constraints",
            "--overrides",
            "--build-constraints",
            "--resolution",
            "--prerelease",
            "--exclude-newer",
            "--link-mode",
            "--refresh-package",
            "--reinstall-package",
            "--upgrade-package",
            "--index-strategy",
            "--keyring-provider",
            "--config-setting",
            "--no-build-package",
            "--no-binary-package",
        }
    ),
)
_PIPX_RUN = _Options("", frozenset({"--spec", "--python", "--index-url", "--pip-args", "--backend"}))
_DENO = _Options(
    "cL",
    frozenset(
        {
            "--config",
            "--import-map",
            "--lock",
            "--cert",
            "--location",
            "--seed",
            "--ext",
            "--preload",
            "--log-level",
        }
    ),
)
_BUN = _Options("rc", frozenset({"--cwd", "--preload", "--env-file", "--config", "--define", "--conditions"}))
_DOCKER_GLOBAL = _Options(
    "cHl",
    frozenset({"--config", "--context", "--host", "--log-level", "--tlscacert", "--tlscert", "--tlskey"}),
)
_DOCKER_RUN = _Options(
    "acehlmpuvw",
    frozenset(
        "--" + name
        for name in (
            "add-host annotation attach blkio-weight blkio-weight-device cap-add cap-drop cgroup-parent "
            "cgroupns cidfile cpu-period cpu-quota cpu-rt-period cpu-rt-runtime cpu-shares cpus "
            "cpuset-cpus cpuset-mems device device-cgroup-rule device-read-bps device-read-iops "
            "device-write-bps device-write-iops dns dns-option dns-search domainname entrypoint env "
            "env-file expose gpus group-add health-cmd health-interval health-retries "
            "health-start-interval health-start-period health-timeout hostname ip ip6 ipc isolation "
            "kernel-memory label label-file link link-local-ip log-driver log-opt mac-address memory "
            "memory-reservation memory-swap memory-swappiness mount name network net network-alias "
            "net-alias oom-score-adj pid pids-limit platform publish pull restart runtime security-opt "
            "shm-size stop-signal stop-timeout storage-opt sysctl tmpfs ulimit user userns uts volume "
            "volume-driver volumes-from workdir arch os variant secret"
        ).split()
    ),
)
_SHELL = _Options("oO", frozenset({"--rcfile", "--init-file"}))


@dataclass(frozen=True)
class Program:
    """What a command line runs once its launchers are looked through."""

    kind: ProgramKind
    """`script` (a file an interpreter runs), `module` (`python -m`), `package` (fetched by a
    package runner), `image` (a container), `executable` (a program run directly), `unknown`."""
    target: str
    """The script's path, the module, the package or image as written, or the executable's word."""
    interpreter: str | None = None
    """For a script or module: the word that runs it (`python3`, `/v/bin/python`, `node`); None where a
    launcher picks it (`uv run`: the project's environment)."""
    chdir: tuple[str, ...] = ()
    """Folders the launchers change into on the way (`env -C`, `cd`, `uv run --directory`), in order;
    a relative one is taken from the one before, the first from the server's `cwd`."""


def program_of(argv: Sequence[str]) -> Program:
    """The program `argv` really runs: `env A=1 sh -c "node dist/index.js"` → the script dist/index.js."""
    return _unwrap(list(argv), (), 0)


def program_name(program: Program, cwd: str | None = None) -> str | None:
    """A short name for the program: the script's stem, the module, the package or image without version.

    A generic stem (`GENERIC_STEMS`) is replaced by the nearest meaningful folder
    of its path as written (joined to `cwd` and the launchers' folders when it is
    relative; never looked up on disk). None when the command line names nothing.
    """
    target = program.target
    if program.kind == "unknown" or not target:
        return None
    if program.kind == "image":
        return _image_name(target)
    if program.kind == "package":
        return _package_name(target)
    if program.kind == "module":
        module = target.removesuffix(".__main__")
        if module in GENERIC_STEMS:
            return _folder_name(PurePath(cwd or "", *program.chdir, "x")) or module
        return module
    path = PurePath(target.rstrip("/") or target)
    stem = path.name
    for suffix in _SCRIPT_SUFFIXES:
        stem = stem.removesuffix(suffix)
    if stem in GENERIC_STEMS:
        return _folder_name(PurePath(cwd or "", *program.chdir, path)) or stem
    return stem or None


def is_generic(name: str) -> bool:
    """Whether a name is an entry point's that says nothing about the server (`server`, `index`)."""
    return name in GENERIC_STEMS


def _folder_name(path: PurePath) -> str | None:
    """The nearest folder above `path` that names something: not `..`, hidden or a `_HOLDER_FOLDERS`."""
    for folder in reversed(path.parent.parts):
        if folder in ("", ".", "..", "/") or folder.startswith(".") or folder in _HOLDER_FOLDERS:
            continue
        return folder
    return None


def _image_name(image: str) -> str | None:
    """`ghcr.io/acme/notes-mcp:1.2@sha256:…` → `notes-mcp`."""
    name = image.partition("@")[0].rsplit("/", 1)[-1].partition(":")[0]
    return name or None


def _package_name(spec: str) -> str | None:
    """`@scope/notes-mcp@1.2` → `notes-mcp`, `notes-mcp==1.2` → `notes-mcp`; a path or git URL: its end."""
    for prefix in ("npm:", "jsr:", "pypi:"):
        spec = spec.removeprefix(prefix)
    if "://" in spec or spec.startswith(("git+", "github:", "gitlab:", ".", "/", "~")):
        spec = re.split(r"[#@]", spec.rstrip("/").rsplit("/", 1)[-1])[0]
        return spec.removesuffix(".git") or None
    if spec.startswith("@"):
        spec = "@" + spec[1:].partition("@")[0]
    else:
        spec = spec.partition("@")[0]
    spec = re.split(r"[\[=<>!~;( ]", spec)[0]
    return spec.rsplit("/", 1)[-1] or None


def _word(word: str) -> str:
    """The launcher a word names: its file name without `.exe` (`/usr/bin/python3.11` → `python3.11`)."""
    return PurePath(word).name.removesuffix(".exe")


def _unwrap(words: list[str], chdir: tuple[str, ...], depth: int) -> Program:
    if not words:
        return Program("unknown", "", chdir=chdir)
    head, rest = words[0], words[1:]
    name = _word(head)
    if depth >= _MAX_DEPTH:
        return Program("executable", head, chdir=chdir)
    if name == "env":
        return _env(rest, chdir, depth)
    if name in _PREFIXES:
        return _unwrap(rest, chdir, depth + 1)
    if name in _SHELLS:
        return _shell(head, rest, chdir, depth)
    if _PYTHON.match(name):
        return _python(head, rest, chdir)
    if name in _NODES:
        if name == "tsx" and rest[:1] == ["watch"]:
            rest = rest[1:]
        return _script_of(head, _positional(rest, _NODE_OPTIONS), chdir)
    if name in _PACKAGE_RUNNERS:
        return _package_runner(rest, chdir, depth)
    if name == "uvx":
        return _package(_positional(rest, _UV_RUN), chdir)
    if name == "uv":
        return _uv(rest, chdir, depth)
    if name == "pipx":
        found = _positional(rest, _PIPX_RUN)
        if found[:1] == ["run"]:
            return _package(_positional(found[1:], _PIPX_RUN), chdir)
        return Program("executable", head, chdir=chdir)
    if name == "deno":
        return _deno(head, rest, chdir)
    if name == "bun":
        return _bun(head, rest, chdir, depth)
    if name in _CONTAINERS:
        return _container(head, rest, chdir)
    return Program("executable", head, chdir=chdir)


def _positional(words: list[str], options: _Options) -> list[str]:
    """`words` from the first that is not an option (or option value) on; after `--`, everything."""
    return _scan(words, options)[1]


def _scan(words: list[str], options: _Options) -> tuple[list[tuple[str, str | None]], list[str]]:
    """Options given (name, value) and the words from the first positional one on, getopt-style."""
    found: list[tuple[str, str | None]] = []
    index = 0
    while index < len(words):
        word = words[index]
        if word == "--":
            return found, words[index + 1 :]
        if word.startswith("--"):
            option, equals, value = word.partition("=")
            if equals:
                found.append((option, value))
            elif option in options.long and index + 1 < len(words):
                index += 1
                found.append((option, words[index]))
            else:
                found.append((option, None))
        elif word.startswith("-") and len(word) > 1:
            for position, letter in enumerate(word[1:], start=1):
                if letter in options.short:
                    value = word[position + 1 :]
                    if not value and index + 1 < len(words):
                        index += 1
                        value = words[index]
                    found.append(("-" + letter, value))
                    break
                found.append(("-" + letter, None))
        else:
            return found, words[index:]
        index += 1
    return found, []


def _env(words: list[str], chdir: tuple[str, ...], depth: int) -> Program:
    """`env [-i] [-u NAME] [-C DIR] [-S LINE] [--] [NAME=VALUE]… COMMAND…`."""
    words = ["-i" if word == "-" else word for word in words]
    found, rest = _scan(words, _ENV)
    for option, value in found:
        if option in ("-C", "--chdir") and value:
            chdir = (*chdir, value)
        elif option in ("-S", "--split-string") and value:
            rest = [*_split(value), *rest]
    while rest and _ASSIGNMENT.match(rest[0]):
        rest = rest[1:]
    return _unwrap(rest, chdir, depth + 1)


def _shell(head: str, words: list[str], chdir: tuple[str, ...], depth: int) -> Program:
    """`sh -c "LINE"` (`bash -lc`, `sh -e -c`): the last command of LINE; `sh script.sh`: that script."""
    found, rest = _scan(words, _SHELL)
    if not any(option == "-c" for option, _ in found):
        return _script_of(head, rest, chdir)
    if not rest:
        return Program("unknown", "", chdir=chdir)
    return _command_line(rest[0], chdir, depth)


def _command_line(line: str, chdir: tuple[str, ...], depth: int) -> Program:
    """The program a shell command line runs: its last command, after the `cd`s before it."""
    tokens = _tokens(line)
    commands: list[list[str]] = [[]]
    for token in tokens:
        if token in _SEPARATORS:
            commands.append([])
        else:
            commands[-1].append(token)
    chosen: list[str] = []
    folders = chdir
    for command in commands:
        command = _without_redirections(command)
        while command and _ASSIGNMENT.match(command[0]):
            command = command[1:]
        if not command or command[0] in _SHELL_SETUP:
            continue
        if command[0] == "cd":
            folders = (*folders, command[1]) if len(command) > 1 else folders
            continue
        chosen, chdir = command, folders
    return _unwrap(chosen, chdir, depth + 1)


def _tokens(line: str) -> list[str]:
    """Shell words and operators; a line that cannot be split (an open quote) is split on spaces."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        return list(lexer)
    except ValueError:
        return line.split()


def _without_redirections(command: list[str]) -> list[str]:
    kept: list[str] = []
    skip = False
    for index, token in enumerate(command):
        if skip:
            skip = False
            continue
        if token in _REDIRECTIONS:
            if kept and kept[-1].isdigit() and index > 0 and command[index - 1] == kept[-1]:
                kept.pop()  # `2>`: the descriptor belongs to the redirection
            skip = True
            continue
        kept.append(token)
    return kept


def _split(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


def _python(head: str, words: list[str], chdir: tuple[str, ...]) -> Program:
    """`python [options] script …`, `python -m module …`; `python -c CODE` runs no file of its own."""
    found, rest = _scan(words, _PYTHON_OPTIONS)
    for option, value in found:
        if option == "-m" and value:
            return Program("module", value, head, chdir)
        if option == "-c":
            return Program("executable", head, chdir=chdir)
    return _script_of(head, rest, chdir)


def _script_of(head: str, rest: list[str], chdir: tuple[str, ...]) -> Program:
    """The script an interpreter was given as its first positional word; none (a REPL, `-`): itself."""
    if not rest or rest[0] == "-":
        return Program("executable", head, chdir=chdir)
    return Program("script", rest[0], head, chdir)


def _package(rest: list[str], chdir: tuple[str, ...]) -> Program:
    return Program("package", rest[0], chdir=chdir) if rest else Program("unknown", "", chdir=chdir)


def _package_runner(words: list[str], chdir: tuple[str, ...], depth: int) -> Program:
    """`npx [-y] [--package x] pkg[@version]`, `bunx`, `pnpx`; `npx -c "LINE"` runs a command line."""
    found, rest = _scan(words, _NPX)
    for option, value in found:
        if option in ("-c", "--call") and value:
            return _command_line(value, chdir, depth)
    return _package(rest, chdir)


def _uv(words: list[str], chdir: tuple[str, ...], depth: int) -> Program:
    """`uv [--directory DIR] run [options] script-or-command …`; `uv tool run pkg` is `uvx pkg`."""
    found, rest = _scan(words, _UV_RUN)
    chdir = _uv_folders(found, chdir)
    if rest[:2] == ["tool", "run"]:
        return _package(_positional(rest[2:], _UV_RUN), chdir)
    if rest[:1] != ["run"]:
        return Program("executable", "uv", chdir=chdir)
    found, rest = _scan(rest[1:], _UV_RUN)
    chdir = _uv_folders(found, chdir)
    for option, _ in found:
        if option in ("-m", "--module") and rest:
            return Program("module", rest[0], None, chdir)  # in the project's environment
    if rest and rest[0].endswith((".py", ".pyw")):
        return Program("script", rest[0], None, chdir)
    return _unwrap(rest, chdir, depth + 1)


def _uv_folders(found: list[tuple[str, str | None]], chdir: tuple[str, ...]) -> tuple[str, ...]:
    for option, value in found:
        if option == "--directory" and value:
            chdir = (*chdir, value)
    return chdir


def _deno(head: str, words: list[str], chdir: tuple[str, ...]) -> Program:
    """`deno run [options] script`, `deno script`; an `npm:`/`jsr:` specifier is a package."""
    rest = _positional(words, _DENO)
    if rest[:1] == ["run"]:
        rest = _positional(rest[1:], _DENO)
    if rest and rest[0].startswith(("npm:", "jsr:")):
        return Program("package", rest[0], chdir=chdir)
    return _script_of(head, rest, chdir)


def _bun(head: str, words: list[str], chdir: tuple[str, ...], depth: int) -> Program:
    """`bun [run] [options] script`, `bun x pkg` (bunx); `--cwd DIR` is a folder it changes into."""
    found, rest = _scan(words, _BUN)
    if rest[:1] == ["x"]:
        return _package_runner(rest[1:], chdir, depth)
    if rest[:1] == ["run"]:
        more, rest = _scan(rest[1:], _BUN)
        found += more
    for option, value in found:
        if option == "--cwd" and value:
            chdir = (*chdir, value)
    return _script_of(head, rest, chdir)


def _container(head: str, words: list[str], chdir: tuple[str, ...]) -> Program:
    """`docker [global options] [container] run [options] image …` (podman alike)."""
    rest = _positional(words, _DOCKER_GLOBAL)
    if rest[:1] == ["container"]:
        rest = rest[1:]
    if rest[:1] != ["run"]:
        return Program("executable", head, chdir=chdir)
    rest = _positional(rest[1:], _DOCKER_RUN)
    return Program("image", rest[0], chdir=chdir) if rest else Program("unknown", "", chdir=chdir)
