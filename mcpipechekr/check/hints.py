"""Values a tool's own words give: its descriptions, and the errors it refuses a guess with.

Why: a published server says what it accepts in plain sight. A parameter's
description reads `e.g. "SELECT * FROM users"`, `such as 'main'`,
`one of daily, weekly, monthly` or `format: DD/MM/YYYY`; a FastMCP tool's
docstring, its description, says `Args: day: the day, e.g. 2024-03-15`; and a
refusal says what would do: "Only SELECT queries are allowed", "period must be
one of: daily, weekly, monthly", "must match ^INV-\\d{4}$", "invalid date,
expected YYYY-MM-DD", "no such table: a". Argument synthesis
(check/synthesis.py) offers the values of descriptions among a parameter's
candidates, types them by its schema, and tries a refusal's values next.

Every rule reads the general vocabulary of descriptions and error messages
(examples, lists of allowed values, formats, patterns, SQL's own keywords,
"no such", "not found"), never the words of one server.

Limits: English text only. A list of allowed values is read from the sentence
that announces it, up to a full stop, a semicolon or the end of the line, and
unquoted only when it has two items or more (or follows "one of"). A pattern is
taken when quoted or when it starts with `^`; a string is generated only for
simple regular expressions (literals, classes, repeats, groups; a
back-reference gives up) and is checked against the pattern. A date or time
template (`YYYY-MM-DD`, `DD/MM/YYYY`, `%Y%m%d`, "ISO 8601") is rendered for
2020-01-15 12:00:00. A query built for a SQL parameter is a `SELECT` over a
table another tool listed, or `SELECT 1`.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from mcpipechekr.check.sources import ValuePool, words

try:  # the parser behind `re`, to generate a string matching a simple pattern
    from re import _parser as sre_parse  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - Python < 3.11
    import sre_parse  # type: ignore[no-redef]

QUOTED = re.compile(
    r"""(?:e\.g\.|for example|for instance|example|such as|like)[^'"`]{0,20}"""
    r"""((?:['"`][^'"`\n]{1,80}['"`][\s,or]*)+)""",
    re.IGNORECASE,
)
QUOTED_VALUE = re.compile(r"""['"`]([^'"`\n]{1,80})['"`]""")
QUOTED_WORD = re.compile(r"[A-Za-z0-9_.:/-]{1,40}")
UNQUOTED_EXAMPLE = re.compile(
    r"""(?:\be\.g\.|\bfor example|\bfor instance|\bsuch as)[,:]?\s+([^\s'"`,;()\[\]]{1,80})""", re.IGNORECASE
)
NOT_A_VALUE = {"a", "an", "the", "this", "that", "its", "your", "their", "any", "some", "when", "if", "to"}
"""Words that follow "e.g." in prose rather than a value (`such as the name of a file`)."""

ALLOWED = re.compile(
    r"(?:(?:must|should|can only|may only) be|expected|expecting"
    r"|valid (?:values|options|choices)(?: are| is)?"
    r"|allowed(?: values)?(?: are| is)?|accepted values(?: are)?|possible values(?: are)?"
    r"|supported (?:values|options)(?: are)?|choose from|options are|available(?: [a-z]+)?(?: are| is)?"
    r"|values are|values:)(?:\s+(?:one\s+)?of)?"
    r"|\bone of\b|\beither\b",
    re.IGNORECASE,
)
"""What announces a list of allowed values, in a description or an error."""
SENTENCE_END = re.compile(
    r"(?<=\S)\.(?=\s|$)|;|\n|,?\s+(?:got|received|but|instead|not)\b|\((?:got|received)\b", re.IGNORECASE
)
LIST_SEPARATOR = re.compile(r",|\||\s+or\s+|\s+and\s+")
BARE_ITEM = re.compile(r"[\w.:@+-]{1,40}")

DATE_TOKEN = r"(?:YYYY|yyyy|YY|yy|MM|mm|DD|dd|HH|hh|SS|ss)"
DATE_TEMPLATE = re.compile(
    rf"(?<![A-Za-z]){DATE_TOKEN}(?:(?:[-/:. ]|T)?{DATE_TOKEN})+(?:Z|[+-]HH:?MM)?(?![A-Za-z])"
)
STRFTIME = re.compile(r"%[YmdHMSyjbBaAz](?:[-/:. T]?%[YmdHMSyjbBaAz])+")
ISO_8601 = re.compile(r"\bISO[- ]?8601\b|\bISO (?:date|format)\b", re.IGNORECASE)
DATE_TIME_WORDS = re.compile(r"date[- ]?time|timestamp|\btime\b", re.IGNORECASE)
WHEN = dt.datetime(2020, 1, 15, 12, 0, 0)
"""The moment a date or time template is rendered for."""

PATTERN_IN_TEXT = re.compile(
    r"(?:match(?:es|ing)?|pattern|regex|regular expression)\s*(?:the\s+)?"
    r"(?:pattern|regex|regular expression|format)?\s*[:=]?\s*"
    r"""(?:(['"`/])(?P<quoted>[^\n]+?)\1|(?P<bare>\^\S+))""",
    re.IGNORECASE,
)

SQL_NAME = re.compile(r"^(?:sql|statement|stmt)$|^sql_|_sql$|sql_?query|query_?sql", re.IGNORECASE)
SQL_WORDS = re.compile(
    r"\bSQL\b|(?-i:\bSELECT\b)|\bdatabase\b|\btables?\b|\bquery language\b|\bSQLite\b|\bPostgres",
    re.IGNORECASE,
)
SQL_REFUSAL = re.compile(
    r"\bSQL\b|(?-i:\bSELECT\b)|\bselect (?:quer|statement)|\bsyntax error\b|\bread[- ]only quer"
    r"|\bquer(?:y|ies) (?:must|should) (?:start|begin)",
    re.IGNORECASE,
)
"""An error that speaks of SQL: a statement is wanted (SELECT in capitals, or SQL, or a syntax error)."""
SQL_TEXT = re.compile(r"\bSQL\b|(?-i:\bSELECT\b)", re.IGNORECASE)
"""A description that says the parameter takes SQL."""
SQL_STATEMENT = re.compile(r"^\s*(?:SELECT|WITH|SHOW|EXPLAIN|DESCRIBE|PRAGMA|INSERT|UPDATE|DELETE)\b", re.I)
SIMPLE_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
NO_SUCH = re.compile(
    r"\bno such (?P<a>[a-z]+)|\bunknown (?P<b>[a-z]+)|\b(?P<c>[a-z]+)\b[^.\n]{0,60}?"
    r"\b(?:not found|does not exist|doesn't exist|not exist|is not (?:a )?known)",
    re.IGNORECASE,
)
"""An error that says the value names nothing the server has, and what kind of thing it is."""
NOT_A_THING = {"value", "argument", "parameter", "input", "error", "option", "it", "that", "this", "the"}
LISTED_PER_HINT = 3


# --- descriptions -------------------------------------------------------------------------------


def tool_text_for(name: str, tool_description: str | None, only_parameter: bool) -> str:
    """What a tool's description says about one parameter: its whole text for a tool with one parameter,
    else the lines that start with the parameter's name (a docstring's `Args:` section, a `- name:` list).
    """
    text = tool_description or ""
    if only_parameter:
        return text
    line = re.compile(
        rf"^\s*[-*]?\s*`?{re.escape(name)}`?\s*(?:\([^)\n]*\))?\s*[:=—–-]\s*(.+)$", re.MULTILINE
    )
    return "\n".join(match.group(1) for match in line.finditer(text))


def described_values(text: str) -> list[str]:
    """The values a description gives, most telling first, as text (the caller types them).

    Quoted or backticked examples after "e.g.", "for example" or "such as"; an
    unquoted one (`e.g. 2024-03-15`); the items of a list of allowed values
    (`one of daily, weekly, monthly`); a date or time template rendered
    (`format: DD/MM/YYYY` → `15/01/2020`); a string matching a pattern the text
    quotes; then any other single word it quotes (`'local'`, `'remote'`: an enum
    the schema does not declare).
    """
    if not text:
        return []
    out: list[str] = []
    for match in QUOTED.finditer(text):
        out.extend(QUOTED_VALUE.findall(match.group(1)))
    for match in UNQUOTED_EXAMPLE.finditer(text):
        value = match.group(1).rstrip(".:")
        if value and value.lower() not in NOT_A_VALUE:
            out.append(value)
    out += allowed_values(text)
    out += dates_in(text)
    out += patterns_in(text)
    out += [value for value in QUOTED_VALUE.findall(text) if QUOTED_WORD.fullmatch(value)]
    return list(dict.fromkeys(out))[:8]


def allowed_values(text: str, exclude: object = None) -> list[str]:
    """The items of each list of allowed values the text announces (quoted items, else bare words)."""
    out: list[str] = []
    for match in ALLOWED.finditer(text):
        rest = text[match.end() : match.end() + 400].lstrip(" :=[({")
        end = SENTENCE_END.search(rest)
        sentence = rest[: end.start()] if end else rest
        quoted = QUOTED_VALUE.findall(sentence)
        if quoted:
            items = [item for item in quoted if QUOTED_WORD.fullmatch(item) or len(item) <= 40]
        else:
            items = [piece.strip(" []{}()'\"`:") for piece in LIST_SEPARATOR.split(sentence)]
            items = [i for i in items if BARE_ITEM.fullmatch(i) and not DATE_TEMPLATE.fullmatch(i)]
            items = [item for item in items if item.lower() not in NOT_A_VALUE]
            if len(items) < 2 and "one of" not in match.group(0).lower():
                continue
        out += [item for item in items if item != exclude]
    return list(dict.fromkeys(out))


def dates_in(text: str) -> list[str]:
    """A date or time for each template the text writes (`YYYY-MM-DD`, `DD/MM/YYYY`, `%Y%m%d`, ISO 8601)."""
    out = [_render(match.group(0)) for match in DATE_TEMPLATE.finditer(text)]
    for match in STRFTIME.finditer(text):
        try:
            out.append(WHEN.strftime(match.group(0)))
        except ValueError:
            continue
    if ISO_8601.search(text):
        out.append("2020-01-15T12:00:00Z" if DATE_TIME_WORDS.search(text) else "2020-01-15")
    return [value for value in dict.fromkeys(out) if value]


def _render(template: str) -> str:
    """`DD/MM/YYYY` → `15/01/2020`; an `MM` after an hour is minutes. '' for a template of no date or time."""
    upper = template.upper()
    tokens = re.findall(r"YYYY|YY|MM|DD|HH|SS", upper)
    if not ("YYYY" in tokens or "HH" in tokens or ("MM" in tokens and "DD" in tokens)):
        return ""
    seen_hour = False

    def fill(match: re.Match[str]) -> str:
        nonlocal seen_hour
        token = match.group(0)
        if token == "HH":
            seen_hour = True
        return {
            "YYYY": "2020",
            "YY": "20",
            "DD": "15",
            "HH": "12",
            "SS": "00",
            "MM": "00" if seen_hour else "01",
        }[token]

    return re.sub(r"YYYY|YY|MM|DD|HH|SS", fill, upper)


def patterns_in(text: str) -> list[str]:
    """A string for each regular expression the text quotes after "match" or "pattern", if one can be made."""
    out = []
    for match in PATTERN_IN_TEXT.finditer(text):
        pattern = match.group("quoted") or (match.group("bare") or "").rstrip(".,;)")
        generated = generate_matching(pattern) if pattern else None
        if generated is not None:
            out.append(generated)
    return out


# --- SQL ----------------------------------------------------------------------------------------


def sql_like(name: str, text: str) -> bool:
    """Whether a string parameter takes a SQL statement: named so (`sql`, `statement`), described so
    (SQL, a SELECT), or a `query` whose description or tool speaks of a database or its tables.
    A `query` alone is a search, and gets no SQL first."""
    if SQL_NAME.search(name) or SQL_TEXT.search(text):
        return True
    return "query" in words(name) and SQL_WORDS.search(text) is not None


def sql_values(pool: ValuePool, refused: object = None) -> list[tuple[str, str]]:
    """`SELECT * FROM <table> LIMIT 1` over tables other tools listed (not one the refused statement
    named), then `SELECT 1`; with source labels."""
    out = []
    for found in pool.listed("table"):
        if isinstance(refused, str) and re.search(rf"(?<![\w.]){re.escape(found.value)}(?![\w.])", refused):
            continue
        out.append((f"SELECT * FROM {_identifier(found.value)} LIMIT 1", f"a table in the {found.source}"))
    return [*out[:LISTED_PER_HINT], ("SELECT 1", "a SQL statement")]


def _identifier(name: str) -> str:
    return name if SIMPLE_IDENTIFIER.fullmatch(name) else '"' + name.replace('"', '""') + '"'


# --- refusals -----------------------------------------------------------------------------------


def refusal_values(text: str, sent: object, sql: bool, pool: ValuePool) -> list[tuple[Any, str]]:
    """Values a refusal's text points to for the parameter that was sent `sent`, with source labels.

    In order: the allowed values it lists; a value matching the pattern it
    quotes; a date in the format it names; for a SQL parameter (or when the
    error speaks of SQL), a SELECT over a listed table; for "no such table X" /
    "item X not found", names of that kind another tool listed. The value that
    was refused is never offered again.
    """
    out: list[tuple[Any, str]] = []
    out += [(value, "the error's allowed values") for value in allowed_values(text, exclude=sent)]
    out += [(value, "the error's pattern") for value in patterns_in(text)]
    out += [(value, "the error's date format") for value in dates_in(text)]
    if not dates_in(text) and re.search(r"\b(?:invalid|bad|wrong|malformed) date\b", text, re.IGNORECASE):
        out.append(("2020-01-15", "the error's date format"))
    sent_sql = isinstance(sent, str) and SQL_STATEMENT.match(sent) is not None
    kind = _missing_kind(text)
    if sql or SQL_REFUSAL.search(text) or (sent_sql and kind == "table"):
        refused = sent if sent_sql else None  # a table a refused statement named is not offered again
        out += [(value, f"the error's SQL hint and {label}") for value, label in sql_values(pool, refused)]
    elif kind:
        listed = [found for found in pool.listed(kind) if found.value != sent][:LISTED_PER_HINT]
        out += [(found.value, found.source) for found in listed]  # the error only said which kind
    return [(value, label) for value, label in out if value != sent]


def _missing_kind(text: str) -> str | None:
    """The kind of thing an error says does not exist (`no such table: a` → `table`), if it says so."""
    for match in NO_SUCH.finditer(text):
        noun = next(group for group in match.groups() if group)
        noun = words(noun)[-1] if words(noun) else ""
        if noun and noun not in NOT_A_THING:
            return noun
    return None


# --- a string for a pattern ---------------------------------------------------------------------


def generate_matching(pattern: str) -> str | None:
    """A string matching a simple regular expression, or None when it cannot make one that does."""
    try:
        parsed = sre_parse.parse(pattern)
        text = _emit(parsed, 0)
    except (re.error, _CannotEmit, RecursionError, TypeError, ValueError, OverflowError):
        return None
    try:
        return text if re.search(pattern, text) else None
    except re.error:
        return None


class _CannotEmit(Exception):
    pass


def _emit(parsed: Any, depth: int) -> str:
    if depth > 20:
        raise _CannotEmit
    out = []
    for op, arg in parsed:
        name = str(op)
        if name == "LITERAL":
            out.append(chr(arg))
        elif name == "NOT_LITERAL":
            out.append("a" if chr(arg) != "a" else "b")
        elif name == "ANY":
            out.append("a")
        elif name == "IN":
            out.append(_emit_class(arg))
        elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            low, _high, item = arg
            out.append(_emit(item, depth + 1) * max(low, 1 if low == 0 and _high else low))
        elif name == "SUBPATTERN":
            out.append(_emit(arg[-1], depth + 1))
        elif name == "BRANCH":
            out.append(_emit(arg[1][0], depth + 1))
        elif name in ("AT", "ASSERT", "ASSERT_NOT"):
            continue
        elif name == "CATEGORY":
            out.append(_category(arg))
        else:
            raise _CannotEmit(name)
    return "".join(out)


def _category(arg: Any) -> str:
    name = str(arg)
    if "NOT_DIGIT" in name:
        return "a"
    if "DIGIT" in name:
        return "1"
    if "NOT_SPACE" in name or "NOT_WORD" in name and "SPACE" not in name:
        return "a" if "NOT_SPACE" in name else "-"
    if "SPACE" in name:
        return " "
    return "a"


def _emit_class(items: Any) -> str:
    if items and str(items[0][0]) == "NEGATE":
        excluded = {chr(arg) for op, arg in items[1:] if str(op) == "LITERAL"}
        return next(ch for ch in "a1-_xZ" if ch not in excluded)
    for op, arg in items:
        name = str(op)
        if name == "LITERAL":
            return chr(arg)
        if name == "RANGE":
            return chr(arg[0])
        if name == "CATEGORY":
            return _category(arg)
    raise _CannotEmit("empty class")
