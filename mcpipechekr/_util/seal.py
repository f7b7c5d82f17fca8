"""Seals: an HMAC over a JSON value, keyed by a secret file only this tool writes.

A seal tells a file this tool wrote from one written or edited by hand: the
value is serialised canonically (keys sorted, so the order on disk does not
matter), and the HMAC-SHA256 of those bytes under the key is stored beside it.
Changing one byte of the value, or writing a new one, needs the key.

The key is 32 random bytes, kept hex-encoded in a file created on first use
with mode 0600 (created exclusively, so two writers racing agree on one key).
A seal proves nothing against someone who can read that file and run code as
its owner: it guards against edits by hand and by scripts that go around the
tool, not against the tool's own user.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from pathlib import Path
from typing import Any

import orjson

PREFIX = "hmac-sha256:"
"""How a seal starts, so a later change of algorithm stays readable."""


def seal_json(key: bytes, value: Any) -> str:
    """The seal of a JSON-able value under ``key``: `hmac-sha256:<hex>`, independent of key order."""
    data = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    return PREFIX + hmac.new(key, data, hashlib.sha256).hexdigest()


def seal_matches(key: bytes, value: Any, seal: str) -> bool:
    """Whether ``seal`` is the seal of ``value`` under ``key``, compared in constant time."""
    return hmac.compare_digest(seal_json(key, value), seal)


def read_key(path: Path) -> bytes | None:
    """The key stored at ``path``, or None when there is none (nothing sealed with it can be trusted)."""
    try:
        text = path.read_text(encoding="ascii").strip()
    except FileNotFoundError:
        return None
    try:
        return bytes.fromhex(text)
    except ValueError:
        return None


def ensure_key(path: Path) -> bytes:
    """The key at ``path``, made (32 random bytes, mode 0600) when there is none yet."""
    existing = read_key(path)
    if existing:
        return existing
    path.parent.mkdir(parents=True, exist_ok=True)
    key = secrets.token_bytes(32)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another writer made it first: use theirs
        raced = read_key(path)
        if raced:
            return raced
        raise
    with os.fdopen(fd, "w", encoding="ascii") as handle:
        handle.write(key.hex() + "\n")
    return key
