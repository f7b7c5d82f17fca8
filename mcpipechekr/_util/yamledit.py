"""Setting one key of a YAML file a person wrote, keeping every other byte: comments, order, quoting.

Loading and dumping the file would drop its comments (config.yaml has one on
nearly every field) and reorder it, so a command that records a decision in
it edits the text instead: PyYAML's node positions say where the value is,
and only that span is replaced, or one line inserted. The new value is
written as a flow list (`[a, b]`), which reads the same at any indentation.
The caller re-reads the result before writing it (`set_section_list` checks
it itself), so a shape this does not handle is an error, never a bad file.
"""

from __future__ import annotations

import json
import re
from typing import Any

import yaml

_PLAIN = re.compile(r"^[A-Za-z0-9_./@+-][A-Za-z0-9_./@+:=-]*$")


def flow_list(items: list[str]) -> str:
    """`[a, "b c"]`: plain scalars where YAML reads them back unchanged, JSON strings otherwise."""
    return "[" + ", ".join(scalar(item) for item in items) + "]"


def scalar(value: Any) -> str:
    """A YAML scalar that reads back as `value`: plain when safe, else a JSON (double-quoted) string."""
    if isinstance(value, str) and _PLAIN.match(value):
        try:
            if yaml.safe_load(value) == value:
                return value
        except yaml.YAMLError:
            pass
    return json.dumps(value)


def set_section_list(text: str, section: str, key: str, items: list[str]) -> str:
    """`text` with `section.key` set to the list `items`, the rest of the text as it was.

    Raises ValueError when the document is not a mapping, `section` is not a
    mapping (or empty), or the edit would not read back as intended.
    """
    value = flow_list(items)
    root = yaml.compose(text, Loader=yaml.SafeLoader) if text.strip() else None
    if root is None:
        edited = _append(text, f"{section}:\n  {key}: {value}\n")
    elif not isinstance(root, yaml.MappingNode):
        raise ValueError("the file is not a mapping of sections")
    else:
        edited = _set_in(text, root, section, key, value)
    data = yaml.safe_load(edited)
    if not isinstance(data, dict) or not isinstance(data.get(section), dict) or data[section][key] != items:
        raise ValueError(f"{section}.{key} could not be set in this file's layout")
    return edited


def _append(text: str, lines: str) -> str:
    if text and not text.endswith("\n"):
        text += "\n"
    return f"{text}\n{lines}" if text.strip() else lines


def _set_in(text: str, root: yaml.MappingNode, section: str, key: str, value: str) -> str:
    found = next((node for name, node in root.value if name.value == section), None)
    if found is None:
        return _append(text, f"{section}:\n  {key}: {value}\n")
    if isinstance(found, yaml.ScalarNode) and found.tag == "tag:yaml.org,2002:null":
        # `section:` with nothing under it: the key goes on the next line.
        line_end = text.find("\n", found.start_mark.index)
        line_end = len(text) if line_end < 0 else line_end
        return f"{text[:line_end]}\n  {key}: {value}{text[line_end:]}"
    if not isinstance(found, yaml.MappingNode):
        raise ValueError(f"'{section}' is not a mapping")
    current = next((node for name, node in found.value if name.value == key), None)
    if current is not None:
        start, end = current.start_mark.index, current.end_mark.index
        if isinstance(current, yaml.SequenceNode) and not current.flow_style and current.value:
            # A block list's span runs to the next key; its last item's end keeps what follows.
            end = current.value[-1].end_mark.index
        return text[:start] + value + text[end:]
    if found.flow_style:
        brace = found.start_mark.index + 1
        separator = ", " if found.value else ""
        return f"{text[:brace]}{key}: {value}{separator}{text[brace:]}"
    if not found.value:
        raise ValueError(f"'{section}' is an empty mapping")
    first = found.value[0][0].start_mark
    line_start = first.index - first.column
    return f"{text[:line_start]}{' ' * first.column}{key}: {value}\n{text[line_start:]}"
