"""A knowledge graph over MCP (stdio): people, places and things joined by named relations.

The shape of the published memory servers: one tool returns the whole graph,
one searches it (the records whose name, type or notes hold the words, with
the relations that touch them), one opens records by name. Results are JSON
printed as text, as those servers give them. Tools (all read-only, annotated so):

- `read_graph()`: `{"entities": [{name, entityType, observations}], "relations": [{from, to, relationType}]}`;
- `search_nodes(query)`: the same shape, the entities matching and every relation that touches one;
- `open_nodes(names)`: the entities named, and the relations between them.

Run it with `python graph_server.py` (stdio).
"""

from __future__ import annotations

import json

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

READ_ONLY = ToolAnnotations(
    readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False
)
app = MCPServer("graph", log_level="WARNING")

ENTITIES = [
    ("Lena Brandt", "engineer", ["maintains the tide gauge", "joined in 2019"]),
    ("Omar Haddad", "engineer", ["wrote the survey tool"]),
    ("Tide gauge", "instrument", ["installed on the east jetty", "reads every ten minutes"]),
    ("Survey tool", "software", ["written in Rust"]),
    ("Kelp station", "site", ["north of the harbour"]),
    ("Harbour board", "organisation", ["meets monthly"]),
]
RELATIONS = [  # from, to, relation
    ("Lena Brandt", "Tide gauge", "maintains"),
    ("Lena Brandt", "Kelp station", "works at"),
    ("Lena Brandt", "Harbour board", "reports to"),
    ("Omar Haddad", "Survey tool", "wrote"),
    ("Omar Haddad", "Lena Brandt", "mentors"),
    ("Tide gauge", "Kelp station", "is installed at"),
]


def _graph(names: set[str] | None, touching: bool) -> str:
    entities = [
        {"name": name, "entityType": kind, "observations": notes}
        for name, kind, notes in ENTITIES
        if names is None or name in names
    ]
    kept = {entity["name"] for entity in entities}
    relations = [
        {"from": a, "to": b, "relationType": r}
        for a, b, r in RELATIONS
        if names is None or (a in kept or b in kept if touching else a in kept and b in kept)
    ]
    return json.dumps({"entities": entities, "relations": relations}, indent=2)


@app.tool(description="The whole knowledge graph: every entity and every relation.", annotations=READ_ONLY)
def read_graph() -> str:
    return _graph(None, touching=False)


@app.tool(
    description=(
        "Entities whose name, type or observations contain the query, with the relations that touch them."
    ),
    annotations=READ_ONLY,
)
def search_nodes(query: str) -> str:
    wanted = query.lower()
    names = {
        name
        for name, kind, notes in ENTITIES
        if wanted in name.lower() or wanted in kind.lower() or any(wanted in note.lower() for note in notes)
    }
    return _graph(names, touching=True)


@app.tool(description="The entities with these names, and the relations between them.", annotations=READ_ONLY)
def open_nodes(names: list[str]) -> str:
    return _graph(set(names), touching=False)


if __name__ == "__main__":
    app.run()
