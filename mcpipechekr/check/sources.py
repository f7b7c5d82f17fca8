"""Where argument synthesis finds values a server will accept, besides the tool's own schema.

A published server refuses `"a"` for a repository path or an item id, and it is
right to. The values it accepts are usually in plain sight:

- its own command line, environment and working directory (`config.server`, or
  `server.start` for an HTTP server we launch): a repository path, the
  directories a filesystem server was started with, a time zone. Only values
  that are existing paths (and a few entries inside directories) or look like
  a time zone are taken: an environment variable may hold a secret, and
  anything else in it is no argument; the server's own program file
  (`server.py`, `dist/index.js`) is left out;
- the resources it lists (their URIs and names);
- the results of its other tools: ids, names, paths and URIs found in
  structuredContent, JSON text or the printed form of a Python list or dict
  (`[{'name': 'users'}]`, what a server that returns `str(rows)` sends), with
  the key they sat under, else `key: value` lines, absolute paths and lines of
  plain text. `ValuePool.listed` picks out the names a listing gave of one kind
  of thing (the tables of `list_tables`), for a query over one of them.

Every value carries the label of where it came from, so a report can say why a
call succeeded ("item_id from the result of list_items").

Limits: paths are looked up on this machine, so an HTTP server elsewhere gets
no path candidates from its command; values in results are taken by shape, not
by meaning, and a bounded number of them per result.
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import mcp_types
import orjson

from mcpipechekr.config import ServerConfig

MAX_VALUES_PER_RESULT = 200
MAX_CHILDREN = 6
MAX_DEPTH, MAX_VISITED = 3, 40
MAX_TEXT_VALUE = 300
TIME_ZONE = re.compile(r"^(?:UTC|GMT|Etc/[A-Za-z0-9+-]+|[A-Z][A-Za-z_]+(?:/[A-Z][A-Za-z0-9_+-]+){1,2})$")
ABSOLUTE_PATH = re.compile(r"(?<![\w:/.])(/[^\s'\"`,;()<>\[\]{}]+|[A-Za-z]:\\[^\s'\"`,;()<>\[\]{}]*)")
KEY_VALUE_LINE = re.compile(r"^\s*[-*]?\s*([A-Za-z][A-Za-z0-9 _-]{0,40}?)\s*[:=]\s*(\S.*?)\s*$")
URI = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://\S+$")
IDENTIFIER = re.compile(r"[A-Za-z_][\w.$-]{0,63}")
MAX_LITERAL_CHARS = 100_000
"""A printed Python list or dict longer than this is left to the plain-text reading."""


@dataclass(frozen=True)
class Found:
    """A value seen somewhere, the key it sat under (if any) and where it came from."""

    value: Any
    source: str
    key: str | None = None
    context: str = ""
    """Words around the key: the tool that returned it and the names of the objects it sat in."""


@dataclass
class ValuePool:
    """Every value synthesis may offer, grouped by kind; results of tools are added as they arrive."""

    directories: list[Found] = field(default_factory=list)
    files: list[Found] = field(default_factory=list)
    time_zones: list[Found] = field(default_factory=list)
    resources: list[Found] = field(default_factory=list)
    harvested: list[Found] = field(default_factory=list)
    version: int = 0
    """Grows each time values are added: a tool refused before may be fed by what came since."""
    resources_listed: bool = False
    """Whether the server's resources were taken (by PC-07, or by synthesis when PC-07 did not run)."""

    def add_result(self, tool: str, result: mcp_types.CallToolResult) -> None:
        """Take ids, names, paths and URIs from a successful result of `tool`."""
        found = harvest_result(tool, result)
        known = {(item.key, _hashable(item.value)) for item in self.harvested}
        fresh = [item for item in found if (item.key, _hashable(item.value)) not in known]
        for item in fresh:
            if isinstance(item.value, str) and _looks_like_path(item.value):
                target = self.directories if not Path(item.value).suffix else self.files
                if item.value not in {f.value for f in target}:
                    target.append(Found(item.value, item.source, item.key, item.context))
        self.harvested.extend(fresh)
        if fresh:
            self.version += 1

    def listed(self, noun: str) -> list[Found]:
        """Names other tools returned of one kind of thing (`table`): values alone or under a name-,
        id- or `noun`-like key, from a tool or an object whose name says `noun` (`list_tables`,
        `{"tables": [...]}`), or under a key that does (`table_name`); identifiers only, first seen first.
        """
        wanted = words(noun)[-1:] or [noun]
        out: list[Found] = []
        for found in self.harvested:
            if not isinstance(found.value, str) or not IDENTIFIER.fullmatch(found.value):
                continue
            key = words(found.key) if found.key is not None else []
            around = words(found.context)
            if key and key[-1] not in ("name", "id", "key", *wanted):
                continue
            if set(wanted) <= set(key) | set(around) and found.value not in {f.value for f in out}:
                out.append(found)
        return out

    def add_resources(self, resources: list[mcp_types.Resource]) -> None:
        self.resources_listed = True
        for resource in resources[:50]:
            self.resources.append(Found(str(resource.uri), "resource", "uri", resource.name or ""))
            if resource.name:
                self.resources.append(Found(resource.name, "resource", "name", str(resource.uri)))
        if resources:
            self.version += 1


def words(text: str | None) -> list[str]:
    """`itemId`, `item_id`, `item-id` → ["item", "id"]; plurals made singular."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", text or "")
    found = [word.lower() for word in re.split(r"[^A-Za-z0-9]+", spaced) if word]
    return [
        word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word
        for word in found
    ]


def _hashable(value: Any) -> Any:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS) if isinstance(value, dict | list) else value


def _looks_like_path(text: str) -> bool:
    return bool(ABSOLUTE_PATH.fullmatch(text)) and "://" not in text and len(text) > 1


# --- the server's own command line and environment ----------------------------------------------


def server_values(server: ServerConfig) -> ValuePool:
    """Paths and time zones from how the server is started (its command, args, env and cwd)."""
    pool = ValuePool()
    launches: list[tuple[list[str], dict[str, str], str | None]] = []
    if server.command:
        launches.append((list(server.args), dict(server.env), server.cwd))
    if server.start is not None:
        launches.append((list(server.start.args), dict(server.start.env), server.start.cwd))
    for args, env, cwd in launches:
        base = Path(cwd) if cwd else Path.cwd()
        program = _program_indexes(args)
        for index, arg in enumerate(args):
            if index in program:
                continue  # `python server.py`: the server's own code is no argument for its tools
            for token in _tokens(arg):
                _add_path(pool, token, base, "server command line")
                _add_time_zone(pool, token, "server command line")
        for value in env.values():
            for token in _tokens(value):
                if os.path.isabs(token):
                    _add_path(pool, token, base, "server environment")
                _add_time_zone(pool, token, "server environment")
        if cwd:
            _add_path(pool, cwd, base, "server working directory")
    return pool


CODE_SUFFIXES = {".py", ".pyz", ".js", ".mjs", ".cjs", ".ts", ".jar", ".rb", ".php", ".pl", ".sh", ".exe"}


ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
"""`NAME=value`: a setting for the program, as `env NAME=value program` gives it (the only way
to pass the environment on a `--command` line)."""


def _program_indexes(args: list[str]) -> set[int]:
    """The indexes of the arguments that are the program (`server.py`, `dist/index.js`), if any.

    Options and `NAME=value` settings before it are passed over, and an executable
    file counts as a program, with the code file it runs: in
    `env ROOT=/data /opt/venv/bin/python server.py` neither the interpreter nor
    server.py is a path for the tools.
    """
    found: set[int] = set()
    for index, arg in enumerate(args):
        if arg.startswith("-") or ASSIGNMENT.match(arg):
            continue
        if Path(arg).suffix.lower() in CODE_SUFFIXES:
            return found | {index}
        if found or not _executable_file(arg):
            return found
        found.add(index)  # an interpreter or a server's own executable; its script may follow
    return found


def _executable_file(arg: str) -> bool:
    return os.path.isabs(arg) and os.path.isfile(arg) and os.access(arg, os.X_OK)


def _tokens(text: str) -> list[str]:
    """An argument as given, its value after `--opt=` or `NAME=`, and the parts of a path list (`a:b`)."""
    out = [text]
    if (text.startswith("-") and "=" in text) or ASSIGNMENT.match(text):
        out.append(text.split("=", 1)[1])
    for part in list(out):
        for sep in (os.pathsep, ","):
            if sep in part:
                out.extend(piece for piece in part.split(sep) if piece)
    return out


def _add_path(pool: ValuePool, token: str, base: Path, source: str) -> None:
    if not token or token.startswith("-") or len(token) > 1000:
        return
    path = Path(token) if os.path.isabs(token) else base / token
    try:
        if not path.exists():
            return
        path = path.resolve()
    except OSError:
        return
    if path.is_dir():
        if str(path) in {found.value for found in pool.directories}:
            return
        pool.directories.append(Found(str(path), source))
        try:
            children = sorted(
                (child for child in path.iterdir() if not child.name.startswith(".")),
                key=lambda child: (not child.is_file(), child.name),
            )
        except OSError:
            return
        for child in children[:MAX_CHILDREN]:
            target = pool.files if child.is_file() else pool.directories
            target.append(Found(str(child), f"{source} (inside {path.name or path})"))
        if not any(child.is_file() for child in children[:MAX_CHILDREN]):
            for deeper in _files_below(path):
                pool.files.append(Found(str(deeper), f"{source} (inside {path.name or path})"))
    elif path.is_file() and str(path) not in {found.value for found in pool.files}:
        pool.files.append(Found(str(path), source))


def _files_below(top: Path) -> list[Path]:
    """A few files in the folders under `top`, nearest first, for a directory whose top level has none.

    A server started on a folder of folders (`docs/`, `src/`, `data/`) reads files
    only deeper down; a bounded breadth-first walk (MAX_DEPTH levels, MAX_VISITED
    folders) finds some without reading a whole tree.
    """
    found: list[Path] = []
    queue, visited = [(top, 0)], 0
    while queue and len(found) < MAX_CHILDREN and visited < MAX_VISITED:
        folder, depth = queue.pop(0)
        visited += 1
        try:
            children = sorted(child for child in folder.iterdir() if not child.name.startswith("."))
        except OSError:
            continue
        for child in children:
            if child.is_file() and depth > 0 and len(found) < MAX_CHILDREN:
                found.append(child)
            elif child.is_dir() and not child.is_symlink() and depth < MAX_DEPTH:
                queue.append((child, depth + 1))
    return found


def _add_time_zone(pool: ValuePool, token: str, source: str) -> None:
    if TIME_ZONE.match(token) and token not in {found.value for found in pool.time_zones}:
        pool.time_zones.append(Found(token, source))


# --- results of other tools ---------------------------------------------------------------------


def harvest_result(tool: str, result: mcp_types.CallToolResult) -> list[Found]:
    """Values in a result: scalars under their keys in structured or JSON content, else from its text."""
    source = f"result of {tool}"
    found: list[Found] = []
    documents: list[Any] = []
    if result.structured_content is not None:
        documents.append(result.structured_content)
    texts = [block.text for block in result.content if isinstance(block, mcp_types.TextContent)]
    plain: list[str] = []
    for text in texts:
        try:
            documents.append(orjson.loads(text))
        except orjson.JSONDecodeError:
            literal = _python_literal(text)
            if literal is not None:
                documents.append(literal)
            else:
                plain.append(text)
    for document in documents:
        _walk(document, None, [tool], source, found)
    for text in plain:
        _from_text(text, tool, source, found)
    return found[:MAX_VALUES_PER_RESULT]


def _python_literal(text: str) -> list[Any] | dict[Any, Any] | None:
    """The list or dict a text prints in Python's own notation (`[{'name': 'users'}]`), else None.

    `ast.literal_eval` reads literals only, never runs code; a text that is
    not one, or too long to be worth it, is read as plain text.
    """
    stripped = text.strip()
    if len(stripped) > MAX_LITERAL_CHARS or not stripped.startswith(("[", "{")):
        return None
    try:
        value = ast.literal_eval(stripped)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, list | dict) else None


def _walk(value: Any, key: str | None, trail: list[str], source: str, out: list[Found]) -> None:
    if len(out) >= MAX_VALUES_PER_RESULT:
        return
    if isinstance(value, dict):
        for name, item in list(value.items())[:100]:
            _walk(item, str(name), [*trail, key] if key else trail, source, out)
    elif isinstance(value, list):
        for item in value[:50]:
            _walk(item, key, trail, source, out)
    elif isinstance(value, str):
        if 0 < len(value) <= MAX_TEXT_VALUE:
            out.append(Found(value, source, key, " ".join(trail)))
    elif isinstance(value, int | float) and not isinstance(value, bool):
        out.append(Found(value, source, key, " ".join(trail)))


def _from_text(text: str, tool: str, source: str, out: list[Found]) -> None:
    """`key: value` lines keep their key; absolute paths and short lines are taken as they are."""
    for line in text.splitlines()[:200]:
        stripped = line.strip()
        if not stripped or len(stripped) > MAX_TEXT_VALUE:
            continue
        pair = KEY_VALUE_LINE.match(stripped)
        if pair and not URI.match(stripped) and not _looks_like_path(stripped):
            out.append(Found(pair.group(2).strip().strip("'\"`"), source, pair.group(1).strip(), tool))
        for path in ABSOLUTE_PATH.findall(stripped):
            if _looks_like_path(path):
                out.append(Found(path.rstrip(".:,;"), source, "path", tool))
        if not pair and " " not in stripped.strip("-* "):
            out.append(Found(stripped.strip("-* "), source, None, tool))
