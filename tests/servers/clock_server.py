"""A server whose answers move: the time now, a random ticket id and a random number per call (stdio).

`tasks propose` must write no task about them: the time is within a day of any
run, an id is not asked for, and the number differs between two replays. The
desk a ticket goes to is the one stable answer.
"""

from __future__ import annotations

import random
import uuid
from datetime import datetime
from typing import Literal
from zoneinfo import ZoneInfo

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

READ_ONLY = ToolAnnotations(
    readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False
)
app = MCPServer("clock", log_level="WARNING")


@app.tool(description="The time now in a time zone.", annotations=READ_ONLY)
def now(timezone: Literal["UTC", "Europe/Paris"]) -> dict:
    moment = datetime.now(ZoneInfo(timezone))
    return {"time": moment.isoformat(timespec="seconds"), "zone": timezone}


@app.tool(description="A new ticket number in a queue.", annotations=READ_ONLY)
def new_ticket(queue: Literal["support", "billing"]) -> dict:
    return {"ticket": str(uuid.uuid4()), "desk": f"{queue} desk"}


@app.tool(description="A lucky number for a player, drawn anew each time.", annotations=READ_ONLY)
def lucky_number(player: Literal["north", "south"]) -> dict:
    return {"player": player, "draw": random.randint(10, 10**9)}


if __name__ == "__main__":
    app.run()
