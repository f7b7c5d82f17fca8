"""docs/ARCHITECTURE.md stays true to the code: its import diagrams name every package and exactly the
imports between them that the code has.

The diagrams are hand-written for readers; this test reads them back (node declarations `id["label"]`
and arrows `a --> b & c`) and compares them with the import graph the layers contract is checked on
(grimp, which import-linter uses). A failure prints the lines the diagram should have.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "ARCHITECTURE.md"
_NODE = re.compile(r'^\s*(\w+)\["([^"]+)"\]\s*$')
_EDGE = re.compile(r"^\s*(\w+)\s*-->\s*(.+?)\s*$")


@pytest.fixture(scope="module")
def imports() -> grimp.ImportGraph:
    return grimp.build_graph("mcpipechekr", include_external_packages=False)


def _diagram(marker: str) -> tuple[dict[str, str], set[tuple[str, str]]]:
    """The nodes (id -> label) and arrows of the mermaid block that holds `%% <marker>`."""
    text = DOC.read_text(encoding="utf-8")
    assert f"%% {marker}" in text, f"{DOC}: no diagram marked `%% {marker}`"
    block = text.split(f"%% {marker}", 1)[1].split("```", 1)[0]
    nodes: dict[str, str] = {}
    edges: set[tuple[str, str]] = set()
    for line in block.splitlines():
        if node := _NODE.match(line):
            nodes[node[1]] = node[2]
        elif edge := _EDGE.match(line):
            edges.update((edge[1], target.strip()) for target in edge[2].split("&"))
    return nodes, edges


def _name(label: str) -> str:
    """`cli/` -> cli, `graph.py` -> graph, `__init__.py …` -> __init__ (the package's own module)."""
    return label.split()[0].removesuffix("/").removesuffix(".py")


def _child(module: str, parent: str) -> str | None:
    """The direct child of `parent` that `module` is or lies in; `__init__` for `parent` itself."""
    if module == parent:
        return "__init__"
    if not module.startswith(parent + "."):
        return None
    return module[len(parent) + 1 :].split(".")[0]


def _code_edges(imports: grimp.ImportGraph, parent: str) -> tuple[set[str], set[tuple[str, str]]]:
    children: set[str] = set()
    edges: set[tuple[str, str]] = set()
    for module in imports.modules:
        source = _child(module, parent)
        if source is None or source == "__main__":
            continue
        children.add(source)
        for imported in imports.find_modules_directly_imported_by(module):
            target = _child(imported, parent)
            if target is not None and target != source:
                edges.add((source, target))
    return children, edges


def _compare(imports: grimp.ImportGraph, marker: str, parent: str, skip: set[str]) -> None:
    nodes, drawn = _diagram(marker)
    names = {node: _name(label) for node, label in nodes.items()}
    unknown = {source for edge in drawn for source in edge} - names.keys()
    assert not unknown, f"{DOC} ({marker}): arrows use undeclared nodes {sorted(unknown)}"
    children, edges = _code_edges(imports, parent)
    children -= skip
    edges = {(a, b) for a, b in edges if a not in skip and b not in skip}
    ids = {name: node for node, name in names.items()}
    missing_nodes = sorted(children - ids.keys())
    assert not missing_nodes, f"{DOC} ({marker}): packages missing from the diagram: {missing_nodes}"
    assert not (stale := sorted(set(ids) - children)), f"{DOC} ({marker}): no such package: {stale}"
    drawn_names = {(names[a], names[b]) for a, b in drawn}
    if drawn_names != edges:
        expected = "\n".join(
            f"    {ids[source]} --> {' & '.join(ids[t] for t in sorted(t for s, t in edges if s == source))}"
            for source in sorted({s for s, _ in edges})
        )
        raise AssertionError(
            f"{DOC} ({marker}) differs from the imports.\n"
            f"  drawn, not imported: {sorted(drawn_names - edges)}\n"
            f"  imported, not drawn: {sorted(edges - drawn_names)}\n"
            f"The arrows as the code has them:\n{expected}"
        )


def test_package_diagram_has_every_package_and_every_import(imports: grimp.ImportGraph) -> None:
    _compare(imports, "package imports", "mcpipechekr", skip=set())


def test_findings_diagram_has_every_subpackage_and_every_import(imports: grimp.ImportGraph) -> None:
    _compare(imports, "findings imports", "mcpipechekr.findings", skip={"__init__"})


def test_package_diagram_layers_are_the_contracts_layers() -> None:
    """The diagram's layer boxes list the same packages, in the same order, as pyproject's contract."""
    contract = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    layers = [
        sorted(part.strip().removeprefix("mcpipechekr.") for part in re.split(r"[|:]", layer))
        for layer in contract["contracts"][0]["layers"]
    ]
    text = DOC.read_text(encoding="utf-8").split("%% package imports", 1)[1].split("```", 1)[0]
    drawn = [
        sorted(_name(label) for _, label in re.findall(r'(\w+)\["([^"]+)"\]', body))
        for body in re.findall(r"subgraph \w+\[[^\]]*\]\n(.*?)\n\s*end", text, re.S)
    ]
    assert drawn[: len(layers)] == layers
