"""A small calendar MCP server for the correctness tests: meetings with attendees, and a text tool.

Tools:
- `find_meetings(topic)`: the meetings whose title contains `topic`, as structured records
  (`id`, `title`, `day`, `room`, `attendees`), so several meetings' attendees are seen at once;
- `get_meeting(meeting_id)`: one meeting's record;
- `meeting_notes(meeting_id)`: the minutes as plain text with a time stamp, no structured content
  (a text-returning server: its hours, minutes and ids are not what a task asks for);
- `room_of(meeting_id)`: the room's name as a bare string.
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

app = MCPServer("meetings", log_level="WARNING")
# Every tool only reads, and says so: `check` probes and `baseline` replays only such tools.
READ_ONLY = ToolAnnotations(
    readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False
)

MEETINGS = [
    {
        "id": "m-41",
        "title": "Budget review",
        "day": "2026-03-02",
        "room": "Lindgren room",
        "attendees": ["Ingrid Falk", "Tobias Brandt", "Mei Chen"],
        "notes": "Budget approved at 13:15. The travel budget is frozen until the audit closes.",
    },
    {
        "id": "m-42",
        "title": "Budget follow-up",
        "day": "2026-03-09",
        "room": "Harbour room",
        "attendees": ["Ingrid Falk", "Oskar Lund", "Priya Nair"],
        "notes": "Follow-up started 10:00. Oskar Lund will draft the hiring plan by Friday.",
    },
    {
        "id": "m-43",
        "title": "Roadmap planning",
        "day": "2026-03-11",
        "room": "Lindgren room",
        "attendees": ["Mei Chen", "Oskar Lund"],
        "notes": "Roadmap agreed at 15:30.",
    },
]


def _record(meeting: dict) -> dict:
    return {key: meeting[key] for key in ("id", "title", "day", "room", "attendees")}


def _meeting(meeting_id: str) -> dict:
    for meeting in MEETINGS:
        if meeting["id"] == meeting_id:
            return meeting
    raise ToolError(f"no meeting {meeting_id}")


@app.tool(description="Meetings whose title contains the topic, with their attendees.", annotations=READ_ONLY)
def find_meetings(topic: str) -> dict:
    return {"meetings": [_record(m) for m in MEETINGS if topic.lower() in m["title"].lower()]}


@app.tool(description="One meeting by id, with its attendees.", annotations=READ_ONLY)
def get_meeting(meeting_id: str) -> dict:
    return _record(_meeting(meeting_id))


@app.tool(description="The minutes of a meeting, as text.", structured_output=False, annotations=READ_ONLY)
def meeting_notes(meeting_id: str) -> str:
    meeting = _meeting(meeting_id)
    return f"[{meeting['day']}T13:15:00Z] minutes {meeting['id']}\n{meeting['notes']}"


@app.tool(description="The name of the room a meeting is in.", structured_output=False, annotations=READ_ONLY)
def room_of(meeting_id: str) -> str:
    return _meeting(meeting_id)["room"]


if __name__ == "__main__":
    app.run()
