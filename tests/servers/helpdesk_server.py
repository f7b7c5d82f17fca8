"""A support desk over MCP (stdio), for the description-suggestion tests: tools described to mislead.

Its tool descriptions are the defects, not its code:

- `search_accounts(text)` sounds like the place for anything about a customer ("Search customers
  and their accounts"), but holds only plans, balances and addresses;
- `ticket_log(person)` holds what customers complained about, yet its description ("Entries of
  the support log for a person.") says nothing an agent asking about a complaint would look for;
- `list_messages(customer, page=1, order="asc")` holds what customers wrote, yet its description
  ("A customer's messages, three a page.") loses to `search_accounts` for a question about what a
  customer wrote to the desk; it pages three messages at a time, oldest first, and its `order`
  parameter (`desc`: newest first) has no description, so an agent after the latest message pages
  to the end;
- `order_status(order_id)` fails on an unknown order with the message of a Python KeyError: a bug
  of the code, which no description fixes.

Tools are read-only over in-memory data; their results are structured.
"""

from __future__ import annotations

from typing import Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field

PAGE = 3
READ_ONLY = ToolAnnotations(
    readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False
)

ACCOUNTS = [
    {"customer": "Ada Brook", "plan": "pro", "balance": 12.5, "city": "Leeds"},
    {"customer": "Tom Reyes", "plan": "basic", "balance": 0.0, "city": "Porto"},
]
TICKETS = {
    "Ada Brook": [
        {"id": "T-101", "opened": "2024-02-11", "summary": "invoice sent twice"},
        {"id": "T-164", "opened": "2024-06-03", "summary": "export to CSV drops the last row"},
    ],
}
MESSAGES = [  # oldest first
    {"id": f"M-{n:02d}", "customer": "Ada Brook", "sent": f"2024-0{n}-15", "text": text}
    for n, text in enumerate(
        [
            "Hello, a question about my plan.",
            "Thanks, that worked.",
            "The invoice came twice.",
            "Any news on the invoice?",
            "The export drops a row.",
            "Still waiting on the export fix.",
            "Please close my older ticket.",
        ],
        start=1,
    )
] + [
    {"id": "M-20", "customer": "Tom Reyes", "sent": "2024-03-02", "text": "Can I pay yearly?"},
]
ORDERS = {"SO-1": "shipped", "SO-2": "packing"}

app = MCPServer("helpdesk", log_level="WARNING")


class Account(BaseModel):
    customer: str
    plan: str
    balance: float
    city: str


class Accounts(BaseModel):
    accounts: list[Account]


class Entry(BaseModel):
    id: str
    opened: str
    summary: str


class Entries(BaseModel):
    entries: list[Entry]


class Message(BaseModel):
    id: str
    sent: str
    text: str


class MessagePage(BaseModel):
    messages: list[Message]
    more: bool


class Status(BaseModel):
    order_id: str
    status: str


@app.tool(
    description="Search customers and their accounts by name: returns each customer's plan, balance "
    "and city.",
    annotations=READ_ONLY,
)
def search_accounts(text: str = Field(description="Part of the customer's name.")) -> Accounts:
    found = [Account(**row) for row in ACCOUNTS if text.lower() in row["customer"].lower()]
    return Accounts(accounts=found)


@app.tool(description="Entries of the support log for a person.", annotations=READ_ONLY)
def ticket_log(person: str = Field(description="The person's full name.")) -> Entries:
    return Entries(entries=[Entry(**row) for row in TICKETS.get(person, [])])


@app.tool(description="A customer's messages, three a page.", annotations=READ_ONLY)
def list_messages(
    customer: str = Field(description="The customer's full name."),
    page: int = Field(default=1, description="Page number, from 1."),
    order: Literal["asc", "desc"] = "asc",
) -> MessagePage:
    rows = [row for row in MESSAGES if row["customer"] == customer]
    if order == "desc":
        rows.reverse()
    start = (max(page, 1) - 1) * PAGE
    chosen = rows[start : start + PAGE]
    return MessagePage(
        messages=[Message(id=row["id"], sent=row["sent"], text=row["text"]) for row in chosen],
        more=start + PAGE < len(rows),
    )


@app.tool(description="The shipping status of one order, by its id (SO-…).", annotations=READ_ONLY)
def order_status(order_id: str = Field(description="The order's id, e.g. SO-1.")) -> Status:
    try:
        return Status(order_id=order_id, status=ORDERS[order_id])
    except KeyError as exc:  # the defect: the exception's text, not an answer
        raise ToolError(f"Traceback (most recent call last): KeyError: {exc}") from None


if __name__ == "__main__":
    app.run()
