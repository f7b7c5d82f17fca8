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

import base64
import json
import re
import shlex
from collections.abc import Sequence
from pathlib import PurePath
from typing import TypeVar
from urllib.parse import parse_qsl, quote, quote_plus, urlsplit

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
        *base64_forms(secret),
    ]
    return list(dict.fromkeys(forms))


MIN_BASE64_CORE = 8
"""Shortest run of base64 characters matched on its own: shorter ones occur by chance."""


def base64_forms(secret: str) -> list[str]:
    """The secret's base64, standard and URL-safe, padded and not, and the characters its bytes alone
    decide when it sits at any offset inside a longer encoded value (`user:secret` in a Basic header).

    Base64 turns every 3 bytes into 4 characters, so the secret's encoding inside a longer value
    depends on its offset modulo 3: for each of the three offsets, the characters whose 6 bits all
    come from the secret are the same whatever surrounds it.
    """
    raw = secret.encode()
    whole = base64.b64encode(raw).decode()
    forms = [whole, whole.rstrip("=")]
    for offset in range(3):
        encoded = base64.b64encode(bytes(offset) + raw).decode()
        first = -(-8 * offset // 6)  # the first character all of whose bits are the secret's
        last = (8 * (offset + len(raw))) // 6  # one past the last such character
        core = encoded[first:last]
        if len(core) >= MIN_BASE64_CORE:
            forms.append(core)
    forms += [form.replace("+", "-").replace("/", "_") for form in forms]
    return [form for form in dict.fromkeys(forms) if len(form.rstrip("=")) >= MIN_BASE64_CORE]


SECRET_NAME = re.compile(
    r"(?:^|[-_.])(?:pass(?:word|wd|phrase)?|pwd|secret|token|api[-_]?key|apikey|access[-_]?key"
    r"|private[-_]?key|credentials?|auth[-_]?key|client[-_]?secret)$",
    re.I,
)
"""A flag, a variable or a URL parameter whose value is a secret, by the end of its name."""
PASSWORD_CLIENTS = frozenset({"mysql", "mariadb", "mysqldump", "mysqladmin", "mysqlimport", "mysqlshow"})
"""Database clients whose `-pVALUE` is the password (for `psql`, `-p` is the port)."""


def command_line_secrets(argv: Sequence[str]) -> list[str]:
    """Values a command line carries as secrets: after a secret-named flag (`--password X`,
    `--api-key=X`), in a secret-named assignment (`DB_PASSWORD=X`), a MySQL client's `-pX`, and
    the password and secret-named or `key` parameters of a URL."""
    found: list[str] = []
    program = PurePath(argv[0]).name if argv else ""
    for position, arg in enumerate(argv):
        flag, equals, value = arg.partition("=")
        name = flag.lstrip("-")
        if program in PASSWORD_CLIENTS and arg.startswith("-p") and len(arg) > 2:
            found.append(arg[2:])
        elif flag.startswith("-") and SECRET_NAME.search(name) and not re.match(r"no[-_]", name, re.I):
            if equals:
                found.append(value)
            elif position + 1 < len(argv) and not argv[position + 1].startswith("-"):
                found.append(argv[position + 1])
        elif equals and not flag.startswith("-") and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", flag):
            if SECRET_NAME.search(flag):
                found.append(value)
        elif (
            program in PASSWORD_CLIENTS and arg.startswith("-p") and len(arg) > 2 and not arg.startswith("--")
        ):
            found.append(arg[2:])
        if "://" in arg:
            found += url_secrets(arg)
    return [value for value in dict.fromkeys(found) if value]


def url_secrets(url: str) -> list[str]:
    """A URL's password (`user:secret@host`) and the values of its secret-named or `key` parameters."""
    start = url.find("://")
    scheme = re.search(r"[A-Za-z][A-Za-z0-9+.-]*$", url[:start]) if start > 0 else None
    if scheme is None:
        return []
    try:
        parts = urlsplit(url[scheme.start() :])
        password = parts.password
    except ValueError:
        return []
    found = [password] if password else []
    found += [
        value
        for name, value in parse_qsl(parts.query, keep_blank_values=False)
        if name.lower() == "key" or SECRET_NAME.search(name)
    ]
    return found


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
