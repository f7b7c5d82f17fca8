"""When does a value "appear" in text the agent wrote? One rule, shared by correctness and unread fields.

The agent rarely copies a value byte for byte: it writes `May 14, 2013` for
`2013-05-14T10:02:11`, `3,800` for `3800`, `Heating Service Quote` for
`Heating service quote`. So both sides are normalised before comparing:

- text is lowercased, punctuation becomes spaces, whitespace is collapsed;
  a value appears when its normalised form is a whole-word substring of the
  normalised text;
- numbers are whole tokens; thousands separators in the text are removed
  first (`3,800` → `3800`), so `38` does not appear in `3800`; a decimal's
  trailing zeros go too (`12.0` and `12.00` → `12`, `12.50` → `12.5`), so a
  price a server returns as `12.0` is the answer `12`;
- dates and date-times are reduced to their day (`2013-05-14`); the text's
  dates are read in ISO form and in the common English forms (`14 May 2013`,
  `May 14, 2013`, `May 14 2013`, `14/05/2013` is NOT read: it is ambiguous);
- a long string (over 60 characters, e.g. a snippet or body) appears when any
  run of 6 consecutive words of it does: an agent quotes, it does not copy;
- values shorter than 3 characters (`0`, `7`, `ok`) cannot be told apart from
  noise and count as appearing.
"""

from __future__ import annotations

import re
import string
import sys
from dataclasses import dataclass, field
from datetime import date
from functools import cached_property, lru_cache
from typing import Any

_MONTHS = {
    name: number
    for number, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
_ISO_DAY = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})(?:[T ][\d:.]+(?:Z|[+-]\d{2}:?\d{2})?)?\b")
_DAY_MONTH_YEAR = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+({_MONTH})\.?,?\s+(\d{{4}})\b", re.I)
_MONTH_DAY_YEAR = re.compile(rf"\b({_MONTH})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", re.I)
_EDGES = re.compile(r"(?<!\S)[.+-]+|[.+-]+(?!\S)")
_YEAR = re.compile(r"\d{4}")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")
_WHOLE_DECIMAL = re.compile(r"(?<![\d.])(\d+)\.0+(?!\d|\.\d)")
_TRAILING_ZEROS = re.compile(r"(?<![\d.])(\d+\.\d*[1-9])0+(?!\d|\.\d)")
_PUNCTUATION = str.maketrans(
    {
        char: " "
        for char in string.punctuation + "\u2018\u2019\u201c\u201d\u2013\u2014\u2026\u00ab\u00bb\u2022"
        if char not in "@.+-_"
    }  # fmt: skip
)
LONG_VALUE = 60
QUOTE_WORDS = 6
MIN_LENGTH = 3


def normalise(text: str) -> str:
    """Lowercase, thousands separators dropped, punctuation to spaces, whitespace collapsed.

    `.`, `+`, `-` and `@` stay inside words (`fts.rank`, `a@b.com`, `2013-05-14`) and go at their edges.
    """
    text = text.lower()
    if "," in text:
        text = _THOUSANDS.sub("", text)
    if "." in text:
        text = _TRAILING_ZEROS.sub(r"\1", _WHOLE_DECIMAL.sub(r"\1", text))
    text = text.translate(_PUNCTUATION)
    if "." in text or "+" in text or "-" in text:
        text = _EDGES.sub(" ", text)
    return " ".join(text.split())


def _day(year: str, month: int, day: str) -> str | None:
    try:
        return date(int(year), month, int(day)).isoformat()
    except ValueError:
        return None


def dates_in(text: str) -> set[str]:
    """Every day written in the text, as YYYY-MM-DD."""
    found: set[str] = set()
    if not _YEAR.search(text):
        return found  # every form needs a four-digit year
    for match in _ISO_DAY.finditer(text):
        day = _day(match[1], int(match[2]), match[3])
        if day:
            found.add(day)
    for match in _DAY_MONTH_YEAR.finditer(text):
        day = _day(match[3], _MONTHS[match[2].lower()], match[1])
        if day:
            found.add(day)
    for match in _MONTH_DAY_YEAR.finditer(text):
        day = _day(match[3], _MONTHS[match[1].lower()], match[2])
        if day:
            found.add(day)
    return found


@lru_cache(maxsize=16384)
def prepare(text: str) -> tuple[str, frozenset[str]]:
    """A text's normalised form and days, for `Haystack.prepared`.

    Cached: the repetitions of a task send the same arguments and often say the same things.
    """
    return normalise(text), frozenset(dates_in(text))


@lru_cache(maxsize=65536)
def as_day(value: str) -> str | None:
    """The day of an ISO date or date-time string, else None."""
    return _day_of(value)


def _day_of(value: str) -> str | None:
    match = _ISO_DAY.fullmatch(value.strip())
    return _day(match[1], int(match[2]), match[3]) if match else None


@dataclass
class Haystack:
    """Text the agent wrote, prepared once for many look-ups.

    Built from several pieces (`prepared`), it remembers where each piece
    starts, so one haystack answers "does it appear after step N?" for every
    N (`contains(value, since=offset)`): a trace is normalised once, not once
    per tool call.
    """

    texts: list[str] = field(default_factory=list)

    @classmethod
    def prepared(cls, pieces: list[tuple[str, frozenset[str]]]) -> Haystack:
        """From texts already normalised, with their days (see `prepare`): no text is parsed twice."""
        haystack = cls()
        parts, offsets, days = [" "], [], {}
        position = 1
        for text, piece_days in pieces:
            offsets.append(position)
            for day in piece_days:
                days[day] = position
            parts.append(text + " ")
            position += len(text) + 1
        haystack.__dict__["normalised"] = "".join(parts)
        haystack.__dict__["last_day"] = days
        haystack.offsets = offsets
        return haystack

    @cached_property
    def normalised(self) -> str:
        return " " + " ".join(normalise(text) for text in self.texts) + " "

    @cached_property
    def words(self) -> frozenset[str]:
        return frozenset(self.normalised.split())

    @cached_property
    def last_day(self) -> dict[str, int]:
        """Each day written in the text, with where it last appears (0 when built from plain texts)."""
        found: dict[str, int] = {}
        for text in self.texts:
            for day in dates_in(text):
                found[day] = 0
        return found

    def contains(self, value: Any, *, strict: bool = False, since: int = 0) -> bool:
        """Whether a scalar value appears in the text at or after position `since`, by the module's rule.

        `strict` looks for short values too (as whole words): right for an expected answer such as
        a count of 7, wrong for guessing whether a field was read.
        """
        return self.last_seen(value, strict=strict) >= since

    def last_seen(self, value: Any, *, strict: bool = False) -> int:
        """Where a value last appears, by the module's rule: `contains(value, since=s)` iff `>= s`.

        `ALWAYS` for values that count as appearing anywhere, `NEVER` for one that does not appear.
        One look-up answers `contains` for every `since`, so a value seen in many results is
        searched for once.
        """
        if value is None or isinstance(value, bool):
            return ALWAYS
        short, needle, day, words = _pattern(value if isinstance(value, str) else str(value))
        if short and not strict:
            return ALWAYS
        haystack = self.normalised
        if day is not None:
            return max(self.last_day.get(day, NEVER), _start(haystack.rfind(needle)))
        if not needle:
            return ALWAYS
        last = _start(haystack.rfind(needle))
        if words is not None:
            known = self.words
            if sum(map(known.__contains__, words)) < min(QUOTE_WORDS, len(words)):
                return last  # fewer of its words in the text than any quote of it needs
            for start in range(0, max(1, len(words) - QUOTE_WORDS + 1)):
                run = words[start : start + QUOTE_WORDS]
                if all(map(known.__contains__, run)):
                    last = max(last, _start(haystack.rfind(f" {' '.join(run)} ")))
        return last


ALWAYS = sys.maxsize
"""`last_seen` of a value that counts as appearing everywhere (too short to tell, or empty)."""
NEVER = -1
"""`last_seen` of a value that does not appear."""


def _start(found: int) -> int:
    """Where a match found by `rfind(" needle ")` starts (after its leading space), or NEVER."""
    return found + 1 if found >= 0 else NEVER


@lru_cache(maxsize=65536)
def _pattern(text: str) -> tuple[bool, str, str | None, tuple[str, ...] | None]:
    """What `last_seen` looks for, worked out once per value text.

    (too short to tell, ` needle ` or "" when nothing is left of it, its day if it is an ISO date,
    its words if it is long enough to be quoted in part). No number's text reads as an ISO date,
    so the day applies to strings only, as the rule says.
    """
    needle = normalise(text)
    return (
        len(text.strip()) < MIN_LENGTH,
        f" {needle} " if needle else "",
        _day_of(text),
        tuple(needle.split(" ")) if len(text) > LONG_VALUE else None,
    )
