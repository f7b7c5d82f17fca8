"""Journal lines → `calls` rows, fast for the lines our writers produce, exact for every other line.

`CallRecord` decides what a valid record is. Validating each line through it
costs about half of a full index, though, so lines take a fast path first: a
plain-Python check of the canonical form the writers emit (JSON types exactly
as written, no coercion, a UTC-offset timestamp). It accepts a line only if
the model would accept it too, and yields the same row; anything else (a
string where a number belongs, a missing field, a bad value) goes through the
model, which either accepts it after all or says which field is wrong. The
test suite checks the two agree, record by record, over mutated records.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, get_args

import orjson
from pydantic import ValidationError

from mcpipechekr.artifacts.atomic import format_loc
from mcpipechekr.findings.errors import JournalRejected
from mcpipechekr.findings.records import (
    ERR_CODE_PATTERN,
    MAX_RECORD_BYTES,
    SESSION_PATTERN,
    TEMPLATE_ID_PATTERN,
    UUID_PATTERN,
    ArgType,
    CallRecord,
    Outcome,
)

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
_AT = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,6})?(?:Z|[+-]\d\d:\d\d)").fullmatch
_ARG_TYPES = frozenset(get_args(ArgType))
_OUTCOMES = frozenset(get_args(Outcome))
_NAME_MAX = 200
_UTC_TEXT_LEN = len("2026-01-01T00:00:00.000000Z")


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


def parse_lines(complete: bytes, path: Path, lines_before: int) -> Iterator[Row]:
    """Rows of the complete lines in `complete` (each ends with a newline); blank lines are skipped.

    Line numbers continue from `lines_before`. A line over MAX_RECORD_BYTES or
    not a valid record stops the parse with JournalRejected.
    """
    source = path.name
    loads = orjson.loads
    number = lines_before
    for line in complete.split(b"\n")[:-1]:
        number += 1
        if len(line) > MAX_RECORD_BYTES:
            raise JournalRejected(
                path, number, f"the record is {len(line)} bytes, over the {MAX_RECORD_BYTES}-byte limit"
            )
        try:
            row = fast_row(loads(line), source, number)
        except orjson.JSONDecodeError:
            if not line.strip():
                continue
            row = None
        yield row if row is not None else model_row(line, path, number)
