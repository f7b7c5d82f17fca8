"""An SDK server that gets prompts, resources, templates, completions and subscriptions right.

For the checks of check/spec_features.py (PC-50…PC-69): every one of them
should PASS here. Its prompts validate their arguments and answer -32602 for
an unknown prompt or a missing argument; completions come from the same
lists the prompts and the template accept; `resources/subscribe` is served.
"""

from __future__ import annotations

import base64

import mcp_types
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError

TOPICS = ["gardening", "geology", "history"]
NOTES = {"first": "The first note.", "second": "The second note."}
PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


class FeaturesServer(MCPServer):
    """MCPServer answers -32603 for an unknown prompt or a missing argument; the specification asks -32602."""

    async def get_prompt(self, name, arguments=None, context=None):  # noqa: ANN001, ANN201
        prompt = self._prompt_manager.get_prompt(name)
        if prompt is None:
            raise MCPError(code=mcp_types.INVALID_PARAMS, message=f"Unknown prompt: {name}")
        missing = [
            arg.name for arg in prompt.arguments or [] if arg.required and arg.name not in (arguments or {})
        ]
        if missing:
            raise MCPError(code=mcp_types.INVALID_PARAMS, message=f"Missing required arguments: {missing}")
        return await super().get_prompt(name, arguments, context)


app = FeaturesServer("features", version="1.0")


@app.tool(description="Return a one-pixel image.", annotations=mcp_types.ToolAnnotations(readOnlyHint=True))
def pixel() -> list[mcp_types.ContentBlock]:
    data = base64.b64encode(PIXEL).decode()
    return [
        mcp_types.TextContent(type="text", text="a pixel"),
        mcp_types.ImageContent(type="image", data=data, mime_type="image/png"),
        mcp_types.ResourceLink(type="resource_link", uri="notes://note/first", name="first"),
    ]


@app.prompt(description="Ask about a topic.")
def ask(topic: str) -> str:
    if topic not in TOPICS:
        raise MCPError(code=mcp_types.INVALID_PARAMS, message=f"Unknown topic {topic!r}; one of {TOPICS}")
    return f"Tell me about {topic}."


@app.prompt(description="Greet the user.")
def greet() -> list[dict]:
    return [
        {"role": "user", "content": {"type": "text", "text": "Hello"}},
        {
            "role": "assistant",
            "content": {
                "type": "resource",
                "resource": {"uri": "notes://note/first", "mimeType": "text/plain", "text": NOTES["first"]},
            },
        },
    ]


@app.resource("notes://readme", description="What these notes are.", mime_type="text/plain")
def readme() -> str:
    return "Notes about things."


@app.resource("notes://pixel.png", description="A one-pixel image.", mime_type="image/png")
def pixel_png() -> bytes:
    return PIXEL


@app.resource("notes://note/{slug}", description="One note by its slug.", mime_type="text/plain")
def note(slug: str) -> str:
    if slug not in NOTES:
        raise MCPError(code=-32002, message=f"No note {slug!r}")
    return NOTES[slug]


@app.completion()
async def complete(ref, argument, context):  # noqa: ANN001, ANN201
    pool = TOPICS if argument.name == "topic" else list(NOTES) if argument.name == "slug" else []
    values = [value for value in pool if value.startswith(argument.value)]
    return mcp_types.Completion(values=values, total=len(values), has_more=False)


async def _subscribe(ctx, params):  # noqa: ANN001, ANN202
    return mcp_types.EmptyResult()


app._lowlevel_server.add_request_handler("resources/subscribe", mcp_types.SubscribeRequestParams, _subscribe)
app._lowlevel_server.add_request_handler(
    "resources/unsubscribe", mcp_types.UnsubscribeRequestParams, _subscribe
)


if __name__ == "__main__":
    app.run()
