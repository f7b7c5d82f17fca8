"""A small order ledger over MCP (stdio), for the tests that price one session across clients.

Its results have the shapes clients treat differently:

- `list_orders(customer)` returns a list, which the SDK sends as one text block
  per order plus the same data as structuredContent: clients that join text
  blocks (opencode) or that also pass on structuredContent show the same data
  in different shapes. Each order carries a long `memo` nobody needs to answer
  "how much did this customer spend", so unread fields are there to find.
- `export_ledger()` returns every order as one text of about 300 KB: larger
  than what Claude Code and opencode put in front of the model, so they show a
  preview and keep the rest on disk.

Data is made up and fixed, so every run sees the same bytes.
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations
from pydantic import BaseModel

READ_ONLY = ToolAnnotations(
    readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False
)
CUSTOMERS = ["Ada Quill", "Bram Osei", "Cleo Vance"]
MEMO = (
    "Packed in the north warehouse, checked twice against the picking list, sent with the standard "
    "courier; the customer asked for recycled packaging and a printed invoice in the parcel."
)


class Order(BaseModel):
    order_id: int
    customer: str
    total_cents: int
    status: str
    memo: str


ORDERS = [
    Order(
        order_id=1000 + n,
        customer=CUSTOMERS[n % len(CUSTOMERS)],
        total_cents=1250 + 37 * n,
        status="shipped" if n % 4 else "returned",
        memo=f"{MEMO} Batch {n:04d}.",
    )
    for n in range(1500)
]

app = MCPServer("ledger", log_level="WARNING")


@app.tool(description="Every order of one customer (exact name), oldest first.", annotations=READ_ONLY)
def list_orders(customer: str) -> list[Order]:
    return [order for order in ORDERS if order.customer == customer][:6]


@app.tool(description="The whole ledger as text, one order per line.", annotations=READ_ONLY)
def export_ledger() -> str:
    return "\n".join(f"{o.order_id}\t{o.customer}\t{o.total_cents}\t{o.status}\t{o.memo}" for o in ORDERS)


if __name__ == "__main__":
    app.run()
