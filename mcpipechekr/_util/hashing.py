"""Content hashes in one spelling, `sha256:<hex>`, so artifacts and doit agree on identity."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import orjson


def sha256_bytes(data: bytes) -> str:
    """Hash raw bytes; the prefix names the algorithm so a later change of hash stays readable."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def sha256_file(path: str | Path) -> str:
    """Hash a file's bytes in chunks, so large archives do not need to fit in memory."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return "sha256:" + digest.hexdigest()


def sha256_json(value: Any) -> str:
    """Hash a JSON-able value independently of key order, so equal settings hash equally."""
    return sha256_bytes(orjson.dumps(value, option=orjson.OPT_SORT_KEYS))
