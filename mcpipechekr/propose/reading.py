"""Reading a tool's result as records, whether it is JSON or text.

Why: a proposed task asks about the server's content, and half the published
servers answer in text: a git log, a directory listing, a markdown note, a
CSV file, JSON printed into a text block. Templates need records (mappings of
field to value) to ask about, so every result is read into `Table`s (several
records of one kind: the commits of a log, the entries of a folder) and at
most one `single` record (a fetched item, a note's header, a file's details).

What is read, in order:

- JSON: structuredContent, or a text block that parses as JSON; a
  structuredContent that only wraps one string (`{"content": "..."}`) is read
  as that text, and so is a field of several lines that reads as records (a
  commit's `content`: its header's fields join the record's). Every list of
  mappings at the top or one key down is a table
  (`{"entities": [...], "relations": [...]}` gives two); a mapping with scalar
  fields is the single record.
- Blocks of `Key: value` lines separated by blank lines, two or more blocks
  whose first key is the same (`Commit: …` / `Author: …`): one record each.
- One block of `Key: value` lines (`size: 27` / `modified: …`): the single record.
- Markdown: the first `# Heading` is the record's `title`; `key: value` lines
  are its fields; the bullet items under a `## Heading` are a list field.
- CSV: a header and rows with as many commas: one record per row.
- Lines: two or more short lines after an optional `Header:` line, each one
  an item (`[FILE] name   27 B` gives a type, a name and a size; `Title
  (slug)` gives a name and an id); `Key: value` lines after them (`Total: 2`)
  are a summary, not items.

Nothing here knows a server: the rules are about the layout of text. Prose
(a fetched web page, a paragraph) gives no records, and no task.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import mcp_types
import orjson

MAX_TEXT = 200_000
"""Longest text block read; a larger one is prose or a dump, not records."""
KV = re.compile(r"^\s*([A-Za-z][A-Za-z0-9 _./-]{0,38}?)\s*:\s+(\S.*?)\s*$")
HEADER = re.compile(r"^\s*([A-Za-z0-9][^:]{0,60}):\s*$")
HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
BULLET = re.compile(r"^\s*(?:[-*+\u2022]|\d{1,3}[.)])\s+(.*\S)\s*$")
TAGGED = re.compile(r"^\[([A-Za-z][A-Za-z _-]{0,15})\]\s+(.+?)\s*$")
SIZE = re.compile(r"^(.*?\S)\s{2,}(\d+(?:\.\d+)?\s*(?:[KMGT]i?)?B)$", re.IGNORECASE)
ITEM_START = re.compile(r"^(?:[\w\[\"'/~]|[-*+\u2022]\s)")
LABELLED = re.compile(r"^([a-z]{2,20})\s+([0-9a-f]{7,64})$")
PARENTHESISED = re.compile(r"^(.*?\S)\s+\(([^()\s]{1,80})\)$")
BINARY = re.compile(r"[\x00-\x08\x0e-\x1f\ufffd]")
"""Control characters or replaced bytes: a binary file read as text."""
EMAIL = re.compile(r"^(.*?)\s*<([^<>@\s]+@[^<>\s]+)>$")
MAX_ITEM = 160
"""Longest line read as a list item: a longer line is prose."""
NUMBER = re.compile(r"^-?\d+(?:\.\d+)?$")
UNITS = {"b": 1, "kb": 1e3, "kib": 1024, "mb": 1e6, "mib": 1024**2, "gb": 1e9, "gib": 1024**3}


@dataclass
class Table:
    """Records of one kind in one result, where they sit, and whether the result holds all of them."""

    key: str
    """Where in the result: a JSON key (`entities`), `""` for a top-level list, or the text's header."""
    records: list[dict[str, Any]]
    complete: bool = True
    """False when the result says there is more: another page, a larger total."""
    label: str = ""
    """A noun the result gives the records (`commit` for `Commit: …` blocks), if any."""
    kind_field: str | None = None
    """Set on a part of a table: the field its records share one value of (`type`), to find them again."""


@dataclass
class Reading:
    """A result read as records; `text` is the text it was read from (None for JSON)."""

    tables: list[Table] = field(default_factory=list)
    single: dict[str, Any] | None = None
    text: str | None = None
    json: Any = None
    summary: bool = False
    """The single record sums up the tables (`Total: 2 files`): not a record of its own."""

    @property
    def empty(self) -> bool:
        return not self.tables and not self.single


MORE_KEYS = {
    "more",
    "has_more",
    "hasmore",
    "next",
    "next_page",
    "next_cursor",
    "nextcursor",
    "cursor",
    "truncated",
}
COUNT_KEYS = {"count", "total", "total_count", "totalcount", "matches", "hits"}


def result_text(result: mcp_types.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, mcp_types.TextContent))


def read_result(result: mcp_types.CallToolResult) -> Reading:
    """The result as records, by the rules of the module docstring."""
    structured = result.structured_content
    if isinstance(structured, dict) and len(structured) == 1:
        (only,) = structured.values()
        if isinstance(only, str):
            return read_text(only)
    if structured is not None:
        return read_json(structured)
    return read_text(result_text(result))


def read_text(text: str) -> Reading:
    if len(text) > MAX_TEXT or not text.strip() or BINARY.search(text):
        return Reading(text=text)
    stripped = text.strip()
    if stripped[:1] in "[{":
        try:
            reading = read_json(orjson.loads(stripped))
        except orjson.JSONDecodeError:
            pass
        else:
            reading.text = text
            return reading
    changed = _diff(text)
    for reader in (_kv_blocks, _markdown, _csv, _lines):
        reading = reader(text)
        if reading is not None and not reading.empty:
            reading.text = text
            if changed is not None and not reading.tables:
                reading.tables.append(changed)
            return reading
    return Reading(tables=[changed] if changed else [], text=text)


def _diff(text: str) -> Table | None:
    """A unified diff's files: one record per file, with the lines it adds and removes."""
    if "\n+++ " not in text or "\n--- " not in text:
        return None
    files: list[dict[str, Any]] = []
    before = None
    for line in text.splitlines():
        if line.startswith("--- "):
            before = line[4:].strip()
        elif line.startswith("+++ ") and before is not None:
            after = line[4:].strip()
            path = before if after == "/dev/null" else after
            files.append({"name": re.sub(r"^[ab]/", "", path), "added lines": 0, "removed lines": 0})
            before = None
        elif files and line.startswith("+"):
            files[-1]["added lines"] += 1
        elif files and line.startswith("-"):
            files[-1]["removed lines"] += 1
    lines = text.splitlines()
    header = lines[0].rstrip(":").strip() if lines and HEADER.match(lines[0]) else ""
    return Table(header, files, label="file") if files else None


def read_json(document: Any) -> Reading:
    reading = Reading(json=document)
    if _records(document):
        reading.tables.append(
            Table("", _tree(document) if _nested(document) else [_flat(r) for r in document])
        )
    elif isinstance(document, dict):
        partial = any(str(k).lower() in MORE_KEYS and v for k, v in document.items())
        totals = [
            v for k, v in document.items() if str(k).lower() in COUNT_KEYS and isinstance(v, int) and v >= 0
        ]
        for key, value in document.items():
            if _records(value):
                more = partial or any(total > len(value) for total in totals)
                reading.tables.append(Table(str(key), [_flat(r) for r in value], complete=not more))
        scalars = {k: v for k, v in document.items() if _scalar(v) or _scalar_list(v)}
        for key, value in list(scalars.items()):  # text inside JSON: a commit's `content`, a note's body
            if isinstance(value, str) and "\n" in value.strip() and len(value) > 40:
                inner = read_text(value)
                if inner.empty:
                    continue
                del scalars[key]
                scalars.update({k: v for k, v in (inner.single or {}).items() if k not in scalars})
                reading.tables += [Table(str(key), t.records, t.complete, t.label) for t in inner.tables]
        if scalars and not reading.tables:
            reading.single = scalars
        elif scalars:  # a total, a page number beside the records: about them, not a record
            reading.single = {k: v for k, v in scalars.items() if not isinstance(v, list)} or None
            reading.summary = True
    return reading


def _nested(records: list[dict[str, Any]]) -> bool:
    return any(_records(r.get("children")) for r in records)


def _tree(records: list[dict[str, Any]], parent: str = "") -> list[dict[str, Any]]:
    """A tree of records (`children` lists, as a folder tree) flattened, each with its `path` from the top."""
    out = []
    for record in records:
        flat = _flat(record)
        name = flat.get("name")
        if isinstance(name, str):
            flat["path"] = f"{parent}/{name}" if parent else name
            if parent:
                flat["folder"] = parent
        out.append(flat)
        children = record.get("children")
        if _records(children):
            out += _tree(children, flat.get("path", parent))
    return out


def _records(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(item, dict) for item in value)


def _flat(record: dict[str, Any]) -> dict[str, Any]:
    """A record's scalars and lists of scalars; a nested mapping's scalars as `outer inner`."""
    out: dict[str, Any] = {}
    for key, value in record.items():
        if _scalar(value) or _scalar_list(value):
            out[str(key)] = value
        elif isinstance(value, dict):
            for inner, item in value.items():
                if _scalar(item):
                    out[f"{key} {inner}"] = item
    return out


def _scalar(value: Any) -> bool:
    return isinstance(value, str | int | float | bool) or value is None


def _scalar_list(value: Any) -> bool:
    return isinstance(value, list) and all(
        isinstance(v, str | int | float) and not isinstance(v, bool) for v in value
    )


# --- text layouts ---------------------------------------------------------------------------------


def _blocks(text: str) -> list[list[str]]:
    blocks, current = [], []
    for line in text.splitlines():
        if line.strip():
            current.append(line)
        elif current:
            blocks.append(current)
            current = []
    if current:
        blocks.append(current)
    return blocks


def _kv(line: str) -> tuple[str, str] | None:
    if BULLET.match(line) or line.lstrip().startswith("#"):
        return None
    match = KV.match(line)
    if match is None or "://" in match[0][: match.end(1) + 3]:
        return None
    return match[1].strip(), match[2]


def _kv_blocks(text: str) -> Reading | None:
    """`Key: value` blocks: several with one first key are a table, one alone is a single record."""
    parsed: list[dict[str, Any]] = []
    header = ""
    for block in _blocks(text):
        lines = block
        if not parsed and HEADER.match(lines[0]) and len(lines) > 1:
            header, lines = HEADER.match(lines[0])[1].strip(), lines[1:]  # type: ignore[index]
        pairs = [_kv(line) for line in lines]
        labelled = LABELLED.match(lines[0])
        if pairs[0] is None and labelled is not None and len(lines) > 2:
            pairs[0] = (labelled[1], labelled[2])  # `commit 4f2a…` above `Author: …` lines
        if all(pair is not None for pair in pairs) and len(pairs) >= 2:
            parsed.append(dict(pair for pair in pairs if pair is not None))
        elif len(lines) == 1 and parsed and _kv(lines[0]) is None:
            parsed[-1].setdefault("text", lines[0].strip())  # a message under its record's fields
        elif len(parsed) == 1:
            break  # a record's header, then its content (a diff, a body): the header is the record
        else:
            return None
    if not parsed:
        return None
    if len(parsed) == 1:
        return Reading(single=_typed(parsed[0]))
    first = {next(iter(record)) for record in parsed}
    if len(first) != 1:
        return None
    (label,) = first
    return Reading(tables=[Table(header or label, [_typed(r) for r in parsed], label=label)])


def _markdown(text: str) -> Reading | None:
    lines = text.splitlines()
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is None:
        return None
    heading = HEADING.match(lines[first])
    if heading is None or len(heading[1]) != 1:
        return None
    record: dict[str, Any] = {"title": heading[2].strip()}
    section = None
    lists: dict[str, list[str]] = {}
    prose: list[str] = []
    for line in lines[first + 1 :]:
        sub = HEADING.match(line)
        if sub is not None:
            section = sub[2].strip()
            continue
        if line.strip() and not BULLET.match(line) and _kv(line) is None:
            prose.append(line.strip())
        bullet = BULLET.match(line)
        if bullet is not None and section is not None:
            item = re.sub(r"^\[[ xX]\]\s*", "", bullet[1]).strip()
            lists.setdefault(section, []).append(item)
            continue
        pair = _kv(line)
        if pair is not None and section is None and pair[0].lower() not in record:
            record[pair[0]] = pair[1]
    for name, items in lists.items():
        if name not in record:
            record[name] = items
    if prose and "text" not in record:
        record["text"] = " ".join(prose)  # the body: searched by its words, never asked for whole
    return Reading(single=_typed(record))


def _csv(text: str) -> Reading | None:
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) < 3 or "," not in lines[0]:
        return None
    width = lines[0].count(",")
    if any(line.count(",") != width for line in lines) or '"' in text:
        return None
    header = [cell.strip() for cell in lines[0].split(",")]
    if not all(re.match(r"^[A-Za-z][\w .-]*$", cell) for cell in header) or len(set(header)) != len(header):
        return None
    rows = [dict(zip(header, (cell.strip() for cell in line.split(",")), strict=True)) for line in lines[1:]]
    return Reading(tables=[Table("", [_typed(row) for row in rows], label="row")])


def _lines(text: str) -> Reading | None:
    """Short lines, one item each, after an optional `Header:` line; `Key: value` lines after them are a
    summary."""
    lines = [line for line in text.splitlines() if line.strip()]
    header = ""
    if lines and HEADER.match(lines[0]):
        header = HEADER.match(lines[0])[1].strip()  # type: ignore[index]
        lines = lines[1:]
    items, summary = [], {}
    for line in lines:
        pair = _kv(line)
        if pair is not None and items and not TAGGED.match(line.strip()):
            summary[pair[0]] = pair[1]
            continue
        item = line.strip()
        if (
            summary
            or len(item) > MAX_ITEM
            or item.endswith((".", "!", "?", ":"))
            or not ITEM_START.match(item)
        ):
            return None  # prose, a header inside, a diff, or items after a summary
        items.append(_item(line))
    if len(items) < (1 if header else 2):
        return None
    prose = sum(1 for item in items if len(item["name"].split()) > 5 or ", " in item["name"])
    if prose * 2 >= len(items):
        return None  # sentences one per line (a status report), not a listing
    return Reading(tables=[Table(header, items)], single=_typed(summary) if summary else None, summary=True)


def _item(line: str) -> dict[str, Any]:
    text = line.strip()
    bullet = BULLET.match(text)
    if bullet is not None:
        text = bullet[1]
    record: dict[str, Any] = {}
    tagged = TAGGED.match(text)
    if tagged is not None:
        record["type"] = tagged[1].strip().lower()
        text = tagged[2]
    sized = SIZE.match(text)
    if sized is not None:
        text, record["size"] = sized[1], sized[2]
    named = PARENTHESISED.match(text)
    if named is not None:
        text, record["id"] = named[1], named[2]
    record["name"] = text.strip()
    return {"name": record.pop("name"), **record}


def _typed(record: dict[str, Any]) -> dict[str, Any]:
    """Numbers written in text read as numbers (`27` → 27), so they can be counted and compared; an
    identifier's digits (`Commit: 5668`) and numbers written with leading zeros stay text."""
    out: dict[str, Any] = {}
    for key, value in record.items():
        mailed = EMAIL.match(value) if isinstance(value, str) else None
        if mailed is not None and mailed[1]:
            out[f"{key} email"] = mailed[2]  # `Ada <ada@example.org>`: the address is a fact of its own
        digits = value.strip() if isinstance(value, str) else ""
        plural = (
            words(key)[-1:] and words(key)[-1].endswith("s") and not words(key)[-1].endswith(("ss", "us"))
        )
        if plural and digits and len(digits) <= 80 and ". " not in digits and "\n" not in digits:
            out[key] = [item.strip() for item in digits.split(",") if item.strip()]  # `tags: a, b`
            continue
        if (
            NUMBER.match(digits)
            and len(digits) < 16
            and not is_id_name(key)
            and not re.match(r"^-?0\d", digits)
        ):
            number = float(value)
            out[key] = int(number) if number.is_integer() and "." not in value else number
        else:
            out[key] = value
    return out


ID_WORDS = {"id", "key", "uuid", "slug", "code", "isbn", "sku", "number", "commit", "sha", "hash", "ref"}


def words(name: str) -> list[str]:
    """`sender_name` → [sender, name]; `recipeId` → [recipe, id]."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return [word.lower() for word in re.split(r"[^A-Za-z0-9]+", spaced) if word]


def is_id_name(name: str) -> bool:
    parts = words(name)
    return bool(parts) and parts[-1] in ID_WORDS


def as_number(value: Any) -> float | None:
    """A value as a number to compare: a number, a numeric string, or a size such as `27 B` or `1.5 KB`."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        match = re.fullmatch(r"\s*(-?\d+(?:\.\d+)?)\s*([KMGT]?i?B)?\s*", value, re.IGNORECASE)
        if match:
            return float(match[1]) * UNITS.get((match[2] or "b").lower(), 1)
    return None
