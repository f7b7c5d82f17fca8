"""Which values count as secrets by their variable's name, and what a masked secret reads as.

Both the effective config (its redactor) and callers that decide what to hide
from a person (the fix agent's environment) need the same rule, so it lives
apart from the models.
"""

from __future__ import annotations

MASK = "***"

_SECRET_WORDS = (
    "KEY",
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "PASSPHRASE",
    "CREDENTIALS",
    "AUTH",
    "COOKIE",
    "DSN",
)
_SECRET_ENDINGS = ("APIKEY", "TOKEN", "PASSWORD", "SECRET")


def secret_name(name: str) -> bool:
    """Whether an environment variable's name says its value is a secret (`GITHUB_TOKEN`, `DB_PASSWORD`).

    Judged by the name's `_`-separated words, so `API_KEY`, `APIKEY` and `PGPASSWORD` are
    secrets and `KEYBOARD_LAYOUT` or `HOCKEY_TEAM` are not.
    """
    words = name.upper().replace("-", "_").split("_")
    return any(word in _SECRET_WORDS or word.endswith(_SECRET_ENDINGS) for word in words)
