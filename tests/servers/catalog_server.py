"""An MCP server with no annotations at all, as most published servers are, to prove what `check` calls.

Every call of every tool appends the tool's name as a line to the file named
by `$CATALOG_CALLS`, so a test reads which tools were called from the
server's side, not from our own report. Tools:

- `list_items`, `get_item`, `search_items`: read-only by name, description
  and schema, but unannotated: skipped until the author trusts them.
- `query_items`: read-only as well; it refuses every filter with a
  pretty-printed JSON error, the shape whose first line is only `{`.
- `delete_item`, `run_command`: change state or run anything; never suggested.
- `purge_items`: annotated `destructiveHint: true`; trust in it is refused.
"""

from __future__ import annotations

import json
import os

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

app = MCPServer("catalog", log_level="WARNING")
ITEMS = {"it-1": "teapot", "it-2": "kettle"}


def _called(tool: str) -> None:
    with open(os.environ["CATALOG_CALLS"], "a", encoding="utf-8") as calls:
        calls.write(tool + "\n")


@app.tool(description="List every item of the catalog with its id and name.")
def list_items() -> str:
    _called("list_items")
    return json.dumps([{"id": key, "name": name} for key, name in ITEMS.items()])


@app.tool(description="Get one item by its id.")
def get_item(item_id: str) -> str:
    _called("get_item")
    if item_id not in ITEMS:
        raise ToolError(f"no item {item_id}")
    return json.dumps({"id": item_id, "name": ITEMS[item_id]})


@app.tool(description="Search items whose name contains the query.")
def search_items(query: str) -> str:
    _called("search_items")
    return json.dumps([key for key, name in ITEMS.items() if query.lower() in name])


@app.tool(description="Query items with a filter expression.")
def query_items(filter: str) -> str:
    _called("query_items")
    error = {"error": {"code": "BAD_FILTER", "message": f"cannot parse filter {filter!r}", "at": 0}}
    raise ToolError(json.dumps(error, indent=2))


@app.tool(description="Delete an item by its id.")
def delete_item(item_id: str) -> str:
    _called("delete_item")
    return f"deleted {item_id}"


@app.tool(description="Run a shell command on the catalog host and return its output.")
def run_command(command: str) -> str:
    _called("run_command")
    return f"ran {command}"


@app.tool(description="Show the items marked for purging.", annotations=ToolAnnotations(destructiveHint=True))
def purge_items() -> str:
    _called("purge_items")
    return "purged"


if __name__ == "__main__":
    app.run()
