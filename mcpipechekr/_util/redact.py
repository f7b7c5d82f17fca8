"""Replacing secret values in what is written: the one redactor (`config.Config.redactor` builds it).

It lives apart from `config` so that processes which only need to redact, such
as the stdio capture proxy that every Phase 1 attempt launches, start without
importing the configuration models (pydantic, YAML): a few milliseconds
instead of a few hundred on a slow machine.

A secret reaches a file not only as itself: a server echoes it inside a JSON
document (`"` and `\\` escaped), in a URL (percent-escaped) or in a shell
command line (quoted). Each secret is therefore matched in all of these forms
(`secret_forms`), built once when the redactor is made, and every form is
replaced by the secret's replacement.
"""

from __future__ import annotations

import json
import shlex
from typing import TypeVar
from urllib.parse import quote, quote_plus

T = TypeVar("T")


def secret_forms(secret: str) -> list[str]:
    """The secret as written raw, JSON-escaped (ASCII-only and not), URL-escaped and shell-quoted.

    Distinct forms only, the raw one first.
    """
    forms = [
        secret,
        json.dumps(secret)[1:-1],
        json.dumps(secret, ensure_ascii=False)[1:-1],
        quote(secret, safe=""),
        quote_plus(secret),
        shlex.quote(secret),
    ]
    return list(dict.fromkeys(forms))


class Redactor:
    """Replaces secret values in text or JSON-like data before it is written anywhere.

    Secrets shorter than `min_length` characters are left alone: a value such as
    `1`, `info` or a port number would match all over unrelated text (a tool
    result, a model's answer) and corrupt it without protecting anything. Where
    the structure is known, whole strings of any length down to
    `exact_min_length` are still replaced (the recorded config does this).
    Every secret is matched in each of its `secret_forms`; the length limits
    apply to the raw secret.
    """

    MIN_LENGTH = 6

    def __init__(
        self,
        replacements: list[tuple[str, str]] | None = None,
        *,
        min_length: int = MIN_LENGTH,
        exact_min_length: int | None = None,
    ):
        exact_min = min_length if exact_min_length is None else exact_min_length
        unique = {value: replacement for value, replacement in (replacements or []) if value}
        self._exact = {
            form: repl
            for value, repl in unique.items()
            if len(value) >= exact_min
            for form in secret_forms(value)
        }
        embedded: dict[str, str] = {}
        for value, repl in unique.items():
            if len(value) >= min_length:
                for form in secret_forms(value):
                    embedded.setdefault(form, repl)
        # Longest first, so a secret that contains another is replaced whole.
        self._embedded = sorted(embedded.items(), key=lambda pair: -len(pair[0]))

    @property
    def longest(self) -> int:
        """Length of the longest form matched inside text: how much a stream must hold back to match it."""
        return max((len(form) for form, _ in self._embedded), default=0)

    def redact(self, value: T) -> T:
        """The same value with every secret replaced: strings, and strings inside dicts/lists/tuples."""
        if isinstance(value, str):
            if value in self._exact:
                return self._exact[value]  # type: ignore[return-value]
            for secret, replacement in self._embedded:
                if secret in value:
                    value = value.replace(secret, replacement)  # type: ignore[assignment]
            return value
        if isinstance(value, dict):
            return {self.redact(key): self.redact(item) for key, item in value.items()}  # type: ignore[return-value]
        if isinstance(value, list | tuple):
            return type(value)(self.redact(item) for item in value)  # type: ignore[return-value]
        return value
