"""The scripted model for tests/servers/orders_server.py (copied beside it as demo_agent.py).

"The first order of X": with a `sort` parameter, one call sorted oldest first;
without one, every page, then the earliest date seen.
"""

from __future__ import annotations

import re

from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo

from mcpipechekr.runners.messages import tool_results, user_prompt


def demo_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    found = re.search(r"placed by (.+?)\?", user_prompt(messages))
    customer = found.group(1) if found else ""
    tool = next(t for t in info.function_tools if t.name == "list_orders")
    sortable = "sort" in tool.parameters_json_schema.get("properties", {})
    results = [r for r in tool_results(messages) if r.ok]
    if sortable and not results:
        return ModelResponse(parts=[ToolCallPart("list_orders", {"customer": customer, "sort": "oldest"})])
    if not sortable and (not results or results[-1].data.get("more")):
        page = len(results) + 1
        return ModelResponse(parts=[ToolCallPart("list_orders", {"customer": customer, "page": page})])
    rows = [row for r in results for row in r.data["orders"]]
    first = min(rows, key=lambda row: row["placed"])
    return ModelResponse(parts=[TextPart(f"The first order was {first['id']}, placed on {first['placed']}.")])
