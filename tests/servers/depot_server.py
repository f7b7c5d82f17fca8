"""An MCP server whose read-only tools only answer arguments a caller has to find, for argument synthesis.

Each tool refuses a guessed value with a clear error (a `ToolError`), as a
published server rightly does, and answers only when given what its schema,
its command line, its resources or another tool's result say:

- `list_items` → structuredContent `{"items": [{"id": "it-7", …}, …]}`; `get_item(item_id)` answers
  only an id `list_items` returned, with a `shelf: s-3` line; `get_shelf(shelf_id)`, listed before
  `get_item`, answers only that shelf (reached on a second round, once `get_item` has answered).
- `list_orders` → JSON in a text block `[{"order_id": 31, …}]`; `get_order(order_id)` answers only 31.
- `read_file(path)`: only a file inside the directory given as `--root` on the command line.
- `convert(unit)`: only the enum's last value, `inch`.
- `events_on(day)`: only a date (`format: date`).
- `lookup_sku(sku)`: only a string matching the pattern `^[A-Z]{2}-\\d{3}$`.
- `lookup_code(code)`: only its schema's example `ZX-42`.
- `read_doc(uri)`: only the URI of the resource the server lists.
- `search_archive(query)`: refuses everything ("the archive is offline").
- `slow_lookup(region)`: takes 0.4 s to refuse each of its six enum values (a time box stops it).
- `inspect_item(item_id)`: refuses unknown ids, and crashes (an unhandled exception) on a real one.
- `upstream_status(service)`: annotated openWorldHint: true; connects to 127.0.0.1:`--closed-port`,
  where nothing listens, and reports the refused connection as its error.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import socket
import time
from pathlib import Path
from typing import Annotated, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field

parser = argparse.ArgumentParser()
parser.add_argument("--root", required=True, help="the only directory read_file may read from")
parser.add_argument("--closed-port", type=int, required=True, help="a 127.0.0.1 port nothing listens on")
opts = parser.parse_args()
ROOT = Path(opts.root).resolve()

READ_ONLY = ToolAnnotations(
    readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False
)
OPEN_WORLD = ToolAnnotations(
    readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=True
)
ITEMS = {"it-7": "Lamp", "it-9": "Desk"}
DOC_URI = "depot://docs/returns-policy"

app = MCPServer("depot", log_level="WARNING")


class Item(BaseModel):
    id: str
    title: str


class ItemList(BaseModel):
    items: list[Item]


@app.tool(description="List the items in the depot.", annotations=READ_ONLY)
def list_items() -> ItemList:
    return ItemList(items=[Item(id=key, title=title) for key, title in ITEMS.items()])


@app.tool(description="What a shelf holds.", annotations=READ_ONLY)
def get_shelf(shelf_id: str) -> str:
    if shelf_id != "s-3":
        raise ToolError(f"unknown shelf {shelf_id!r}")
    return "shelf s-3: lamps"


@app.tool(description="Get one item by its id.", annotations=READ_ONLY)
def get_item(item_id: str) -> str:
    if item_id not in ITEMS:
        raise ToolError(f"unknown item id {item_id!r}")
    return f"{ITEMS[item_id]} ({item_id})\nshelf: s-3"


@app.tool(description="List the open orders as JSON.", annotations=READ_ONLY)
def list_orders() -> str:
    return json.dumps([{"order_id": 31, "customer": "Ada"}])


@app.tool(description="Get one order.", annotations=READ_ONLY)
def get_order(order_id: int) -> str:
    if order_id != 31:
        raise ToolError(f"no order {order_id}")
    return "order 31: 2 lamps for Ada"


@app.tool(description="Read a text file from the depot's folder.", annotations=READ_ONLY)
def read_file(path: str) -> str:
    target = Path(path).resolve()
    if target != ROOT and ROOT not in target.parents:
        raise ToolError(f"access denied: {path} is outside the allowed directory")
    if not target.is_file():
        raise ToolError(f"not a file: {path}")
    return target.read_text(encoding="utf-8")


@app.tool(description="Convert the depot's shelf height to a unit.", annotations=READ_ONLY)
def convert(unit: Literal["mm", "cm", "inch"]) -> str:
    if unit != "inch":
        raise ToolError(f"shelf heights are only kept in inches, not {unit}")
    return "72 inch"


@app.tool(description="Deliveries planned on a day.", annotations=READ_ONLY)
def events_on(day: Annotated[str, Field(json_schema_extra={"format": "date"})]) -> str:
    try:
        when = dt.date.fromisoformat(day)
    except ValueError:
        raise ToolError(f"not a date: {day!r} (YYYY-MM-DD)") from None
    return f"no deliveries on {when.isoformat()}"


@app.tool(description="Look a stock-keeping unit up.", annotations=READ_ONLY)
def lookup_sku(sku: Annotated[str, Field(pattern=r"^[A-Z]{2}-\d{3}$")]) -> str:
    return f"{sku}: 4 in stock"


@app.tool(description="Look a discount code up.", annotations=READ_ONLY)
def lookup_code(code: Annotated[str, Field(examples=["ZX-42"])]) -> str:
    if code != "ZX-42":
        raise ToolError(f"no discount code {code!r}")
    return "ZX-42: 10% off lamps"


@app.tool(description="Read one of the depot's documents.", annotations=READ_ONLY)
def read_doc(uri: str) -> str:
    if uri != DOC_URI:
        raise ToolError(f"no document at {uri}")
    return "Returns are accepted within 30 days."


@app.resource(DOC_URI, name="returns-policy", description="How returns work.")
def returns_policy() -> str:
    return "Returns are accepted within 30 days."


@app.tool(description="Search the archive of past orders.", annotations=READ_ONLY)
def search_archive(query: str) -> str:
    raise ToolError("the archive is offline for maintenance")


@app.tool(description="Look a region's stock up, slowly.", annotations=READ_ONLY)
def slow_lookup(region: Literal["north", "south", "east", "west", "centre", "islands"]) -> str:
    time.sleep(0.4)
    raise ToolError(f"no stock figures for {region!r} yet")


@app.tool(description="Inspect an item's stock history.", annotations=READ_ONLY)
def inspect_item(item_id: str) -> str:
    if item_id not in ITEMS:
        raise ToolError(f"unknown item id {item_id!r}")
    history: dict[str, list[int]] = {}
    return str(history[item_id][0])  # a KeyError: the crash only a real id reaches


@app.tool(description="Ask the upstream supplier whether a service is up.", annotations=OPEN_WORLD)
def upstream_status(service: str) -> str:
    try:
        with socket.create_connection(("127.0.0.1", opts.closed_port), timeout=2):
            pass
    except OSError as exc:
        raise ToolError(f"cannot reach the supplier at 127.0.0.1:{opts.closed_port}: {exc}") from exc
    return f"{service} is up"


if __name__ == "__main__":
    app.run()
