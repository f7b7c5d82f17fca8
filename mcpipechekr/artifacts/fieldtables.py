"""Field tables of the artifact formats, generated from the models into docs/artifacts.md.

Why generated: a hand-kept list of fields drifts from the code the first time a
field is added. The tables sit between two marker comments in the doc; the rest
of the doc is prose. ``python -m mcpipechekr.artifacts.fieldtables PATH``
rewrites the tables in place, and the test suite fails while they are stale.
"""

from __future__ import annotations

import sys
import types
import typing
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import AwareDatetime, BaseModel, JsonValue
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from mcpipechekr.artifacts.atomic import atomic_write_text
from mcpipechekr.artifacts.schemas import SCHEMA_MODELS

BEGIN = "<!-- BEGIN FIELD TABLES: generated from the models; do not edit by hand -->"
END = "<!-- END FIELD TABLES -->"


def _anchor(model: type[BaseModel]) -> str:
    return model.__name__.lower()


def render_type(annotation: Any) -> str:
    """A reader-friendly type: `list of` [Bug](#bug), `"a"` or `"b"`, string, ..."""
    if annotation is type(None):
        return "null"
    if annotation is Any or annotation is JsonValue:
        return "any JSON"
    if annotation is AwareDatetime:
        return "date-time with timezone"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return f"[{annotation.__name__}](#{_anchor(annotation)})"
    simple = {str: "string", int: "integer", float: "number", bool: "boolean"}
    if annotation in simple:
        return simple[annotation]
    origin = get_origin(annotation)
    args = get_args(annotation)
    if origin is typing.Annotated:
        return render_type(args[0])
    if origin is Literal:
        return " or ".join(f"`{value!r}`".replace("'", '"') for value in args)
    if origin in (Union, types.UnionType):
        return " or ".join(render_type(arg) for arg in args)
    if origin is list:
        return f"list of {render_type(args[0])}" if args else "list"
    if origin is dict:
        return "object"
    return f"`{annotation}`"


def _constraints(field: FieldInfo) -> str:
    notes = []
    for item in field.metadata:
        for attr, word in (("ge", "≥"), ("gt", ">"), ("le", "≤"), ("lt", "<")):
            value = getattr(item, attr, None)
            if value is not None:
                notes.append(f"{word} {value}")
        pattern = getattr(item, "pattern", None)
        if pattern:
            notes.append(f"matches `{pattern}`")
        min_length = getattr(item, "min_length", None)
        if min_length:
            notes.append("not empty" if min_length == 1 else f"at least {min_length} long")
    return ", ".join(notes)


def _default(field: FieldInfo) -> str:
    if field.is_required():
        return "required"
    if field.default_factory is not None:
        value = field.default_factory()  # type: ignore[call-arg]
        if isinstance(value, BaseModel):
            return "see type"
        return f"`{_json_literal(value)}`"
    if field.default is PydanticUndefined:
        return "required"
    return f"`{_json_literal(field.default)}`"


def _json_literal(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    return str(value).replace("'", '"')


def _nested_models(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    found: list[type[BaseModel]] = []
    for arg in get_args(annotation):
        found.extend(_nested_models(arg))
    return found


def models_in_order() -> list[tuple[str | None, type[BaseModel]]]:
    """Every model reachable from the file formats, each once: (file-format name or None, model)."""
    seen: set[type[BaseModel]] = set()
    ordered: list[tuple[str | None, type[BaseModel]]] = []

    def visit(name: str | None, model: type[BaseModel]) -> None:
        if model in seen:
            return
        seen.add(model)
        ordered.append((name, model))
        for field in model.model_fields.values():
            for nested in _nested_models(field.annotation):
                visit(None, nested)

    for name, model in SCHEMA_MODELS.items():
        visit(name, model)
    return ordered


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_model(name: str | None, model: type[BaseModel]) -> str:
    """One model's heading, purpose and field table."""
    level = "###" if name else "####"
    title = f"{model.__name__} (`{name}.schema.json`)" if name else model.__name__
    doc = " ".join((model.__doc__ or "").split())
    lines = [f'{level} <a id="{_anchor(model)}"></a>{title}', "", doc, ""]
    lines += ["| Field | Type | Default | Description |", "|---|---|---|---|"]
    for field_name, field in model.model_fields.items():
        kind = render_type(field.annotation)
        constraints = _constraints(field)
        if constraints:
            kind += f" ({constraints})"
        description = field.description or ""
        lines.append(f"| `{field_name}` | {_cell(kind)} | {_cell(_default(field))} | {_cell(description)} |")
    return "\n".join(lines) + "\n"


def render_field_tables() -> str:
    """The generated block, markers included."""
    body = "\n".join(render_model(name, model) for name, model in models_in_order())
    return f"{BEGIN}\n\n{body}\n{END}"


def refresh_doc_text(text: str) -> str:
    """``text`` with the block between the markers replaced by freshly generated tables."""
    start = text.find(BEGIN)
    end = text.find(END)
    if start < 0 or end < start:
        raise ValueError(f"the document needs the marker lines {BEGIN!r} and {END!r}")
    return text[:start] + render_field_tables() + text[end + len(END) :]


def update_doc(path: str | Path) -> bool:
    """Regenerate the tables in a doc in place; True if the file changed."""
    target = Path(path)
    text = target.read_text(encoding="utf-8")
    fresh = refresh_doc_text(text)
    if fresh == text:
        return False
    atomic_write_text(target, fresh)
    return True


def main(argv: list[str]) -> int:
    """Entry point for `python -m mcpipechekr.artifacts.fieldtables docs/artifacts.md`."""
    if len(argv) != 1:
        print("usage: python -m mcpipechekr.artifacts.fieldtables DOC.md", file=sys.stderr)
        return 2
    changed = update_doc(argv[0])
    print(f"{argv[0]}: {'updated' if changed else 'up to date'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
