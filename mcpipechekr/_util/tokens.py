"""The one token estimator used everywhere a provider does not report usage.

Why a heuristic: the harness talks to many providers with different tokenizers,
and loading a tokenizer would mean shipping or downloading model files. One
estimate, applied the same way to observed and optimal call sequences, keeps
comparisons fair even when absolute numbers are off.

Rule: ceil(UTF-8 bytes / 4). English prose averages about four bytes per token
in the common BPE tokenizers; JSON with many short keys and digits tends to be
underestimated by up to a third. Every figure produced by this function is
labelled "estimated" in the artifacts.
"""

from __future__ import annotations

from typing import Any

import orjson

BYTES_PER_TOKEN = 4


def estimate_tokens(value: str | bytes | Any) -> int:
    """Estimate tokens of text, bytes, or any JSON-able value (serialised compactly first)."""
    if isinstance(value, str):
        size = len(value.encode("utf-8"))
    elif isinstance(value, bytes | bytearray):
        size = len(value)
    else:
        size = len(orjson.dumps(value, default=str))
    return -(-size // BYTES_PER_TOKEN)
