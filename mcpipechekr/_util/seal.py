"""Seals: an HMAC over a JSON value, keyed by a secret file only this tool writes.

A seal tells a file this tool wrote from one written or edited by hand: the
value is serialised canonically (keys sorted, so the order on disk does not
matter), and the HMAC-SHA256 of those bytes under the key is stored beside it.
Changing one byte of the value, or writing a new one, needs the key.

The key is 32 random bytes, kept hex-encoded in a file created on first use
with mode 0600, whole or not at all (`once.py`: a writer killed meanwhile
leaves no empty key, and two writers racing agree on one key).
A seal proves nothing against someone who can read that file and run code as
its owner: it guards against edits by hand and by scripts that go around the
tool, not against the tool's own user.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from pathlib import Path
from typing import Any

import orjson

from mcpipechekr._util.once import create_once, replace_whole

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
        return _parse_key(path.read_bytes())
    except FileNotFoundError:
        return None


def ensure_key(path: Path) -> bytes:
    """The key at ``path``, made (32 random bytes, mode 0600) when there is none yet.

    A key file that holds no key (left empty by a writer killed before it wrote,
    as versions that created the file before writing it could) sealed nothing:
    it is replaced.
    """
    existing = read_key(path)
    if existing:
        return existing
    key = secrets.token_bytes(32)
    data = (key.hex() + "\n").encode("ascii")
    in_force = _parse_key(create_once(path, data))
    if in_force:
        return in_force  # ours, or another writer's that made it first
    replace_whole(path, data)
    return key


def _parse_key(raw: bytes) -> bytes | None:
    try:
        return bytes.fromhex(raw.decode("ascii").strip()) or None
    except (UnicodeDecodeError, ValueError):
        return None
