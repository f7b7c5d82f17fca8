"""A tool result as the model saw it: the one rule every runner and importer prices results by.

Why: the same MCP result reaches the model in different shapes depending on the
client. The Python SDK sends a list as one text block per item and the same data
again as structuredContent; pydantic-ai shows the model the structuredContent,
Claude Code shows it as one compact JSON text, opencode joins the text blocks
with blank lines. Counting both parts, or the JSON's indentation, made the same
session cost up to twice as much depending on who ran it. So a result is priced
as the model read it:

- its content blocks, a text block that is JSON measured by its compact form
  (clients re-serialise JSON, and tokenizers fold indentation into few tokens);
- structuredContent only when there are no content blocks (the spec has servers
  repeat structured data as text, and no client shows both);
- and when the client showed a preview instead (Claude Code's "result exceeds
  maximum allowed tokens", opencode's truncated output), the preview: the whole
  result's size is kept apart, in `ToolCall.result_bytes_full`.

`split_joined_text` undoes a client's joining of text blocks (opencode joins
them with a blank line), so a result of several JSON blocks reads as data again.
"""

from __future__ import annotations

from typing import Any

import orjson

from mcpipechekr._util.tokens import BYTES_PER_TOKEN

JOINER = "\n\n"
"""What opencode puts between the text blocks of one result."""


def json_text(text: str) -> Any:
    """The JSON value a text holds, or None when it is not one JSON object or array (free text)."""
    stripped = text.strip()
    if not stripped or stripped[0] not in "[{":
        return None
    try:
        return orjson.loads(stripped)
    except orjson.JSONDecodeError:
        return None


def block_bytes(block: dict[str, Any]) -> int:
    """Bytes a model reads for one content block (a JSON text by its compact form)."""
    if block.get("type") == "text" and isinstance(block.get("text"), str):
        text = block["text"]
        data = json_text(text)
        if data is not None:
            return len(orjson.dumps(data))
        return len(text.encode("utf-8"))
    return len(orjson.dumps(block, default=str))


def seen_size(content: list[dict[str, Any]], structured_content: Any = None) -> tuple[int, int]:
    """(bytes, estimated tokens) of a result as a model reads it (see the module docstring)."""
    if content:
        size = sum(block_bytes(block) for block in content)
    elif structured_content is not None:
        size = len(orjson.dumps(structured_content, default=str))
    else:
        size = 0
    return size, -(-size // BYTES_PER_TOKEN)


def split_joined_text(text: str) -> list[str]:
    """The text blocks a client joined with blank lines, as far as they can be told apart.

    A piece between blank lines that is one JSON object or array is a block of its
    own (JSON as servers write it, compact or indented, holds no blank line); the
    plain text between such blocks stays together. A text with no JSON piece, or
    that is one JSON value as a whole, comes back whole.
    """
    if json_text(text) is not None:
        return [text]
    blocks: list[str] = []
    plain: list[str] = []
    found = False
    for piece in text.split(JOINER):
        if json_text(piece) is None:
            plain.append(piece)
            continue
        found = True
        if plain:
            blocks.append(JOINER.join(plain))
            plain = []
        blocks.append(piece)
    if plain:
        blocks.append(JOINER.join(plain))
    return blocks if found else [text]
