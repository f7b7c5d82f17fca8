"""Journal lines → `calls` rows, fast for the lines our writers produce, exact for every other line.

`CallRecord` decides what a valid record is. Validating each line through it
would cost about three times as much as everything else a full index does, so
lines take two fast paths first, each of which accepts a line only if the
model would accept it too, and yields the same row:

1. `canonical_row`: one regular expression over the exact spelling
   `CallRecord.to_line` writes (its key order, compact separators, ASCII
   names, a `Z` timestamp), which checks every field's type and pattern as it
   matches and hands back the values as strings, with no JSON parse and no
   per-field Python checks; only the calendar date is checked apart and the
   argument shape put in key order (both repeat across lines, so each is
   worked out once).
2. `fast_row`: orjson's parse plus plain-Python checks of the parsed values
   (JSON types exactly as the model requires, no coercion, a UTC-offset
   timestamp), for a valid record in another spelling (other key order,
   spaces, escapes, non-ASCII names, another UTC offset).

Anything else (a string where a number belongs, a missing field, a bad value)
goes through the model, which either accepts it after all or says which field
is wrong. The test suite checks the three agree, record by record, over
mutated records and mutated lines.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any, get_args

import orjson
from pydantic import ValidationError

from mcpipechekr.artifacts.atomic import format_loc
from mcpipechekr.artifacts.call_record import (
    ERR_CODE_PATTERN,
    MAX_RECORD_BYTES,
    SESSION_PATTERN,
    TEMPLATE_ID_PATTERN,
    UUID_PATTERN,
    ArgType,
    CallRecord,
    Outcome,
)
from mcpipechekr.findings.errors import JournalRejected

CALL_COLUMNS = (
    "event_id",
    "session",
    "seq",
    "at",
    "server",
    "tool",
    "template_id",
    "arg_shape",
    "outcome",
    "err_code",
    "retryable",
    "latency_ms",
    "request_bytes",
    "response_bytes",
    "probe",
    "source",
    "line",
)
"""Column order of a row; `source` and `line` say where the record was read, the rest is its content."""
CONTENT = slice(0, CALL_COLUMNS.index("source"))
SOURCE = CALL_COLUMNS.index("source")
LINE = CALL_COLUMNS.index("line")

Row = tuple[Any, ...]

_ZERO = timedelta(0)
_FIELDS = frozenset(CallRecord.model_fields)
_REQUIRED = frozenset(name for name, info in CallRecord.model_fields.items() if info.is_required())
_UUID = re.compile(UUID_PATTERN).fullmatch
_SESSION = re.compile(SESSION_PATTERN).fullmatch
_TEMPLATE = re.compile(TEMPLATE_ID_PATTERN).fullmatch
_ERR_CODE = re.compile(ERR_CODE_PATTERN).fullmatch
_AT = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,6})?(?:Z|[+-][0-9]{2}:[0-9]{2})"
).fullmatch
_ARG_TYPES = frozenset(get_args(ArgType))
_OUTCOMES = frozenset(get_args(Outcome))
_NAME_MAX = 200
_UTC_TEXT_LEN = len("2026-01-01T00:00:00.000000Z")


def _bare(pattern: str) -> str:
    """A field pattern of `records.py` without its anchors, to embed in the line pattern."""
    return pattern.removeprefix("^").removesuffix("$")


def _optional(pattern: str) -> str:
    """`(?:pattern)?`, spelt as an alternative with nothing: it matches the same, and `re` runs an
    alternative with fewer steps than a repeat (a fifth fewer over a whole line)."""
    return f"(?:{pattern}|)"


_ASCII_TEXT = r"[ !#-\[\]-~]"  # printable ASCII but `"` and `\`: a JSON string's characters needing no escape
_INT = r"(0|[1-9][0-9]{0,17})"  # non-negative, and small enough for SQLite's 64-bit integers
_NUMBER = r"((?:0|[1-9][0-9]{0,15})" + _optional(r"\.[0-9]{1,17}") + _optional("[eE][+-]?[0-9]{1,2}") + ")"
_SHAPE_ENTRY = '"' + _ASCII_TEXT + '*":"(?:' + "|".join(get_args(ArgType)) + ')"'
_CANONICAL_TEXT = (
    r'\{"version":1'
    + f',"event_id":"({_bare(UUID_PATTERN)})"'
    + f',"session":"({_bare(SESSION_PATTERN)})"'
    + f',"seq":{_INT}'
    + r',"at":"(([0-9]{4}-[0-9]{2}-[0-9]{2})T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]'
    + _optional(r"\.[0-9]{6}")
    + 'Z)"'
    + f',"server":"({_ASCII_TEXT}{{1,{_NAME_MAX}}})"'
    + f',"tool":"({_ASCII_TEXT}{{1,{_NAME_MAX}}})"'
    + _optional(f',"template_id":"({_bare(TEMPLATE_ID_PATTERN)})"')
    + r',"arg_shape":(\{'
    + _optional(f"{_SHAPE_ENTRY}(?:,{_SHAPE_ENTRY})*")
    + r"\})"
    + f',"outcome":"({"|".join(get_args(Outcome))})"'
    + _optional(f',"err_code":"({_bare(ERR_CODE_PATTERN)})"')
    + _optional(',"retryable":(true|false)')
    + _optional(f',"latency_ms":{_NUMBER}')
    + f',"request_bytes":{_INT}'
    + _optional(f',"response_bytes":{_INT}')
    + r',"probe":(true|false)\}'
)
"""`CallRecord.to_line`'s spelling of a record, each field's pattern or type inline; the groups are the
row's text.

Only ASCII names and keys (their byte and character counts agree, and need no escapes), a `Z` time with
no or six fraction digits, and numbers within bounds any JSON parser reads exactly as `float`/`int` do."""
_CANONICAL = re.compile(_CANONICAL_TEXT, re.ASCII).fullmatch
_CANONICAL_LINES = re.compile("^" + _CANONICAL_TEXT + "\n", re.ASCII | re.MULTILINE).finditer
"""The canonical lines of a text, each with its newline; a line that does not match is skipped over."""
_BOOL = {"true": 1, "false": 0}
_CACHE_MAX = 1_024
_dates: dict[str, bool] = {}
_shapes: dict[str, str] = {}


def utc_text(at: datetime) -> str:
    """ISO 8601 in UTC, `YYYY-MM-DDTHH:MM:SS.ffffffZ`: one spelling, so the `at` column sorts as text."""
    if at.utcoffset() != _ZERO:
        at = at.astimezone(UTC)
    return at.replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def row_of(record: CallRecord, source: str, line: int) -> Row:
    """The `calls` row of a validated record."""
    return (
        record.event_id,
        record.session,
        record.seq,
        utc_text(record.at),
        record.server,
        record.tool,
        record.template_id,
        orjson.dumps(record.arg_shape, option=orjson.OPT_SORT_KEYS).decode(),
        record.outcome,
        record.err_code,
        None if record.retryable is None else int(record.retryable),
        record.latency_ms,
        record.request_bytes,
        record.response_bytes,
        int(record.probe),
        source,
        line,
    )


def fast_row(data: Any, source: str, line: int) -> Row | None:
    """The row of a canonical record, or None to let `CallRecord` decide (see the module docstring)."""
    if type(data) is not dict:
        return None
    keys = data.keys()
    if not (keys <= _FIELDS and _REQUIRED <= keys):
        return None
    get = data.get
    version = get("version", 1)
    event_id, session, seq, at = data["event_id"], data["session"], data["seq"], data["at"]
    outcome, template, code, retryable = (
        data["outcome"],
        get("template_id"),
        get("err_code"),
        get("retryable"),
    )
    latency, request, response = get("latency_ms"), data["request_bytes"], get("response_bytes")
    probe, shape = get("probe", False), get("arg_shape", {})
    server, tool = data["server"], data["tool"]
    if not (
        type(version) is int
        and version == 1
        and type(event_id) is str
        and _UUID(event_id)
        and type(session) is str
        and _SESSION(session)
        and type(seq) is int
        and seq >= 0
        and type(at) is str
        and _AT(at)
        and type(server) is str
        and 0 < len(server) <= _NAME_MAX
        and type(tool) is str
        and 0 < len(tool) <= _NAME_MAX
        and type(outcome) is str
        and outcome in _OUTCOMES
        and (template is None or (type(template) is str and _TEMPLATE(template)))
        and (code is None or (type(code) is str and _ERR_CODE(code)))
        and (retryable is None or type(retryable) is bool)
        and (latency is None or (type(latency) in (int, float) and latency >= 0))
        and type(request) is int
        and request >= 0
        and (response is None or (type(response) is int and response >= 0))
        and type(probe) is bool
        and type(shape) is dict
        and all(type(kind) is str and kind in _ARG_TYPES for kind in shape.values())
    ):
        return None
    if outcome == "error":
        if template is None:
            return None
    elif template is not None or code is not None or retryable is not None:
        return None
    try:
        when = datetime.fromisoformat(at)
    except ValueError:
        return None
    return (
        event_id,
        session,
        seq,
        at if len(at) == _UTC_TEXT_LEN and at[-1] == "Z" else utc_text(when),
        server,
        tool,
        template,
        orjson.dumps(shape, option=orjson.OPT_SORT_KEYS).decode(),
        outcome,
        code,
        None if retryable is None else int(retryable),
        None if latency is None else float(latency),
        request,
        response,
        int(probe),
        source,
        line,
    )


def canonical_row(line: str, source: str, number: int) -> Row | None:
    """The row of a line in `CallRecord.to_line`'s spelling, or None to let `fast_row` decide."""
    match = _CANONICAL(line)
    return None if match is None else _match_row(match, source, number)


def _match_row(match: re.Match[str], source: str, number: int) -> Row | None:
    """`canonical_row` of a line the pattern matched."""
    (event_id, session, seq, at, day, server, tool, template, shape, outcome, code, retryable, latency,
     request, response, probe) = match.groups()  # fmt: skip
    if outcome == "error":
        if template is None:
            return None
    elif template is not None or code is not None or retryable is not None:
        return None
    valid_day = _dates.get(day)
    if valid_day is None:
        valid_day = _remember(_dates, day, _is_date(day))
    if not valid_day:
        return None
    canonical_shape = _shapes.get(shape)
    if canonical_shape is None:
        canonical_shape = _remember(_shapes, shape, _canonical_shape(shape))
    return (
        event_id,
        session,
        int(seq),
        at if len(at) == _UTC_TEXT_LEN else at[:-1] + ".000000Z",
        server,
        tool,
        template,
        canonical_shape,
        outcome,
        code,
        None if retryable is None else _BOOL[retryable],
        None if latency is None else float(latency),
        int(request),
        None if response is None else int(response),
        _BOOL[probe],
        source,
        number,
    )


def _remember(cache: dict[str, Any], key: str, value: Any) -> Any:
    """Store a worked-out value (a thousand at most: dates and shapes repeat across a journal)."""
    if len(cache) >= _CACHE_MAX:
        cache.clear()
    cache[key] = value
    return value


def _is_date(day: str) -> bool:
    """Whether `YYYY-MM-DD` is a calendar date (the line pattern cannot tell 2026-02-30 from 2026-02-28)."""
    try:
        date.fromisoformat(day)
    except ValueError:
        return False
    return True


def _canonical_shape(text: str) -> str:
    """The `arg_shape` column of an argument shape the line pattern matched (it checked every type name).

    orjson keeps the last of repeated keys, as the model does.
    """
    return orjson.dumps(orjson.loads(text), option=orjson.OPT_SORT_KEYS).decode()


def model_row(line: bytes, path: Path, number: int) -> Row:
    """The row of a line `fast_row` left to the model; JournalRejected naming the field when invalid."""
    try:
        record = CallRecord.model_validate_json(line)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        if first["type"] == "json_invalid":
            problem = f"not valid JSON ({first['msg']})"
        else:
            where = format_loc(tuple(first["loc"])) or "(record)"
            problem = f"not a call record (field `{where}`: {first['msg']})"
        raise JournalRejected(path, number, problem) from None
    return row_of(record, path.name, number)


def parse_lines(complete: bytes, path: Path, lines_before: int) -> list[Row]:
    """Rows of the complete lines in `complete` (each ends with a newline); blank lines are skipped.

    Line numbers continue from `lines_before`. A line over MAX_RECORD_BYTES or
    not a valid record stops the parse with JournalRejected.

    The bytes are decoded once, as a whole, and the canonical lines found in
    one scan (`canonical_row` on each); the lines between them go one by one
    through `fast_row` or the model. A line that is not UTF-8 keeps its bytes
    as escapes, matches no fast path, and reaches the model as it was.
    """
    source = path.name
    text = complete.decode("utf-8", "surrogateescape")
    rows: list[Row] = []
    append = rows.append
    number = lines_before
    done = 0  # where the next unread line starts
    for match in _CANONICAL_LINES(text):
        start, end = match.span()
        if start != done:
            number = _other_lines(text[done:start], path, number, append)
        number += 1
        done = end
        if end - start - 1 > MAX_RECORD_BYTES:  # the line is ASCII: characters are bytes
            raise _oversized(path, number, end - start - 1)
        row = _match_row(match, source, number)
        append(row if row is not None else _other_row(text[start : end - 1].encode(), path, number))
    if done != len(text):
        _other_lines(text[done:], path, number, append)
    return rows


def _other_lines(text: str, path: Path, number: int, append: Callable[[Row], None]) -> int:
    """Add the rows of lines outside the canonical spelling; returns the number of the last line."""
    for line in text.split("\n")[:-1]:
        number += 1
        row = _other_row(line.encode("utf-8", "surrogateescape"), path, number)
        if row is not None:
            append(row)
    return number


def _oversized(path: Path, number: int, size: int) -> JournalRejected:
    return JournalRejected(
        path, number, f"the record is {size} bytes, over the {MAX_RECORD_BYTES}-byte limit"
    )


def _other_row(line: bytes, path: Path, number: int) -> Row | None:
    """The row of a line not in the canonical spelling (None for a blank one); JournalRejected if invalid."""
    if len(line) > MAX_RECORD_BYTES:
        raise _oversized(path, number, len(line))
    try:
        row = fast_row(orjson.loads(line), path.name, number)
    except orjson.JSONDecodeError:
        if not line.strip():
            return None
        row = None
    return row if row is not None else model_row(line, path, number)
