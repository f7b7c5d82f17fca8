"""How values written in config.yaml become settings: numbers as strings, `python` as this
interpreter, relative paths made absolute.

Shared by the server section and the other sections, which resolve paths the same way.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from mcpipechekr._util.safe_read import resolved


def stringify_numbers(value: Any) -> Any:
    """`args: [--port, 8765]` and `env: {PORT: 8765}` mean strings; YAML reads the numbers as ints."""
    if isinstance(value, list):
        return [
            str(item) if isinstance(item, int | float) and not isinstance(item, bool) else item
            for item in value
        ]
    if isinstance(value, dict):
        return {
            key: str(item) if isinstance(item, int | float) and not isinstance(item, bool) else item
            for key, item in value.items()
        }
    return value


def resolve_command(command: str) -> str:
    """`python`/`python3` mean the interpreter running MCPipeChekr: the bundled example runs in our venv."""
    return sys.executable if command in ("python", "python3") else command


def absolute_path(path: str | None, base_dir: Path) -> str | None:
    if path is None:
        return None
    candidate = Path(path).expanduser()
    return str(candidate if candidate.is_absolute() else resolved(base_dir / candidate))
