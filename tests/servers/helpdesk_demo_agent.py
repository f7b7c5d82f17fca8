"""The scripted model for tests/servers/helpdesk_server.py (copied beside it as demo_agent.py).

It reads the tool descriptions the way a hurried agent does:

- a question about what a customer complained about goes to the tool whose description speaks of
  customers (`search_accounts`); finding no complaint there, it tries `ticket_log`;
- what a customer wrote to the desk: `search_accounts` again, and it answers from the account alone,
  never reading `list_messages`;
- the last message a customer sent: `list_messages` page after page while `more` is true, unless
  the `order` parameter's description says how to get the newest first;
- a customer's plan: `search_accounts`, asked twice with the same words (an agent's habit, not the
  server's fault);
- an order's status: `order_status`, and the error it met goes into the answer.
"""

from __future__ import annotations

import re

from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo

from mcpipechekr.runners.messages import tool_results, user_prompt


def _name(prompt: str) -> str:
    found = re.search(r"\b([A-Z][a-z]+ [A-Z][a-z]+)\b", prompt)
    return found.group(1) if found else ""


def _call(reason: str, tool: str, arguments: dict) -> ModelResponse:
    return ModelResponse(parts=[TextPart(reason), ToolCallPart(tool, arguments)])


def _answer(text: str) -> ModelResponse:
    return ModelResponse(parts=[TextPart(text)])


def demo_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    prompt = user_prompt(messages)
    results = tool_results(messages)
    name = _name(prompt)
    if "complain" in prompt:
        if not results:
            return _call(
                "This is about a customer; search_accounts searches customers and their accounts.",
                "search_accounts",
                {"text": name},
            )
        if len(results) == 1:
            return _call(
                "The account holds no complaints; the support log may.", "ticket_log", {"person": name}
            )
        latest = results[-1].data["entries"][-1]
        return _answer(f"{name} last complained about: {latest['summary']} ({latest['id']}).")
    if "write to us" in prompt:
        if not results:
            return _call(
                "A question about a customer: search_accounts holds the customers.",
                "search_accounts",
                {"text": name},
            )
        account = results[-1].data["accounts"][0]
        return _answer(f"{name}'s account shows nothing written: {account['plan']} plan, {account['city']}.")
    if "message" in prompt:
        tool = next(t for t in info.function_tools if t.name == "list_messages")
        order = tool.parameters_json_schema["properties"].get("order", {})
        if "newest" in str(order.get("description", "")).lower():
            if not results:
                return _call("The newest first.", "list_messages", {"customer": name, "order": "desc"})
            return _answer(f"The last message is {results[0].data['messages'][0]['id']}.")
        if not results or results[-1].data.get("more"):
            page = len(results) + 1
            return _call(f"Reading page {page}.", "list_messages", {"customer": name, "page": page})
        return _answer(f"The last message is {results[-1].data['messages'][-1]['id']}.")
    if "plan" in prompt:
        if len(results) < 2:
            return _call("Looking the account up.", "search_accounts", {"text": name})
        return _answer(f"{name} is on the {results[-1].data['accounts'][0]['plan']} plan.")
    order_id = re.search(r"\bSO-\d+\b", prompt)
    if not results:
        return _call(
            "Looking the order up.", "order_status", {"order_id": order_id.group(0) if order_id else ""}
        )
    return _answer(f"The status could not be read: {results[-1].text}")
