"""A shop's order book over MCP (stdio), for the stale-baseline tests: a fix that adds a sort parameter.

Orders are listed in the order they were imported, not by date, two a page, so
"the first order of a customer" takes a walk to the last page. `SORTABLE` is
the fix: set to True (and committed) it adds `sort` ("oldest" or "newest") to
`list_orders`, and one call answers. Tools (read-only, in-memory data):

- `list_orders(customer, page=1[, sort])`: `{"orders": [{"id", "placed", "total"}], "more": bool}`;
- `order_total(order_id)`: `{"id", "total"}`.
"""

from __future__ import annotations

from typing import Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel

SORTABLE = False
PAGE = 2

READ_ONLY = ToolAnnotations(
    readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False
)

ORDERS = [  # import order: ids and dates do not agree
    {"id": "SO-0931", "customer": "Mira Castell", "placed": "2023-06-14", "total": 48.20},
    {"id": "SO-0417", "customer": "Teo Varga", "placed": "2022-01-09", "total": 12.00},
    {"id": "SO-1102", "customer": "Mira Castell", "placed": "2024-02-02", "total": 19.99},
    {"id": "SO-0588", "customer": "Mira Castell", "placed": "2022-11-30", "total": 75.50},
    {"id": "SO-1240", "customer": "Mira Castell", "placed": "2024-09-18", "total": 9.90},
    {"id": "SO-0203", "customer": "Mira Castell", "placed": "2021-04-27", "total": 33.10},
]

app = MCPServer("orders", log_level="WARNING")


class OrderRow(BaseModel):
    id: str
    placed: str
    total: float


class OrderPage(BaseModel):
    orders: list[OrderRow]
    more: bool


class OrderTotal(BaseModel):
    id: str
    total: float


def _page(customer: str, page: int, sort: str | None) -> OrderPage:
    rows = [order for order in ORDERS if order["customer"] == customer]
    if sort is not None:
        rows = sorted(rows, key=lambda order: order["placed"], reverse=sort == "newest")
    start = (max(page, 1) - 1) * PAGE
    chosen = rows[start : start + PAGE]
    return OrderPage(
        orders=[OrderRow(id=o["id"], placed=o["placed"], total=o["total"]) for o in chosen],
        more=start + PAGE < len(rows),
    )


if SORTABLE:

    @app.tool(
        description="A customer's orders, two a page; `sort` orders them by date (oldest or newest first).",
        annotations=READ_ONLY,
    )
    def list_orders(
        customer: str, page: int = 1, sort: Literal["oldest", "newest"] | None = None
    ) -> OrderPage:
        return _page(customer, page, sort)

else:

    @app.tool(
        description="A customer's orders, two a page, in the order they were imported.", annotations=READ_ONLY
    )
    def list_orders(customer: str, page: int = 1) -> OrderPage:
        return _page(customer, page, None)


@app.tool(description="The total of one order.", annotations=READ_ONLY)
def order_total(order_id: str) -> OrderTotal:
    for order in ORDERS:
        if order["id"] == order_id:
            return OrderTotal(id=order_id, total=order["total"])
    raise ToolError(f"no order {order_id}")


if __name__ == "__main__":
    app.run()
