"""A team handbook over MCP (stdio) whose tools answer in plain text, as many published servers do.

The content is a team's notes (projects, meetings, recipes) and its people; no
tool returns JSON or structuredContent. Tools (all read-only, annotated so):

- `list_notes()`: `Notes (14):` then one `- Title (slug)` line per note;
- `read_note(slug)`: the note as markdown: `# Title`, `author:`, `status:`,
  `updated:` and `tags:` lines, an `## Attendees` or `## Ingredients` list, a body;
- `search_notes(query)`: the notes whose text holds every word, as lines like
  `list_notes`, or `No notes match.`;
- `list_people()`: one block of `Name:` / `Team:` / `Role:` / `Joined:` lines per person;
- `person(name)`: one person's block, with their `Email:`.

Run it with `python handbook_server.py` (stdio).
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

READ_ONLY = ToolAnnotations(
    readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False
)
app = MCPServer("handbook", log_level="WARNING")

NOTES = [
    ("harbour-survey", "Harbour survey", "Ines Okafor", "open", "2026-03-02", "field, water", "Attendees",
     ["Ines Okafor", "Tomas Reyes"], "Depth readings along the north pier, taken at low tide."),
    ("moss-inventory", "Moss inventory", "Mara Ellison", "done", "2026-01-15", "field", "Attendees",
     ["Mara Ellison"], "Forty-one species recorded in the old quarry."),
    ("budget-2026", "Budget 2026", "Tomas Reyes", "open", "2026-02-20", "money", "Attendees",
     ["Tomas Reyes", "Gil Andersen", "Ines Okafor"], "Travel is capped at the spring level."),
    ("kitchen-rota", "Kitchen rota", "Gil Andersen", "done", "2025-12-01", "office", "Attendees",
     ["Gil Andersen"], "Weekly, by team, starting with the harbour team."),
    ("seaweed-crisps", "Seaweed crisps", "Mara Ellison", "open", "2026-04-11", "food", "Ingredients",
     ["dulse", "rapeseed oil", "sea salt"], "Bake the dulse until it snaps."),
    ("lentil-soup", "Red lentil soup", "Ines Okafor", "done", "2026-02-03", "food", "Ingredients",
     ["red lentils", "onion", "cumin", "lemon"], "Simmer for twenty minutes."),
    ("offsite-plan", "Offsite plan", "Priya Nair", "open", "2026-05-06", "office, travel", "Attendees",
     ["Priya Nair", "Mara Ellison", "Oskar Lund", "Gil Andersen"], "Two days by the lake in June."),
    ("pier-repairs", "Pier repairs", "Oskar Lund", "open", "2026-03-28", "field, water", "Attendees",
     ["Oskar Lund", "Ines Okafor"], "Replace the rotten planks before the survey boat docks."),
    ("hiring-plan", "Hiring plan", "Priya Nair", "done", "2026-01-30", "people", "Attendees",
     ["Priya Nair", "Tomas Reyes"], "Two engineers for the harbour team by autumn."),
    ("barley-bread", "Barley bread", "Gil Andersen", "open", "2026-03-15", "food", "Ingredients",
     ["barley flour", "yeast", "honey"], "Prove overnight in the cold room."),
    ("audit-notes", "Audit notes", "Tomas Reyes", "done", "2026-02-27", "money", "Attendees",
     ["Tomas Reyes", "Priya Nair"], "The auditors asked for the travel receipts."),
    ("tide-tables", "Tide tables", "Ines Okafor", "open", "2026-04-02", "water", "Attendees",
     ["Ines Okafor"], "Spring tides peak on the ninth."),
    ("quarry-walk", "Quarry walk", "Mara Ellison", "done", "2025-11-19", "field", "Attendees",
     ["Mara Ellison", "Oskar Lund"], "Bring boots; the lower path floods."),
    ("retro-march", "March retrospective", "Oskar Lund", "open", "2026-04-01", "office", "Attendees",
     ["Oskar Lund", "Priya Nair", "Ines Okafor"], "Fewer meetings, longer focus blocks."),
]  # fmt: skip
PEOPLE = [
    ("Ines Okafor", "Harbour", "Engineer", "2021-04-12", "ines.okafor@handbook.example"),
    ("Tomas Reyes", "Finance", "Controller", "2019-09-01", "tomas.reyes@handbook.example"),
    ("Mara Ellison", "Field", "Botanist", "2022-02-14", "mara.ellison@handbook.example"),
    ("Gil Andersen", "Office", "Coordinator", "2018-06-25", "gil.andersen@handbook.example"),
    ("Priya Nair", "People", "Lead", "2020-11-03", "priya.nair@handbook.example"),
    ("Oskar Lund", "Harbour", "Technician", "2023-08-21", "oskar.lund@handbook.example"),
]


def _line(note: tuple) -> str:
    return f"- {note[1]} ({note[0]})"


def _markdown(note: tuple) -> str:
    slug, title, author, status, updated, tags, section, items, body = note
    listed = "\n".join(f"- {item}" for item in items)
    return (
        f"# {title}\nauthor: {author}\nstatus: {status}\nupdated: {updated}\ntags: {tags}\n\n"
        f"## {section}\n{listed}\n\n{body}\n"
    )


def _person(person: tuple, email: bool = False) -> str:
    name, team, role, joined, address = person
    block = f"Name: {name}\nTeam: {team}\nRole: {role}\nJoined: {joined}"
    return block + (f"\nEmail: {address}" if email else "")


@app.tool(
    description="Every note of the handbook: its title and slug.",
    annotations=READ_ONLY,
    structured_output=False,
)
def list_notes() -> str:
    return f"Notes ({len(NOTES)}):\n" + "\n".join(_line(note) for note in NOTES)


@app.tool(
    description="One note, as markdown, by its slug (from list_notes).",
    annotations=READ_ONLY,
    structured_output=False,
)
def read_note(slug: str) -> str:
    for note in NOTES:
        if note[0] == slug:
            return _markdown(note)
    raise ToolError(f"no note with slug {slug!r}")


@app.tool(
    description="Notes whose text contains every word of the query.",
    annotations=READ_ONLY,
    structured_output=False,
)
def search_notes(query: str) -> str:
    wanted = query.lower().split()
    hits = [note for note in NOTES if all(word in _markdown(note).lower() for word in wanted)]
    if not hits:
        return "No notes match."
    return f"{len(hits)} notes match:\n" + "\n".join(_line(note) for note in hits)


@app.tool(
    description="Everyone on the team: name, team, role and the day they joined.",
    annotations=READ_ONLY,
    structured_output=False,
)
def list_people() -> str:
    return "\n\n".join(_person(person) for person in PEOPLE)


@app.tool(
    description="One person by name, with their email address.",
    annotations=READ_ONLY,
    structured_output=False,
)
def person(name: str) -> str:
    for entry in PEOPLE:
        if entry[0].lower() == name.strip().lower():
            return _person(entry, email=True)
    raise ToolError(f"nobody is called {name!r}")


if __name__ == "__main__":
    app.run()
