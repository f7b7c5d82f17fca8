"""YAML files a user edits, read so that every problem points at a file and a line.

PyYAML forgets where values came from once it builds Python objects, and
pydantic only knows a `loc` path like `('tasks', 3, 'task_type')`. So a file is
composed into YAML nodes first; walking the node tree records the line of every
mapping key and sequence item under its path (and catches duplicate keys, which
PyYAML would silently let the last one win). Validation errors are then mapped
back to the nearest recorded line, and their messages translated into short
plain sentences.

Every problem found is reported, not only the first: fixing a file one error
per run is tedious. All of them travel in one `ConfigFileError`, whose text is
one `file:line: message` line per problem.

`${NAME}` interpolation lives here too, because it walks the same paths and its
errors need the same lines.

A file is untrusted input, so it is read within bounds (`_BoundedLoader`): a
document nested deeper than `MAX_DEPTH` would exhaust Python's stack, and
aliases that expand to more than `MAX_ALIAS_EXPANSION` values (a "billion
laughs" file of a few hundred bytes expands to billions) would exhaust memory
or time in everything that walks the data afterwards. Both are refused while
composing, before any value is built, as are aliases to the value that
contains them (an endless structure) and characters YAML forbids (a NUL byte).
So is a whole number longer than `MAX_INT_CHARS` (`min_calls` with 100,000
digits): Python would refuse to build it, or take long to; the walk names
its field, the loader's `construct_yaml_int` catches any other (a key).
The file itself is read by `read_text_file` (`safe_read`): a regular file of
at most `MAX_INPUT_BYTES`, never a FIFO, a device or a link loop.
"""

from __future__ import annotations

import io
import os
import re
import types
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar, Union, get_args, get_origin

import yaml
from dotenv import dotenv_values
from dotenv.parser import parse_stream
from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from mcpipechekr._util.safe_read import UnreadableFile, read_user_text, resolved, resolved_file
from mcpipechekr._util.user_error import InputError

Loc = tuple[str | int, ...]

MAX_DEPTH = 100
"""Deepest nesting of lists and mappings a file may have; real files stay under ten."""

MAX_ALIAS_EXPANSION = 10_000
"""Most values that aliases (`*name`) may add to a file once expanded; `<<: *defaults` uses a few dozen."""

MAX_INT_CHARS = 100
"""Longest whole number a file may write, in characters: every bounded field needs under 20, and Python
refuses to convert more than 4,300 digits at all."""

_INT_TAG = "tag:yaml.org,2002:int"


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an input, located as precisely as we can.

    `source` is a file name as the user knows it, or a command-line flag when the
    bad value came from one (then there is no line).
    """

    source: str
    line: int | None
    message: str
    column: int | None = None

    def __str__(self) -> str:
        where = self.source
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        return f"{where}: {self.message}"


class ConfigFileError(InputError):
    """One or more problems in the files and flags a user gave; the text is one line per problem."""

    def __init__(self, problems: list[Problem]):
        self.problems = list(problems)
        super().__init__("\n".join(str(problem) for problem in self.problems))


def display_path(path: str | Path) -> str:
    """The path as the user would type it: relative to the current folder when inside it."""
    path = Path(path)
    try:
        return str(resolved_file(path).relative_to(resolved(Path.cwd())))
    except ValueError:
        return str(path)


@dataclass
class YamlDocument:
    """Parsed YAML data plus the line of every key and item, to locate problems."""

    path: Path
    data: Any
    lines: dict[Loc, int]
    display: str = ""

    def __post_init__(self) -> None:
        if not self.display:
            self.display = display_path(self.path)

    def line_for(self, loc: Loc) -> int | None:
        """The line of `loc`, or of its nearest recorded ancestor (a missing field points at its parent)."""
        loc = tuple(loc)
        while True:
            if loc in self.lines:
                return self.lines[loc]
            if not loc:
                return None
            loc = loc[:-1]

    def problem(self, loc: Loc, message: str) -> Problem:
        return Problem(self.display, self.line_for(loc), message)


def load_yaml(
    path: str | Path,
    *,
    what: str = "file",
    top: Literal["mapping", "list"] = "mapping",
    shape: str | None = None,
) -> YamlDocument:
    """Read a YAML file whose top level must be a mapping (or a list); raise ConfigFileError for any problem.

    `what` names the file's role in messages ("config file", "task file") and
    `shape` what the top level should hold ("a list of {id, reason} entries").
    A list file may be empty (an empty list); a mapping file may not.
    """
    text = read_text_file(path, what=what)
    return parse_yaml(text, path, what=what, top=top, shape=shape)


def read_text_file(path: str | Path, *, what: str = "file") -> str:
    """A file a user wrote, as UTF-8 text; ConfigFileError when it cannot be (see `safe_read`).

    A link loop, a FIFO, a device or a directory is refused by its type before
    it is read, a file over `MAX_INPUT_BYTES` by its size; a NUL or non-UTF-8
    byte is reported at its line and column.
    """
    shown = display_path(path)
    try:
        return read_user_text(path, what=what, shown=shown)
    except UnreadableFile as exc:
        raise ConfigFileError([Problem(shown, exc.line, exc.problem, column=exc.column)]) from None


def parse_yaml(
    text: str,
    path: str | Path,
    *,
    what: str = "file",
    top: Literal["mapping", "list"] = "mapping",
    shape: str | None = None,
) -> YamlDocument:
    """`load_yaml` for text already read (by a caller that reads files its own way); `path` names it."""
    path = Path(path)
    shown = display_path(path)
    try:
        loader = _BoundedLoader(text)
    except yaml.reader.ReaderError as exc:
        raise ConfigFileError([_unreadable_character(shown, text, exc)]) from None
    try:
        node = loader.get_single_node()
        expected_node = yaml.MappingNode if top == "mapping" else yaml.SequenceNode
        expected_text = shape or ("a mapping of fields" if top == "mapping" else "a list")
        if node is None:
            if top == "list":
                return YamlDocument(path=path, data=[], lines={}, display=shown)
            raise ConfigFileError([Problem(shown, None, f"{what} is empty: expected {expected_text}")])
        if not isinstance(node, expected_node):
            raise ConfigFileError(
                [
                    Problem(
                        shown,
                        node.start_mark.line + 1,
                        f"the top level must be {expected_text}, not a {_node_kind(node)}",
                    )
                ]
            )
        lines: dict[Loc, int] = {}
        found: list[Problem] = []  # duplicate keys, numbers too long to build
        _walk(node, (), lines, found, shown, set())
        if found:
            raise ConfigFileError(found)
        data = loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "invalid YAML"
        if not isinstance(exc, _BeyondLimit):
            problem = f"YAML syntax error: {problem}"
        if mark is None:
            raise ConfigFileError([Problem(shown, None, problem)]) from None
        raise ConfigFileError([Problem(shown, mark.line + 1, problem, column=mark.column + 1)]) from None
    except yaml.YAMLError as exc:
        raise ConfigFileError([Problem(shown, None, f"YAML syntax error: {exc}")]) from None
    finally:
        loader.dispose()
    return YamlDocument(path=path, data=data, lines=lines, display=shown)


class _BeyondLimit(yaml.composer.ComposerError):
    """Valid YAML that this loader refuses to read (too deep, too many aliases, a cyclic alias)."""


class _BoundedLoader(yaml.SafeLoader):
    """PyYAML's safe loader, within `MAX_DEPTH` and `MAX_ALIAS_EXPANSION` (see the module docstring).

    Each composed node is given `_values`, how many values it holds once its
    aliases are expanded; an alias adds its target's count to the file's
    running total. Counting costs nothing, unlike expanding.
    """

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._expanded = 0
        self._open: set[str] = set()  # anchors of the values being composed: an alias to one is a cycle

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            return self._alias(event, parent, index)
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise _BeyondLimit(
                None,
                None,
                f"lists and mappings nested more than {MAX_DEPTH} levels deep: flatten the file",
                event.start_mark,
            )
        anchor = getattr(event, "anchor", None)
        if anchor is not None:
            self._open.add(anchor)
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
            self._open.discard(anchor)
        node._values = 1 + sum(_values(child) for child in _children(node))  # type: ignore[attr-defined]
        return node

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        if len(node.value) > MAX_INT_CHARS:
            raise _BeyondLimit(None, None, _long_number(node), node.start_mark)
        return super().construct_yaml_int(node)

    def _alias(self, event: yaml.AliasEvent, parent: yaml.Node | None, index: Any) -> yaml.Node:
        if event.anchor in self._open:
            raise _BeyondLimit(
                None, None, f"alias '*{event.anchor}' refers to the value that contains it", event.start_mark
            )
        node = super().compose_node(parent, index)
        self._expanded += _values(node)
        if self._expanded > MAX_ALIAS_EXPANSION:
            raise _BeyondLimit(
                None,
                None,
                f"aliases expand to more than {MAX_ALIAS_EXPANSION} values (at '*{event.anchor}'): "
                "write the values out, or use fewer aliases",
                event.start_mark,
            )
        return node


_BoundedLoader.add_constructor(_INT_TAG, _BoundedLoader.construct_yaml_int)


def _long_number(node: yaml.ScalarNode) -> str:
    return f"a whole number of {len(node.value)} characters, over the limit of {MAX_INT_CHARS}: write less"


def _values(node: yaml.Node) -> int:
    return getattr(node, "_values", 1)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _unreadable_character(shown: str, text: str, error: yaml.reader.ReaderError) -> Problem:
    """A character YAML forbids (a NUL byte, a control character), at its line and column."""
    position = error.position
    line = text.count("\n", 0, position) + 1
    column = position - (text.rfind("\n", 0, position) + 1) + 1
    name = "a NUL byte" if error.character == 0 else f"the control character #x{error.character:04x}"
    return Problem(shown, line, f"YAML does not allow {name} here: remove it", column=column)


def _node_kind(node: yaml.Node) -> str:
    if isinstance(node, yaml.SequenceNode):
        return "list"
    if isinstance(node, yaml.MappingNode):
        return "mapping"
    return "single value"


def _walk(
    node: yaml.Node, loc: Loc, lines: dict[Loc, int], problems: list[Problem], shown: str, active: set[int]
) -> None:
    """Record the line of every key and item below `node`; note duplicate keys.

    `active` holds the nodes on the current path, so a recursive alias (`&a [*a]`) cannot loop forever.
    """
    if id(node) in active:
        return
    if isinstance(node, yaml.ScalarNode) and node.tag == _INT_TAG and len(node.value) > MAX_INT_CHARS:
        where = f"field '{field_path(loc)}': " if loc else ""
        problems.append(Problem(shown, node.start_mark.line + 1, where + _long_number(node)))
        return
    active.add(id(node))
    if isinstance(node, yaml.MappingNode):
        first_line: dict[str, int] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                continue
            key = key_node.value
            line = key_node.start_mark.line + 1
            if key in first_line and key != "<<":
                where = field_path((*loc, key))
                problems.append(
                    Problem(shown, line, f"duplicate key '{where}' (first given at line {first_line[key]})")
                )
                continue
            first_line[key] = line
            lines.setdefault((*loc, key), line)
            _walk(value_node, (*loc, key), lines, problems, shown, active)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            lines.setdefault((*loc, index), item.start_mark.line + 1)
            _walk(item, (*loc, index), lines, problems, shown, active)
    active.discard(id(node))
    if not loc:
        lines.setdefault((), node.start_mark.line + 1)


# --- ${NAME} interpolation -------------------------------------------------------------------------

_REFERENCE = re.compile(r"\$\$\{|\$\{([^}]*)\}|\$\{")
_BODY = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?::-(?P<default>.*))?$", re.DOTALL)


@dataclass
class Interpolation:
    """The result of substituting `${NAME}` references: data, where values came from, and what went wrong."""

    data: Any
    secrets: list[tuple[str, str]] = field(default_factory=list)  # (substituted value, "${NAME}")
    problems: list[tuple[Loc, str]] = field(default_factory=list)


def interpolate(data: Any, environ: Mapping[str, str]) -> Interpolation:
    """Substitute `${NAME}` and `${NAME:-default}` in every string value; `$${` writes a literal `${`.

    Rules follow the shell: `:-` uses the default when the variable is unset or
    empty. Every value taken from `environ` is remembered as a secret, because
    nothing tells an API key apart from a port number, and a secret must never
    reach an artifact.
    """
    result = Interpolation(data=None)

    def substitute(text: str, loc: Loc) -> str:
        def one(match: re.Match[str]) -> str:
            token = match.group(0)
            if token == "$${":
                return "${"
            if match.group(1) is None:
                result.problems.append(
                    (loc, "unclosed '${': write ${NAME} or ${NAME:-default}, or $${ for a literal")
                )
                return token
            body = _BODY.match(match.group(1))
            if body is None:
                result.problems.append(
                    (loc, f"malformed reference '{token}': write ${{NAME}} or ${{NAME:-default}}")
                )
                return token
            name, default = body.group("name"), body.group("default")
            value = environ.get(name)
            if value:
                result.secrets.append((value, "${" + name + "}"))
                return value
            if default is not None:
                return default
            if value is not None:  # set but empty, and no default: empty it is
                return value
            result.problems.append(
                (
                    loc,
                    f"environment variable '{name}' is not set: set it, add it to .env beside the file, "
                    f"or write ${{{name}:-default}}",
                )
            )
            return token

        return _REFERENCE.sub(one, text)

    def walk(value: Any, loc: Loc) -> Any:
        if isinstance(value, str):
            return substitute(value, loc) if "${" in value else value
        if isinstance(value, dict):
            return {key: walk(item, (*loc, key)) for key, item in value.items()}
        if isinstance(value, list):
            return [walk(item, (*loc, index)) for index, item in enumerate(value)]
        return value

    result.data = walk(data, ())
    return result


def read_dotenv(dotenv_path: Path) -> dict[str, str]:
    """The `NAME=value` lines of a `.env` file (none when it is absent); never put into `os.environ`.

    Read like every user file (`read_text_file`: a directory, a FIFO or a link
    loop is refused, not skipped), and strictly: a line python-dotenv cannot
    parse, or a name without `=`, is refused at its line rather than dropped.
    """
    if not os.path.lexists(dotenv_path):
        return {}
    text = read_text_file(dotenv_path, what=".env file")
    shown = display_path(dotenv_path)
    problems = []
    for binding in parse_stream(io.StringIO(text)):
        original = binding.original.string
        line = binding.original.line + original[: len(original) - len(original.lstrip())].count("\n")
        if binding.error:
            problems.append(
                Problem(shown, line, "not a NAME=value line: write NAME=value, or # for a comment")
            )
        elif binding.key is not None and binding.value is None:
            problems.append(Problem(shown, line, f"'{binding.key}' has no '=': write {binding.key}=value"))
    if problems:
        raise ConfigFileError(problems)
    return {key: value for key, value in dotenv_values(stream=io.StringIO(text)).items() if value is not None}


def environment_with_dotenv(
    dotenv: Mapping[str, str], environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """Variables from a `.env` file (`read_dotenv`) overlaid by the process environment (which wins)."""
    return {**dotenv, **(os.environ if environ is None else environ)}


# --- validation errors as plain lines --------------------------------------------------------------

Describe = Callable[[Loc], str]


def field_path(loc: Loc) -> str:
    """`('server', 'health', 'timeout_s')` -> `server.health.timeout_s`; list items as `[i]`."""
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += ("." if text else "") + str(part)
    return text


def describe_field(loc: Loc) -> str:
    """The default way to name a location in a message."""
    return f"field '{field_path(loc)}'" if loc else "the file"


def problems_from_validation(
    doc: YamlDocument,
    error: ValidationError,
    model: type[BaseModel],
    *,
    describe: Describe = describe_field,
    prefix: Loc = (),
    sources: Mapping[Loc, str] | None = None,
    skip: Iterable[Loc] = (),
) -> list[Problem]:
    """One plain problem per pydantic error, at the line of the value's key or item.

    `prefix` is prepended to every error's loc (when a sub-model was validated on
    its own). `sources` maps a loc to the command-line flag its value came from,
    so an error in an overridden value names the flag instead of a file line.
    Errors at or below a loc in `skip` are dropped: that value already has a
    problem of its own (an unset `${NAME}`), and a second one would only confuse.
    """
    problems = []
    skip = list(skip)
    for detail in error.errors(include_url=False):
        loc = (*prefix, *detail["loc"])
        if any(loc[: len(skipped)] == skipped for skipped in skip):
            continue
        message = plain_message(detail, model, tuple(detail["loc"]))
        flag = _flag_for(loc, sources or {})
        if flag is not None:
            problems.append(Problem(flag, None, message))
        else:
            problems.append(doc.problem(loc, f"{describe(loc)}: {message}"))
    return problems


def _flag_for(loc: Loc, sources: Mapping[Loc, str]) -> str | None:
    for source_loc, flag in sources.items():
        if loc[: len(source_loc)] == source_loc:
            return flag
    return None


_TYPE_MESSAGES = {
    "string_type": "must be a string",
    "int_type": "must be a whole number",
    "int_parsing": "must be a whole number",
    "int_from_float": "must be a whole number",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "list_type": "must be a list",
    "tuple_type": "must be a list",
    "dict_type": "must be a mapping of names to values",
    "model_type": "must be a mapping of fields",
    "model_attributes_type": "must be a mapping of fields",
    "none_required": "must be empty",
}


def plain_message(detail: ErrorDetails, model: type[BaseModel], loc: Loc) -> str:
    """Translate a pydantic error into a short sentence a user can act on."""
    kind = detail["type"]
    ctx = detail.get("ctx") or {}
    if kind == "missing":
        return "is required"
    if kind == "extra_forbidden":
        known = known_fields(model, loc[:-1])
        return f"unknown field (known: {', '.join(known)})" if known else "unknown field"
    if kind == "literal_error":
        return "must be " + str(ctx.get("expected", "")).replace("'", "")
    if kind in _TYPE_MESSAGES:
        return _TYPE_MESSAGES[kind]
    if kind == "greater_than":
        return f"must be greater than {_number(ctx['gt'])}"
    if kind == "greater_than_equal":
        return f"must be at least {_number(ctx['ge'])}"
    if kind == "less_than":
        return f"must be less than {_number(ctx['lt'])}"
    if kind == "less_than_equal":
        return f"must be at most {_number(ctx['le'])}"
    if kind == "string_too_long":
        return f"must be at most {ctx.get('max_length')} characters long"
    if kind == "string_too_short" and ctx.get("min_length") == 1:
        return "must not be empty"
    if kind == "too_short":
        return f"must have at least {ctx.get('min_length')} item(s)"
    if kind == "string_pattern_mismatch":
        return f"must match the pattern {ctx.get('pattern')}"
    if kind in ("value_error", "assertion_error"):
        message = detail["msg"]
        for lead in ("Value error, ", "Assertion failed, "):
            message = message.removeprefix(lead)
        return message
    return detail["msg"][:1].lower() + detail["msg"][1:]


def _number(value: Any) -> str:
    """`0.0` -> `0`: bounds read as the user would write them."""
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def known_fields(model: type[BaseModel], loc: Loc) -> list[str]:
    """Field names of the model found by following `loc` from `model` (empty when it leads elsewhere)."""
    annotation: Any = model
    for part in loc:
        annotation = _unwrap_optional(annotation)
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            fields = annotation.model_fields
            if not isinstance(part, str) or part not in fields:
                return []
            annotation = fields[part].annotation
            continue
        origin, args = get_origin(annotation), get_args(annotation)
        if origin in (list, tuple, set, frozenset) and isinstance(part, int) and args:
            annotation = args[0]
        elif origin is dict and len(args) == 2:
            annotation = args[1]
        else:
            return []
    annotation = _unwrap_optional(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [info.alias or name for name, info in annotation.model_fields.items()]
    return []


def _unwrap_optional(annotation: Any) -> Any:
    """`X | None` -> `X`: optional sub-models still have fields to list."""
    origin = get_origin(annotation)
    if origin is Union or origin is types.UnionType:
        args = [arg for arg in get_args(annotation) if arg is not type(None)]
        if len(args) == 1:
            return args[0]
    return annotation


ModelT = TypeVar("ModelT", bound=BaseModel)


def unique_problems(problems: list[Problem]) -> list[Problem]:
    """Each problem once, in the order found (two checks may see the same mistake)."""
    return list(dict.fromkeys(problems))


def validate_document(
    doc: YamlDocument,
    model: type[ModelT],
    *,
    problems: list[Problem] | None = None,
    describe: Describe = describe_field,
    skip: Iterable[Loc] = (),
) -> ModelT:
    """Validate a loaded file; raise ConfigFileError with every problem, once each, in line order.

    `problems` are those found before validation (duplicate ids, references);
    the model's own errors are added to them so the user sees all at once,
    except at or below a loc in `skip` (see `problems_from_validation`).
    """
    found = list(problems or [])
    value: ModelT | None = None
    try:
        value = model.model_validate(doc.data)
    except ValidationError as exc:
        found.extend(problems_from_validation(doc, exc, model, describe=describe, skip=skip))
    if found or value is None:
        raise ConfigFileError(sorted(unique_problems(found), key=lambda problem: problem.line or 0))
    return value
