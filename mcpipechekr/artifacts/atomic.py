"""The one way the pipeline writes a file: whole or not at all.

Why: doit decides what to rerun from file contents, and every later phase reads
what an earlier one wrote. A half-written JSON file left by a crash, Ctrl-C or
a full disk would either crash the next phase or, worse, be read as a smaller
but valid result. So every artifact is written to a temporary file in the same
folder (same file system, so the rename is atomic), flushed and fsynced, renamed
over the target with ``os.replace``, and the folder is fsynced so the rename
itself survives a power loss. On any exception, KeyboardInterrupt included, the
temporary file is removed and the target keeps its previous content.

Temporary files are named ``.<target>.tmp-<pid>-<random>``: hidden, never equal
to the target's name, and traceable to the process that left them if it was
killed before it could clean up. A process killed with SIGKILL cannot clean
up, so the next write of the same target removes the temporary files of
writers that are gone (``remove_dead_temps``); those of live processes stay,
as they may still be writing.

Append-only journals are the exception to whole-file replacement: ``append_jsonl``
adds one record per line and fsyncs each one; a record counts as written once its
newline is on disk, so readers ignore a trailing line without one.
"""

from __future__ import annotations

import contextlib
import json
import json.decoder
import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, TypeVar

import orjson
from pydantic import BaseModel, ValidationError

from mcpipechekr._util.stops import FULL_DISK_ERRNOS, with_filename

# Re-exported: the writers of artifacts find the temporary files' names here.
from mcpipechekr._util.tempfiles import TMP_MARKER as TMP_MARKER
from mcpipechekr._util.tempfiles import is_temp_file as is_temp_file
from mcpipechekr._util.tempfiles import remove_dead_temps, temp_name_for
from mcpipechekr.errors import UserError

M = TypeVar("M", bound=BaseModel)

MAX_REPORTED_ERRORS = 20

# The stdlib decoder can start at any offset, which is what locating an error needs;
# orjson stays the parser for reading.
_DECODER = json.JSONDecoder()


def fsync_dir(folder: str | Path) -> None:
    """Make a rename or a new entry in ``folder`` durable; a no-op where folders cannot be opened."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # e.g. Windows, where folders cannot be opened this way
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_open(path: str | Path) -> Iterator[IO[bytes]]:
    """Yield a binary handle whose content replaces ``path`` only if the block finishes.

    For writers that stream (large traces, archives); the helpers below use it
    for whole values. The parent folder is created when missing, and the
    temporary files that killed writers of ``path`` left are removed.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_dead_temps(target)
    tmp = target.parent / temp_name_for(target)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except OSError as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if exc.filename is None and exc.errno in FULL_DISK_ERRNOS:  # name the file it could not write
            raise with_filename(exc, target) from exc
        raise
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    fsync_dir(target.parent)


def atomic_write_bytes(path: str | Path, data: bytes) -> Path:
    """Replace ``path`` with ``data`` atomically; returns the path for chaining into doit targets."""
    with atomic_open(path) as handle:
        handle.write(data)
    return Path(path)


def atomic_write_text(path: str | Path, text: str) -> Path:
    """Replace ``path`` with UTF-8 ``text`` atomically (no newline translation, so hashes are stable)."""
    return atomic_write_bytes(path, text.encode("utf-8"))


def dumps_json(value: Any, *, sort_keys: bool = False) -> bytes:
    """The one JSON spelling of artifacts: two-space indent, UTF-8, trailing newline."""
    option = orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS
    if sort_keys:
        option |= orjson.OPT_SORT_KEYS
    return orjson.dumps(value, option=option) + b"\n"


def atomic_write_json(path: str | Path, value: Any, *, sort_keys: bool = False) -> Path:
    """Replace ``path`` with ``value`` as JSON; sort keys for files compared by hash across runs."""
    return atomic_write_bytes(path, dumps_json(value, sort_keys=sort_keys))


def write_model(path: str | Path, model: BaseModel) -> Path:
    """Write an artifact model as JSON, atomically, in field order (the order the docs list)."""
    return atomic_write_bytes(path, dumps_json(model.model_dump(mode="json", by_alias=True)))


def read_model(path: str | Path, model_class: type[M], *, fast: bool = False) -> M:
    """Read and validate an artifact; any problem becomes a UserError naming the file, line and field.

    ``fast`` is ``parse_model``'s: for large artifacts read often (traces).
    """
    source = Path(path)
    label = model_class.__name__
    try:
        raw = source.read_bytes()
    except FileNotFoundError:
        raise UserError(f"{source}: file not found (expected a {label}).") from None
    except OSError as exc:
        raise UserError(f"{source}: cannot read {label}: {exc.strerror or exc}") from None
    return parse_model(source, raw, model_class, fast=fast)


def parse_model(path: str | Path, raw: bytes, model_class: type[M], *, fast: bool = False) -> M:
    """Validate an artifact's bytes, read from ``path``; problems are UserErrors as in ``read_model``.

    With ``fast``, pydantic validates the bytes straight away in JSON mode, where
    it checks `JsonValue` fields natively instead of calling back into Python for
    every value; it also takes NaN, Infinity and integers beyond 64 bits, which
    the plain way refuses as invalid JSON. Bytes that fail it are parsed the
    plain way, for the messages (the line of each bad field, or where the JSON
    breaks).
    """
    source = Path(path)
    label = model_class.__name__
    if fast:
        try:
            return model_class.model_validate_json(raw)
        except ValidationError:
            pass
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise UserError(
            f"{source}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
            f"it should hold a {label}. Fix the file, or delete it and rerun the step that writes it."
        ) from None
    try:
        return model_class.model_validate(value)
    except ValidationError as exc:
        raise UserError(_describe_validation(source, raw, label, exc)) from None


def _describe_validation(source: Path, raw: bytes, label: str, exc: ValidationError) -> str:
    text = raw.decode("utf-8", errors="replace")
    lines = [f"{source}: not a valid {label} ({exc.error_count()} problem(s)):"]
    errors = exc.errors(include_url=False)
    for error in errors[:MAX_REPORTED_ERRORS]:
        loc = error["loc"]
        where = format_loc(loc) or "(top level)"
        line = json_line_of(text, loc)
        got = ""
        if error["type"] != "missing" and "input" in error and not isinstance(error["input"], dict | list):
            shown = orjson.dumps(error["input"], default=str).decode()
            got = f" (got {shown[:80]}{'…' if len(shown) > 80 else ''})"
        at = f"line {line}, " if line else ""
        lines.append(f"  {at}field `{where}`: {error['msg']}{got}")
    if len(errors) > MAX_REPORTED_ERRORS:
        lines.append(f"  ... and {len(errors) - MAX_REPORTED_ERRORS} more")
    lines.append(
        f"Fix these fields (`mcpipechekr schema` writes the JSON Schema of a {label}), "
        "or delete the file and rerun the step that writes it."
    )
    return "\n".join(lines)


def format_loc(loc: tuple[int | str, ...]) -> str:
    """Spell a pydantic error location as a JSON path users can find: ``bugs[0].type``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def json_line_of(text: str, loc: tuple[int | str, ...]) -> int | None:
    """1-based line where the value at ``loc`` starts, or its closest existing parent.

    Parts of ``loc`` that are not keys of the document (pydantic adds the tag of
    a discriminated union, and a missing field has no position) are skipped, so
    the answer is the nearest thing the user can see in the file.
    """
    decoder = _DECODER
    try:
        pos = _skip_ws(text, 0)
        for part in loc:
            if pos >= len(text):
                break
            opener = text[pos]
            if opener == "{" and isinstance(part, str):
                found = _find_member(text, pos, part, decoder)
            elif opener == "[" and isinstance(part, int):
                found = _find_item(text, pos, part, decoder)
            else:
                found = None
            if found is not None:
                pos = found
        return text.count("\n", 0, pos) + 1
    except (ValueError, IndexError):
        return None


def _skip_ws(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


def _find_member(text: str, pos: int, key: str, decoder: json.JSONDecoder) -> int | None:
    pos = _skip_ws(text, pos + 1)
    while pos < len(text) and text[pos] != "}":
        name, pos = json.decoder.scanstring(text, pos + 1)
        pos = _skip_ws(text, pos)
        pos = _skip_ws(text, pos + 1)  # the colon
        if name == key:
            return pos
        _, pos = decoder.raw_decode(text, pos)
        pos = _skip_ws(text, pos)
        if pos < len(text) and text[pos] == ",":
            pos = _skip_ws(text, pos + 1)
    return None


def _find_item(text: str, pos: int, index: int, decoder: json.JSONDecoder) -> int | None:
    pos = _skip_ws(text, pos + 1)
    current = 0
    while pos < len(text) and text[pos] != "]":
        if current == index:
            return pos
        _, pos = decoder.raw_decode(text, pos)
        pos = _skip_ws(text, pos)
        if pos < len(text) and text[pos] == ",":
            pos = _skip_ws(text, pos + 1)
        current += 1
    return None


def append_jsonl(path: str | Path, record: Any) -> None:
    """Append one JSON record as one line and fsync it, for journals that must survive a crash.

    If an earlier writer died mid-record (no trailing newline), that torn tail is
    cut off first: it was never committed, and appending after it would corrupt
    the new record too.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    line = orjson.dumps(record, option=orjson.OPT_NON_STR_KEYS) + b"\n"
    created = not target.exists()
    fd = os.open(target, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            os.ftruncate(fd, _last_newline_end(fd, size))
        view = memoryview(line)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fsync(fd)
    finally:
        os.close(fd)
    if created:
        fsync_dir(target.parent)


def _last_newline_end(fd: int, size: int) -> int:
    """Offset just past the last newline in the file (0 if none), scanning backwards in blocks."""
    block = 1 << 16
    end = size
    while end > 0:
        start = max(0, end - block)
        chunk = os.pread(fd, end - start, start)
        at = chunk.rfind(b"\n")
        if at >= 0:
            return start + at + 1
        end = start
    return 0


def read_jsonl(path: str | Path) -> list[Any]:
    """Read a journal written by ``append_jsonl``; a trailing line without newline was never committed.

    A missing file is an empty journal. A malformed complete line is real
    damage and is reported with its line number.
    """
    source = Path(path)
    try:
        raw = source.read_bytes()
    except FileNotFoundError:
        return []
    lines = raw.split(b"\n")
    complete = lines[:-1]  # the last element is b"" or an uncommitted partial record
    records: list[Any] = []
    for number, line in enumerate(complete, start=1):
        if not line.strip():
            continue
        try:
            records.append(orjson.loads(line))
        except orjson.JSONDecodeError as exc:
            raise UserError(
                f"{source}: line {number} is not valid JSON ({exc.msg}); "
                "the journal is damaged: remove that line or the file."
            ) from None
    return records
