"""roomdesk: a meeting-room calendar over MCP (stdio), the detector-accuracy corpus's server.

Its data is built in memory at start-up from a fixed seed (rooms, people,
bookings from 2025-01-01 to 2026-06-30), so every run of every client sees the
same rows. The server has planted problems, each described in README.md beside
this file with the task that meets it:

- `list_bookings` has no title or organiser filter and no ordering, and takes a
  window of at most 31 days: "when was the first X" needs a walk over windows;
- `room_history` pages a room's bookings oldest first, ten a page, with no
  order or date argument: "the latest booking" needs every page;
- `room_details` returns a floor-plan SVG and a long maintenance log with the
  one field a task needs, and has no way to ask for less;
- `find_people` builds its SQL by pasting the name into a string, so a name
  with an apostrophe ("O'Neill") fails with an SQL syntax error;
- `room_bookings` is named like a room's bookings but returns its booking
  rules; the bookings come from `list_bookings`.

- `list_equipment` pages the rooms' equipment ten a page in inventory order
  (by room), with no order or filter argument: "the most recently bought item"
  may sit on page 1, but nothing there says so until every page is read.

`get_attendees` pages attendees five at a time; reading all pages to list
everyone is a legitimate walk, not a planted problem.
"""

from __future__ import annotations

import random
import sqlite3
from datetime import date, timedelta
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

READ_ONLY = ToolAnnotations(
    readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False
)

FIRST_DAY = date(2025, 1, 1)
LAST_DAY = date(2026, 6, 30)
MAX_WINDOW_DAYS = 31
HISTORY_PAGE = 10
ATTENDEE_PAGE = 5
EQUIPMENT_PAGE = 10

ROOMS = [
    (1, "Orion", 2, 12, "Lift lobby B, then left; level threshold."),
    (2, "Vega", 2, 6, "Step-free access from the east lift; the door opens automatically."),
    (3, "Lyra", 1, 4, "Ground floor by reception; step-free."),
    (4, "Atlas", 3, 20, "Two doors; the north door has a ramp."),
    (5, "Nova", 3, 8, "Stairs or the west lift; narrow door (80 cm)."),
    (6, "Cygnus", 3, 10, "West lift; level threshold."),
    (7, "Draco", 1, 16, "Garden level; ramp from the car park."),
    (8, "Pavo", 4, 6, "Top floor, west lift only."),
]
PEOPLE = [
    ("Dana Kim", "Finance"), ("Sean O'Neill", "Facilities"), ("Priya Natarajan", "Engineering"),
    ("Marcus Bell", "Engineering"), ("Ines Duarte", "Design"), ("Tomasz Nowak", "Sales"),
    ("Aiko Tanaka", "Engineering"), ("Bruno Costa", "Finance"), ("Chloe Martin", "People"),
    ("Deepak Rao", "Engineering"), ("Elena Petrova", "Legal"), ("Farah Haddad", "Design"),
    ("George Adams", "Sales"), ("Hana Novak", "Support"), ("Ivan Horvat", "Support"),
    ("Julia Weber", "Marketing"), ("Kofi Mensah", "Engineering"), ("Lena Fischer", "Marketing"),
    ("Mateo Rossi", "Sales"), ("Nadia Ali", "People"), ("Oscar Lind", "Engineering"),
    ("Paula Silva", "Finance"), ("Quinn Murphy", "Support"), ("Rosa Jimenez", "Legal"),
    ("Sam Okafor", "Engineering"), ("Tara Byrne", "Design"), ("Uma Shah", "Marketing"),
    ("Victor Hugo", "Facilities"),
]  # fmt: skip
TITLES = [
    "Team stand-up", "Design crit", "1:1", "Customer call", "Hiring panel", "Roadmap sync",
    "Incident review", "Vendor call", "Sprint planning", "Sprint review", "Brown-bag lunch",
    "Interview", "Onboarding session", "Retro", "Sales pipeline", "Budget check-in",
]  # fmt: skip
SLOTS = ["09:00", "10:00", "11:00", "13:00", "14:00", "15:00", "16:00"]

# Bookings the tasks ask about: (day, room id, start, end, title, organiser, attendees).
ALL_HANDS = [
    "Dana Kim", "Priya Natarajan", "Marcus Bell", "Ines Duarte", "Tomasz Nowak", "Aiko Tanaka",
    "Bruno Costa", "Chloe Martin", "Deepak Rao", "Elena Petrova", "Farah Haddad", "George Adams",
]  # fmt: skip
BUDGET_REVIEW = [
    "Dana Kim", "Bruno Costa", "Paula Silva", "Elena Petrova", "Chloe Martin", "Marcus Bell",
    "Julia Weber", "Victor Hugo",
]  # fmt: skip
PLANTED: list[tuple[date, int, str, str, str, str, list[str]]] = [
    (date(2025, 4, 7), 1, "10:00", "12:00", "Quarterly planning", "Dana Kim", ALL_HANDS[:6]),
    (date(2025, 7, 7), 1, "10:00", "12:00", "Quarterly planning", "Dana Kim", ALL_HANDS[:6]),
    (date(2025, 10, 6), 4, "10:00", "12:00", "Quarterly planning", "Dana Kim", ALL_HANDS[:6]),
    (date(2026, 1, 12), 1, "10:00", "12:00", "Quarterly planning", "Dana Kim", ALL_HANDS[:6]),
    (date(2026, 2, 12), 6, "14:00", "15:00", "Budget review", "Dana Kim", BUDGET_REVIEW),
    (date(2026, 3, 2), 4, "10:00", "11:00", "All-hands", "Chloe Martin", ALL_HANDS),
    (date(2026, 3, 10), 1, "09:00", "10:00", "Design crit", "Ines Duarte", ["Farah Haddad", "Tara Byrne"]),
    (date(2026, 3, 10), 1, "11:00", "11:30", "Vendor call", "Tomasz Nowak", ["Mateo Rossi"]),
    (date(2026, 3, 10), 1, "14:00", "15:30", "Sprint review", "Priya Natarajan",
     ["Aiko Tanaka", "Sam Okafor"]),
    (date(2026, 6, 29), 3, "15:00", "16:00", "Contract signing", "Elena Petrova", ["Rosa Jimenez"]),
]  # fmt: skip
EQUIPMENT_ITEMS = [
    "Screen", "Whiteboard", "Conference phone", "Webcam", "Projector", "Flip chart", "Speaker",
    "HDMI switch", "Document camera", "Wireless presenter",
]  # fmt: skip
# The one item bought most recently: Orion's, so on page 1 of the inventory (ordered by room).
NEWEST_EQUIPMENT = (1, "Video bar", "2026-05-18", 1290)
PLANTED_TITLES = {"Quarterly planning", "Budget review", "All-hands", "Contract signing"}


def _end(start: str) -> str:
    hour, minute = start.split(":")
    return f"{int(hour) + 1:02d}:{minute}"


def build_db() -> sqlite3.Connection:
    """The calendar, the same on every start: random choices come from a fixed seed."""
    rng = random.Random(20260301)
    db = sqlite3.connect(":memory:", check_same_thread=False)
    db.executescript(
        """
        CREATE TABLE rooms (id INTEGER PRIMARY KEY, name TEXT, floor INTEGER, capacity INTEGER,
                            access_note TEXT);
        CREATE TABLE people (id INTEGER PRIMARY KEY, name TEXT, team TEXT, email TEXT);
        CREATE TABLE bookings (id INTEGER PRIMARY KEY, room_id INTEGER, day TEXT, start TEXT,
                               end_time TEXT, title TEXT, organizer_id INTEGER);
        CREATE TABLE attendees (booking_id INTEGER, person_id INTEGER);
        CREATE TABLE equipment (id INTEGER PRIMARY KEY, room_id INTEGER, item TEXT, bought TEXT,
                                price_eur INTEGER);
        """
    )
    db.executemany("INSERT INTO rooms VALUES (?, ?, ?, ?, ?)", ROOMS)
    people = {}
    for index, (name, team) in enumerate(PEOPLE, start=1):
        email = name.lower().replace("'", "").replace(" ", ".") + "@example.org"
        db.execute("INSERT INTO people VALUES (?, ?, ?, ?)", (index, name, team, email))
        people[name] = index
    planted_days = {(entry[0], entry[1]) for entry in PLANTED}
    rows: list[tuple[date, int, str, str, str, int, list[int]]] = []
    day = FIRST_DAY
    while day <= LAST_DAY:
        if day.weekday() < 5:
            for room_id, *_ in ROOMS:
                chance = 0.08 if room_id == 3 else 0.15
                if (day, room_id) in planted_days or rng.random() >= chance:
                    continue
                start = rng.choice(SLOTS)
                organizer = rng.randint(1, len(PEOPLE))
                invited = rng.sample(range(1, len(PEOPLE) + 1), rng.randint(1, 5))
                rows.append((day, room_id, start, _end(start), rng.choice(TITLES), organizer, invited))
        day += timedelta(days=1)
    for day, room_id, start, end, title, organizer, invited in PLANTED:
        rows.append((day, room_id, start, end, title, people[organizer], [people[n] for n in invited]))
    rows.sort(key=lambda row: (row[0], row[2], row[1]))
    for booking_id, (day, room_id, start, end, title, organizer, invited) in enumerate(rows, start=1):
        db.execute(
            "INSERT INTO bookings VALUES (?, ?, ?, ?, ?, ?, ?)",
            (booking_id, room_id, day.isoformat(), start, end, title, organizer),
        )
        db.executemany("INSERT INTO attendees VALUES (?, ?)", [(booking_id, p) for p in invited])
    equipment: list[tuple[int, str, str, int]] = [NEWEST_EQUIPMENT]
    for room_id, *_ in ROOMS:
        for item in rng.sample(EQUIPMENT_ITEMS, rng.randint(3, 5)):
            bought = date(2022, 1, 3) + timedelta(days=rng.randint(0, 1500))  # up to 2026-02-11
            equipment.append((room_id, item, bought.isoformat(), rng.randrange(40, 2400, 10)))
    equipment.sort(key=lambda row: (row[0], row[1]))
    db.executemany(
        "INSERT INTO equipment VALUES (?, ?, ?, ?, ?)",
        [(index, *row) for index, row in enumerate(equipment, start=1)],
    )
    db.commit()
    return db


DB = build_db()
app = MCPServer("roomdesk", log_level="WARNING")


def _rows(sql: str, *args: Any) -> list[dict[str, Any]]:
    cursor = DB.execute(sql, args)
    names = [column[0] for column in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def _room(room_id: int) -> dict[str, Any]:
    found = _rows("SELECT id, name, floor, capacity, access_note FROM rooms WHERE id = ?", room_id)
    if not found:
        raise ToolError(f"no room with id {room_id}; list_rooms gives the ids")
    return found[0]


def _day(text: str, name: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise ToolError(f"{name} must be a date YYYY-MM-DD (got {text!r})") from None


@app.tool(description="Every meeting room: id, name, floor and seats (capacity).", annotations=READ_ONLY)
def list_rooms() -> dict[str, Any]:
    return {"rooms": _rows("SELECT id, name, floor, capacity FROM rooms ORDER BY id")}


def _floor_plan(room_id: int) -> str:
    rng = random.Random(room_id)
    points = " ".join(f"L{rng.randint(0, 999)},{rng.randint(0, 999)}" for _ in range(1800))
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 1000 1000"><path d="M0,0 {points} Z"/></svg>'
    )


def _maintenance_log(room_id: int) -> list[dict[str, str]]:
    rng = random.Random(1000 + room_id)
    jobs = [
        "Projector lamp replaced", "Chairs cleaned", "HVAC filter changed", "Whiteboard resurfaced",
        "Cable tray inspected", "Light fitting repaired", "Carpet shampooed", "Blinds adjusted",
    ]  # fmt: skip
    day = FIRST_DAY
    log = []
    for _ in range(160):
        day += timedelta(days=rng.randint(1, 4))
        log.append({"date": day.isoformat(), "job": rng.choice(jobs), "by": "Facilities desk"})
    return log


@app.tool(
    description="Everything about one room: name, floor, capacity, access note, equipment, floor plan "
    "and maintenance log.",
    annotations=READ_ONLY,
)
def room_details(room_id: int) -> dict[str, Any]:
    room = _room(room_id)
    return {
        **room,
        "equipment": ["screen", "whiteboard", "conference phone"],
        "floor_plan_svg": _floor_plan(room_id),
        "maintenance_log": _maintenance_log(room_id),
    }


@app.tool(
    description="Bookings between date_from and date_to (inclusive, YYYY-MM-DD, at most 31 days apart), "
    "optionally of one room: id, title, room, day, start and end.",
    annotations=READ_ONLY,
)
def list_bookings(date_from: str, date_to: str, room_id: int | None = None) -> dict[str, Any]:
    first, last = _day(date_from, "date_from"), _day(date_to, "date_to")
    if last < first:
        raise ToolError("date_to is before date_from")
    if (last - first).days >= MAX_WINDOW_DAYS:
        raise ToolError(f"the window may span at most {MAX_WINDOW_DAYS} days")
    sql = (
        "SELECT b.id, b.title, r.name AS room, b.day, b.start, b.end_time AS end FROM bookings b "
        "JOIN rooms r ON r.id = b.room_id WHERE b.day BETWEEN ? AND ?"
    )
    args: list[Any] = [first.isoformat(), last.isoformat()]
    if room_id is not None:
        _room(room_id)
        sql += " AND b.room_id = ?"
        args.append(room_id)
    return {"bookings": _rows(sql + " ORDER BY b.id", *args)}


@app.tool(
    description="How many bookings there are between date_from and date_to (inclusive, YYYY-MM-DD), "
    "optionally of one room and/or one organiser (a person id from find_people).",
    annotations=READ_ONLY,
)
def count_bookings(
    date_from: str, date_to: str, room_id: int | None = None, organizer_id: int | None = None
) -> dict[str, int]:
    first, last = _day(date_from, "date_from"), _day(date_to, "date_to")
    sql = "SELECT COUNT(*) FROM bookings WHERE day BETWEEN ? AND ?"
    args: list[Any] = [first.isoformat(), last.isoformat()]
    if room_id is not None:
        sql += " AND room_id = ?"
        args.append(room_id)
    if organizer_id is not None:
        sql += " AND organizer_id = ?"
        args.append(organizer_id)
    return {"count": DB.execute(sql, args).fetchone()[0]}


@app.tool(
    description="A room's bookings, ten a page: id, title, day, start and organiser. `page` starts at 1.",
    annotations=READ_ONLY,
)
def room_history(room_id: int, page: int = 1) -> dict[str, Any]:
    _room(room_id)
    rows = _rows(
        "SELECT b.id, b.title, b.day, b.start, p.name AS organizer FROM bookings b "
        "JOIN people p ON p.id = b.organizer_id WHERE b.room_id = ? ORDER BY b.day, b.start",
        room_id,
    )
    pages = max(1, -(-len(rows) // HISTORY_PAGE))
    if page < 1 or page > pages:
        raise ToolError(f"page must be between 1 and {pages}")
    chunk = rows[(page - 1) * HISTORY_PAGE : page * HISTORY_PAGE]
    return {"room_id": room_id, "page": page, "pages": pages, "bookings": chunk}


@app.tool(description="One booking by id: title, room, day, start, end and organiser.", annotations=READ_ONLY)
def get_booking(booking_id: int) -> dict[str, Any]:
    found = _rows(
        "SELECT b.id, b.title, r.name AS room, b.day, b.start, b.end_time AS end, p.name AS organizer "
        "FROM bookings b JOIN rooms r ON r.id = b.room_id JOIN people p ON p.id = b.organizer_id "
        "WHERE b.id = ?",
        booking_id,
    )
    if not found:
        raise ToolError(f"no booking with id {booking_id}")
    return found[0]


@app.tool(
    description="The people invited to a booking, five a page: name and email. `page` starts at 1.",
    annotations=READ_ONLY,
)
def get_attendees(booking_id: int, page: int = 1) -> dict[str, Any]:
    get_booking(booking_id)
    rows = _rows(
        "SELECT p.name, p.email FROM attendees a JOIN people p ON p.id = a.person_id "
        "WHERE a.booking_id = ? ORDER BY p.id",
        booking_id,
    )
    pages = max(1, -(-len(rows) // ATTENDEE_PAGE))
    if page < 1 or page > pages:
        raise ToolError(f"page must be between 1 and {pages}")
    chunk = rows[(page - 1) * ATTENDEE_PAGE : page * ATTENDEE_PAGE]
    return {"booking_id": booking_id, "page": page, "pages": pages, "attendees": chunk}


@app.tool(
    description="The rooms' equipment, ten a page: id, item, room, the day it was bought and its price "
    "in euros. `page` starts at 1.",
    annotations=READ_ONLY,
)
def list_equipment(page: int = 1) -> dict[str, Any]:
    # Planted: inventory order (by room, then item), no order or filter argument.
    rows = _rows(
        "SELECT e.id, e.item, r.name AS room, e.bought, e.price_eur FROM equipment e "
        "JOIN rooms r ON r.id = e.room_id ORDER BY e.id"
    )
    pages = max(1, -(-len(rows) // EQUIPMENT_PAGE))
    if page < 1 or page > pages:
        raise ToolError(f"page must be between 1 and {pages}")
    chunk = rows[(page - 1) * EQUIPMENT_PAGE : page * EQUIPMENT_PAGE]
    return {"page": page, "pages": pages, "equipment": chunk}


@app.tool(
    description="People whose name contains `name`: id, name, team and email.",
    annotations=READ_ONLY,
)
def find_people(name: str) -> dict[str, Any]:
    # Planted: the name is pasted into the SQL, so an apostrophe breaks the statement; the
    # database's message is passed on, as servers that wrap their driver's errors do.
    sql = f"SELECT id, name, team, email FROM people WHERE name LIKE '%{name}%' ORDER BY id"
    try:
        cursor = DB.execute(sql)
    except sqlite3.Error as exc:
        raise ToolError(f"database error: {exc}") from None
    names = [column[0] for column in cursor.description]
    return {"people": [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]}


@app.tool(
    description="The booking rules of one room: who may book it, the longest booking and how far ahead.",
    annotations=READ_ONLY,
)
def room_bookings(room_id: int) -> dict[str, Any]:
    room = _room(room_id)
    return {
        "room_id": room_id,
        "room": room["name"],
        "bookable_by": "all staff" if room["capacity"] < 16 else "team leads",
        "max_duration_minutes": 120 if room["capacity"] < 16 else 240,
        "book_ahead_days": 30,
        "approval_required": room["capacity"] >= 16,
    }


if __name__ == "__main__":
    app.run()
