"""Generate the email archive that the emailindex server searches.

The archive is synthetic but has to behave like a real mailbox: fifteen years of
threads between colleagues, vendors and clients, with replies and forwards,
realistic body lengths and enough vocabulary overlap that full-text queries
return noisy, ranked results. It is also a fixture: every build from the same
code yields the same rows (one seeded random.Random, no clock, no hash-ordered
iteration), so answers such as "the first email that mentions Ron Chinn" are
stable facts.

Rows are inserted in a shuffled order, so ids say nothing about dates.

    python archive.py --out archive.db
"""

from __future__ import annotations

import argparse
import os
import random
import sqlite3
import sys
import tempfile
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

SEED = 20130514
TARGET_EMAILS = 5000
FIRST_DAY = datetime(2012, 1, 2, 8, 0)
LAST_DAY = datetime(2026, 11, 30, 18, 0)
OWNER = "morgan"

SCHEMA = """
CREATE TABLE emails (
    id INTEGER PRIMARY KEY,
    thread_id TEXT NOT NULL,
    sender TEXT NOT NULL,
    sender_name TEXT NOT NULL,
    recipients TEXT NOT NULL,
    subject TEXT NOT NULL,
    body TEXT NOT NULL,
    date TEXT NOT NULL
);
CREATE INDEX emails_date ON emails(date);
CREATE INDEX emails_sender ON emails(sender);
CREATE INDEX emails_thread ON emails(thread_id);
CREATE VIRTUAL TABLE emails_fts USING fts5(
    subject, body, content='emails', content_rowid='id', tokenize='unicode61 remove_diacritics 2'
);
"""


@dataclass(frozen=True)
class Person:
    key: str
    name: str
    address: str
    first_year: int
    last_year: int
    weight: int
    topics: tuple[str, ...] = ()

    @property
    def first(self) -> str:
        return self.name.split()[0]


def _staff(
    key: str, name: str, years: tuple[int, int], weight: int, topics: str, domain: str = "harborpine.com"
) -> Person:
    local = name.lower().replace("á", "a").replace(" ", ".")
    return Person(key, name, f"{local}@{domain}", years[0], years[1], weight, tuple(topics.split()))


PEOPLE: tuple[Person, ...] = (
    _staff("morgan", "Morgan Ellis", (2012, 2026), 3, "planning budget board offsite"),
    _staff("dana", "Dana Whitfield", (2012, 2026), 12, "operations planning shipping vendors expenses"),
    _staff("gail", "Gail Ferreira", (2012, 2018), 4, "facilities parking holidays"),
    _staff("victor", "Victor Okafor", (2012, 2022), 6, "budget expenses audit vendors"),
    _staff("helen", "Helen Marsh", (2016, 2026), 4, "budget audit board"),
    _staff("tomas", "Tomás Ortega", (2017, 2026), 6, "release outage dashboard security"),
    _staff("priya", "Priya Raman", (2020, 2026), 6, "operations planning dashboard vendors"),
    _staff("keisha", "Keisha Brown", (2018, 2026), 4, "training hiring holidays"),
    _staff("liam", "Liam Novak", (2012, 2020), 4, "sales customers"),
    _staff("sofia", "Sofia Lindqvist", (2014, 2026), 5, "marketing newsletter customers"),
    _staff("arjun", "Arjun Mehta", (2013, 2026), 5, "outage security release"),
    _staff("beatrice", "Beatrice Hollis", (2012, 2016), 3, "hiring holidays training"),
    _staff("nadia", "Nadia Petrov", (2016, 2026), 3, "hiring holidays training"),
    _staff("carlos", "Carlos Mendes", (2015, 2026), 4, "customers shipping"),
    _staff("eleanor", "Eleanor Voss", (2012, 2019), 3, "board planning offsite"),
    _staff("marcus", "Marcus Bell", (2019, 2026), 3, "board planning offsite"),
    _staff("hannah", "Hannah Cole", (2021, 2026), 3, "dashboard planning"),
    _staff("owen", "Owen Price", (2012, 2026), 4, "sales customers marketing"),
    _staff("yuki", "Yuki Tanaka", (2018, 2026), 3, "release dashboard customers"),
    _staff("frank", "Frank Delaney", (2012, 2015), 2, "contracts audit"),
    _staff("grace", "Grace Adeyemi", (2016, 2026), 3, "contracts audit security"),
    Person("servicedesk", "IT Service Desk", "servicedesk@harborpine.com", 2012, 2026, 3, ("outage",)),
    Person("hr", "HR Team", "hr@harborpine.com", 2012, 2026, 2, ("holidays", "training")),
    _staff("paul", "Paul Hendricks", (2013, 2025), 3, "customers shipping", "keystonelogistics.com"),
    _staff("irene", "Irene Walsh", (2012, 2020), 2, "vendors marketing", "summitprint.com"),
    _staff("janet", "Janet Kim", (2017, 2026), 2, "dashboard planning contracts", "brightlineconsulting.com"),
    _staff("rashid", "Rashid Karimi", (2012, 2026), 2, "shipping vendors", "tidewaterfreight.com"),
)
BY_KEY = {p.key: p for p in PEOPLE}

# People who only appear in the storylines below, never in generated threads.
RON_VENDOR = Person("ron", "Ron Chinn", "ron.chinn@baypointmech.com", 2013, 2018, 0)
RON_STAFF = Person("ron", "Ron Chinn", "ron.chinn@harborpine.com", 2019, 2026, 0)
FACILITIES_DESK = Person("facdesk", "Facilities Desk", "facilities@harborpine.com", 2012, 2026, 0)

# ---------------------------------------------------------------------------
# Vocabulary. Placeholders in braces are filled per email by _Filler.
# ---------------------------------------------------------------------------

TOPICS: dict[str, dict[str, list[str]]] = {
    "operations": {
        "subjects": [
            "Weekly operations sync notes", "Warehouse staffing for {month}",
            "Operations metrics for {quarter}",
            "Returns backlog", "Carrier performance review", "Inventory count on {weekday}",
            "Late shipments from the east depot", "Operations dashboard numbers look off",
        ],
        "lines": [
            "The returns backlog is down to {num} cases, from {num2} at the start of the month.",
            "We processed {num3} orders last week, which is about {pct}% above the same week last year.",
            "Two of the pickers are out {weekday}, so I have asked the agency for temporary cover.",
            "On-time dispatch was {pct_high}% for the period; most misses were Friday afternoon loads.",
            "Can we agree on a cut-off time for same-day orders before the peak season starts?",
            "I walked the floor with {first} this morning and the new racking layout is working well.",
            "The cycle count for aisle {num} found a handful of mislabeled bins; they are corrected now.",
            "Let's review the carrier scorecards in the {weekday} sync instead of by email.",
            "Overtime for {month} came in at {num} hours, mostly in the packing team.",
            "I'd like to pilot the two-shift schedule at the north warehouse for {num} weeks.",
        ],
    },
    "planning": {
        "subjects": [
            "Planning for {year}", "{quarter} priorities", "Draft goals for next year", "Headcount plan",
            "Strategy session prep", "Roadmap review on {weekday}", "Annual plan: first draft",
        ],
        "lines": [
            "I have put a first draft of the {quarter} priorities in the shared folder; comments welcome.",
            "My suggestion is to keep the list to five goals and name one owner for each.",
            "We should decide on the headcount ask before the budget round closes on {date}.",
            "{first}, could you add the customer retention numbers to the appendix?",
            "The leadership team will review the plan on {weekday} at {time}.",
            "Last year we committed to too much at once; this time I'd rather under-promise.",
            "Please flag anything in the draft that depends on another team's work.",
            "The planning template has a new tab for risks and dependencies.",
            "I expect the final version to be circulated by {date}.",
        ],
    },
    "budget": {
        "subjects": [
            "Budget review for {quarter}", "{year} budget submission", "Cost centre report for {month}",
            "Forecast update", "Spend approval needed", "Variance explanation for {month}",
        ],
        "lines": [
            "The forecast for {quarter} is {amount}, roughly {pct}% under the original plan.",
            "Please send your cost centre updates to finance by {date}.",
            "The variance is mostly timing: the software renewals landed a month early.",
            "I need one more approval for the {amount} spend before the purchase order can go out.",
            "Travel is trending over budget again; can each team lead review their bookings?",
            "Finance will lock the numbers on {weekday}, so late changes will roll into next quarter.",
            "{first}, the spreadsheet still has last year's exchange rates in the summary tab.",
            "We can absorb the overrun if the hiring freeze holds until {month}.",
        ],
    },
    "expenses": {
        "subjects": [
            "Expense report for {month}", "Receipts missing from your claim", "Corporate card statement",
            "Mileage claims", "Reimbursement question",
        ],
        "lines": [
            "Your expense report for {month} is missing two receipts; please attach them in the portal.",
            "The claim for {amount} has been approved and will be paid with the next payroll.",
            "Client dinners need the attendee names listed, otherwise audit will query them.",
            "Mileage is now reimbursed at the new rate from the first of the month.",
            "I have submitted the hotel invoice separately because it was booked by the travel desk.",
            "Could you confirm which cost centre the conference tickets should go to?",
        ],
    },
    "audit": {
        "subjects": [
            "Year-end audit schedule", "Audit request list", "Controls testing",
            "Auditor questions on inventory",
            "Audit findings follow-up",
        ],
        "lines": [
            "The auditors will be on site from {date} for about {num} days.",
            "They have asked for the signed contracts for all vendors above {amount} a year.",
            "One finding from last year is still open: segregation of duties in accounts payable.",
            "Please keep the meeting room on the second floor free for them that week.",
            "I have uploaded the reconciliations to the audit portal.",
            "{first}, can you walk them through the inventory count procedure on {weekday}?",
        ],
    },
    "board": {
        "subjects": [
            "Board pack for {month}", "Board meeting agenda", "Slides for the board update",
            "Questions from the board", "Board dinner logistics",
        ],
        "lines": [
            "The board pack needs to go out a week before the meeting on {date}.",
            "Please keep your section to two slides and one page of notes.",
            "The chair asked for a clearer view of cash flow in the next update.",
            "I will present the operations numbers; {first} will cover sales.",
            "We had good questions about customer concentration; I'll circulate answers on {weekday}.",
            "The dinner is booked for {time} at the usual place near the harbour.",
        ],
    },
    "offsite": {
        "subjects": [
            "Team offsite {year}", "Offsite agenda", "Offsite venue options", "Travel for the offsite",
            "Offsite follow-ups",
        ],
        "lines": [
            "We have three venue options for the offsite; my preference is the lodge by the lake.",
            "The agenda has a half day on planning and a half day on team building.",
            "Please book travel by {date} so we get the group rate.",
            "Thank you all for a great offsite; the notes and photos are in the shared folder.",
            "Dietary requirements to {first} by {weekday}, please.",
            "The bus leaves from the office at {time} sharp.",
        ],
    },
    "facilities": {
        "subjects": [
            "Heating on the third floor", "Kitchen refurbishment", "Fire drill on {weekday}",
            "Lift maintenance", "Meeting room bookings", "Cleaning contract", "Window repairs in room {room}",
        ],
        "lines": [
            "The heating on the third floor will be serviced on {weekday} morning.",
            "Room {room} is out of use until the window repair is finished.",
            "There will be a fire drill on {date} at {time}; please leave by the nearest exit.",
            "The lift will be out of service for maintenance for {num} hours.",
            "The kitchen refurbishment is running a week late because of a delayed delivery.",
            "Please remember to clear the fridge on Fridays.",
            "The cleaning contract renewal is due in {month}; I have asked for two quotes.",
            "If you notice a leak or a fault, log it with the facilities desk rather than by email.",
        ],
    },
    "parking": {
        "subjects": ["Parking permits for {year}", "Visitor parking", "Bike storage"],
        "lines": [
            "Parking permits for {year} are ready for collection from reception.",
            "Visitor spaces need to be booked a day in advance.",
            "The bike storage by the side entrance now has {num} extra racks.",
            "Please don't park in the loading bay, deliveries were blocked twice this week.",
        ],
    },
    "holidays": {
        "subjects": [
            "Holiday schedule for {year}", "Office closure over the holidays", "Leave requests for {month}",
            "Public holiday reminder",
        ],
        "lines": [
            "The office will be closed from {date} and will reopen after the new year.",
            "Please submit leave requests for {month} by the end of this week.",
            "Remember that the public holiday on {weekday} is a paid day off for everyone.",
            "We need at least two people on call in operations during the closure.",
            "The holiday calendar is updated in the HR portal.",
        ],
    },
    "training": {
        "subjects": [
            "Mandatory training reminder", "Security awareness course", "First aid training dates",
            "Manager training programme", "Training budget for {year}",
        ],
        "lines": [
            "The annual compliance course is due by {date}; it takes about {num} minutes.",
            "First aid training runs on {weekday} and {weekday2}; there are {num} places left.",
            "The manager programme has six sessions, one a month starting in {month}.",
            "Completion rates are at {pct_high}%, please nudge your teams.",
            "Each team has a training budget of {amount} for the year.",
        ],
    },
    "hiring": {
        "subjects": [
            "Interview schedule", "Candidate feedback", "Job description review", "Offer approval",
            "New starter on {weekday}", "Hiring plan for {quarter}",
        ],
        "lines": [
            "I have scheduled the interviews for {weekday} between {time} and lunch.",
            "Please add your feedback to the candidate tracker within a day of the interview.",
            "The second candidate was strong on operations but light on systems experience.",
            "The offer is ready for approval; the salary is within the band.",
            "{first} starts on {date}; the laptop and badge are ordered.",
            "Could you review the job description before it goes live on {weekday}?",
            "We had {num} applications in the first week, which is more than expected.",
        ],
    },
    "sales": {
        "subjects": [
            "Sales pipeline for {quarter}", "Pricing question from a prospect", "Quote for {client}",
            "Lost deal review", "Sales targets", "Renewal with {client}",
        ],
        "lines": [
            "The pipeline for {quarter} stands at {amount}, with {num} deals in late stage.",
            "{client} asked for a volume discount on the annual contract.",
            "We lost the tender on price; the winning bid was about {pct}% lower.",
            "The renewal with {client} is due on {date} and they have asked for a review call.",
            "I'd like a second opinion on the quote before it goes out on {weekday}.",
            "Targets for the next quarter are in the shared sheet.",
        ],
    },
    "customers": {
        "subjects": [
            "Escalation from {client}", "Customer feedback summary", "Delivery complaint",
            "Account review with {client}", "Service level report for {month}",
        ],
        "lines": [
            "{client} escalated a delayed delivery; the pallet was held at the depot for two days.",
            "Customer satisfaction for {month} was {pct_high}%, down slightly on last month.",
            "I have offered a credit of {amount} and a call with the account manager.",
            "The account review with {client} is booked for {weekday} at {time}.",
            "Most complaints this month were about tracking updates rather than the deliveries themselves.",
            "Can someone from operations join the call to explain the root cause?",
        ],
    },
    "shipping": {
        "subjects": [
            "Freight rates for {year}", "Container delays", "Customs paperwork", "Pallet damage claim",
            "Carrier contract renewal",
        ],
        "lines": [
            "Freight rates are going up by {pct}% from {month}.",
            "Two containers are delayed at the port; the new estimate is {date}.",
            "The customs broker needs the commercial invoices by {weekday}.",
            "We have filed a damage claim for {num} pallets.",
            "The carrier contract renewal is on the agenda for {weekday}.",
        ],
    },
    "vendors": {
        "subjects": [
            "Vendor review", "Quote comparison", "Supplier onboarding", "Invoice dispute with {vendor}",
            "Packaging supplier options",
        ],
        "lines": [
            "{vendor} sent a revised quote of {amount}, which is within our range.",
            "We compared three suppliers on price, lead time and service.",
            "The onboarding form needs bank details and a tax certificate.",
            "The invoice from {vendor} double-charges the delivery fee; I have asked for a credit note.",
            "Lead times from {vendor} have slipped to {num} weeks.",
        ],
    },
    "contracts": {
        "subjects": [
            "Contract review", "NDA for {client}", "Terms and conditions update", "Renewal notice",
            "Signature needed",
        ],
        "lines": [
            "Legal has reviewed the contract and suggested two changes to the liability clause.",
            "The NDA for {client} is ready to sign.",
            "The renewal notice period is ninety days, so we need to decide by {date}.",
            "Please sign the agreement in the e-signature tool by {weekday}.",
            "The updated terms take effect on the first of {month}.",
        ],
    },
    "marketing": {
        "subjects": [
            "Campaign plan for {quarter}", "Website refresh", "Trade show booth", "Case study with {client}",
            "Brochure print run",
        ],
        "lines": [
            "The campaign for {quarter} focuses on same-day delivery in the metro area.",
            "The website refresh goes live on {date}.",
            "We have booked a booth at the logistics expo in {month}.",
            "{client} agreed to a case study; the interview is on {weekday}.",
            "The brochure print run is {num3} copies.",
            "Click-through on the last newsletter was {pct}%.",
        ],
    },
    "newsletter": {
        "subjects": ["Company newsletter: {month} edition", "News from around the office", "Staff news"],
        "lines": [
            "This month we welcome {num} new colleagues across operations and sales.",
            "Congratulations to the packing team for a record month.",
            "The charity bake sale raised {amount}.",
            "The summer party is on {date}; details to follow.",
            "Please send stories for the next edition to the marketing team.",
        ],
    },
    "outage": {
        "subjects": [
            "Email outage this morning", "Network maintenance on {weekday}", "Printer issues",
            "VPN slow from home", "Planned downtime for the order system",
        ],
        "lines": [
            "Email was unavailable for about {num} minutes this morning; service is restored.",
            "The network will be down for maintenance on {weekday} from {time}.",
            "The printer on the second floor is jammed again; a technician is coming.",
            "Remote access is slow because of the upgrade; it should improve by {weekday}.",
            "The order system will be offline on {date} for the database upgrade.",
            "Please restart your laptop to pick up the update.",
        ],
    },
    "security": {
        "subjects": [
            "Phishing attempt reported", "Password policy change", "Laptop encryption check",
            "Security review findings",
        ],
        "lines": [
            "We received a phishing email pretending to be from the bank; please don't click the link.",
            "Passwords now need to be at least {num} characters long.",
            "Laptops that are not encrypted will be blocked from the network on {date}.",
            "The security review found {num} issues, none of them critical.",
            "Two-factor sign-in becomes mandatory from {month}.",
        ],
    },
    "release": {
        "subjects": [
            "Release notes for version {num}.{num2}", "Order portal release on {weekday}", "Bug triage",
            "Feature request from operations", "Test environment refresh",
        ],
        "lines": [
            "The order portal release is scheduled for {weekday} evening.",
            "We fixed {num} bugs in this release, including the duplicate invoice issue.",
            "Operations asked for a bulk edit for delivery dates; it is on the backlog.",
            "The test environment will be refreshed from production on {date}.",
            "Please report anything odd after the release in the support channel.",
        ],
    },
    "dashboard": {
        "subjects": [
            "Reporting dashboard update", "Data quality issue in the weekly report", "New metrics request",
            "Dashboard access", "KPI definitions",
        ],
        "lines": [
            "The weekly report double-counted returns; the fix is in.",
            "I added on-time dispatch and order accuracy to the dashboard.",
            "{first}, could you confirm the definition of an on-time delivery?",
            "Access to the dashboard is managed through the IT portal.",
            "The data refreshes every night at {time}.",
        ],
    },
}

GREETINGS = ["Hi {first},", "Hello {first},", "{first},", "Hi all,", "Hi team,", "Morning,", "Hi everyone,"]
REPLY_OPENERS = [
    "Thanks, that works for me.", "Agreed.", "Good point.", "Thanks for the update.",
    "Sounds good.", "I have a couple of questions.", "Quick follow-up on this.",
    "Sorry for the slow reply.", "Makes sense to me.", "Noted, thanks.",
]
FILLERS = [
    "Let me know if you have any questions.", "Happy to discuss on a call if that is easier.",
    "I will update the tracker once this is settled.", "No action needed from most of you.",
    "I have copied {first} for visibility.", "We can pick this up in the next team meeting.",
    "I will send a short summary afterwards.", "Please reply by {weekday} if you have concerns.",
    "The details are in the attached document.", "Thanks for pulling this together so quickly.",
]
CLOSINGS = ["Thanks,", "Best,", "Regards,", "Cheers,", "Thanks again,", "Best regards,"]
FORWARD_NOTES = [
    "Forwarding for your information.", "See below; can you take a look?", "FYI, see the thread below.",
    "Passing this on, as it affects your team.",
]

CLIENTS = ["Keystone Logistics", "Marlow Foods", "Beacon Outdoor", "Ashford Pharmacy", "Greenleaf Grocers",
           "Orion Furniture", "Castle Hardware", "Bluewater Marine"]
VENDORS = ["Summit Print", "Tidewater Freight", "Crate & Co", "Northgate Packaging", "Atlas Pallets"]
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]
THREAD_WIDE = ("client", "vendor", "month", "quarter", "year")
TIMES = ["9:00", "9:30", "10:00", "11:00", "13:30", "14:00", "15:00", "16:30"]


class _Filler(dict):
    """Placeholder values for one email, drawn on first use so every email reads consistently."""

    def __init__(self, rng: random.Random, when: datetime, first: str, shared: dict[str, str] | None = None):
        super().__init__(shared or {}, first=first)
        self.rng, self.when = rng, when

    def __missing__(self, key: str) -> str:
        rng, when = self.rng, self.when
        soon = when + timedelta(days=rng.randint(2, 40))
        draw = {
            "weekday": lambda: rng.choice(WEEKDAYS),
            "weekday2": lambda: rng.choice(WEEKDAYS),
            "month": lambda: MONTHS[soon.month - 1],
            "quarter": lambda: f"Q{(soon.month - 1) // 3 + 1}",
            "year": lambda: str(when.year + (1 if when.month >= 10 else 0)),
            "date": lambda: f"{MONTHS[soon.month - 1]} {soon.day}",
            "time": lambda: rng.choice(TIMES),
            "num": lambda: str(rng.randint(2, 40)),
            "num2": lambda: str(rng.randint(41, 90)),
            "num3": lambda: str(rng.randint(900, 4800)),
            "pct": lambda: str(rng.randint(2, 30)),
            "pct_high": lambda: str(rng.randint(71, 98)),
            "amount": lambda: f"${rng.randint(12, 480) * 100:,}",
            "client": lambda: rng.choice(CLIENTS),
            "vendor": lambda: rng.choice(VENDORS),
            "room": lambda: str(rng.choice([101, 104, 210, 212, 305, 318])),
        }
        self[key] = draw[key]()
        return self[key]


@dataclass
class Email:
    thread_id: str
    sender: Person
    recipients: list[Person]
    subject: str
    body: str
    date: datetime


def _active(when: datetime) -> list[Person]:
    return [p for p in PEOPLE if p.first_year <= when.year <= p.last_year]


def _compose(
    rng: random.Random,
    topic: str,
    person: Person,
    to: Person,
    when: datetime,
    reply: bool,
    shared: dict[str, str],
) -> str:
    """One message body; `shared` carries the thread's client, month etc. so replies stay on the subject."""
    fill = _Filler(rng, when, to.first if to.key not in ("servicedesk", "hr") else "all", shared)
    unused = rng.sample(TOPICS[topic]["lines"], len(TOPICS[topic]["lines"]))
    paragraphs: list[str] = []
    n_paragraphs = rng.choices([1, 2, 3, 4], weights=[3, 5, 3, 1])[0]
    for index in range(n_paragraphs):
        count = rng.randint(1, 3) if reply else rng.randint(2, 4)
        sentences, unused = unused[:count], unused[count:]
        if index == 0 and reply:
            sentences.insert(0, rng.choice(REPLY_OPENERS))
        if rng.random() < 0.35:
            sentences.append(rng.choice(FILLERS))
        if sentences:
            paragraphs.append(" ".join(s.format_map(fill) for s in sentences))
    greeting = rng.choice(GREETINGS).format_map(fill)
    closing = rng.choice(CLOSINGS)
    return "\n\n".join([greeting, *paragraphs, f"{closing}\n{person.name}"])


def _working_time(rng: random.Random, day: datetime) -> datetime:
    while day.weekday() >= 5 and rng.random() < 0.9:
        day += timedelta(days=1)
    minutes = int(rng.triangular(7 * 60 + 30, 19 * 60, 10 * 60 + 30))
    return day.replace(hour=minutes // 60, minute=minutes % 60, second=rng.randint(0, 59))


def _generated_threads(rng: random.Random, budget: int) -> list[Email]:
    """Everyday mail: threads on a topic between people who worked here at the time."""
    emails: list[Email] = []
    span_days = (LAST_DAY - FIRST_DAY).days
    thread_no = 0
    owner = BY_KEY[OWNER]
    while len(emails) < budget:
        thread_no += 1
        start = _working_time(rng, FIRST_DAY + timedelta(days=rng.randrange(span_days)))
        active = _active(start)
        starter = rng.choices(active, weights=[p.weight for p in active])[0]
        topic = rng.choice(starter.topics)
        subject_fill = _Filler(rng, start, "")
        subject = rng.choice(TOPICS[topic]["subjects"]).format_map(subject_fill)
        shared = {k: v for k, v in subject_fill.items() if k in THREAD_WIDE}
        peers = [p for p in active if topic in p.topics and p.key != starter.key and p.key != OWNER]
        others = rng.sample(peers, min(len(peers), rng.randint(0, 2)))
        participants = [starter, *others]
        if starter.key != OWNER:
            participants.append(owner)
        length = rng.choices([1, 2, 3, 4, 5, 6], weights=[30, 24, 18, 12, 8, 4])[0]
        thread_id = f"th-{thread_no:05d}"
        when, sender = start, starter
        for position in range(length):
            choices = [p for p in participants if p.key != sender.key] or participants
            to = choices[0] if position == 0 else rng.choice(choices)
            recipients = [p for p in participants if p.key != sender.key]
            prefix = "" if position == 0 else "Re: "
            emails.append(Email(thread_id, sender, recipients, prefix + subject,
                                _compose(rng, topic, sender, to, when, position > 0, shared), when))
            if when >= LAST_DAY or len(emails) >= budget:
                break
            gap = timedelta(hours=rng.choice([2, 5, 20, 26, 50, 75]))
            when = min(LAST_DAY, _working_time(rng, when + gap))
            sender = rng.choices(choices, weights=[p.weight for p in choices])[0]
        if length > 1 and rng.random() < 0.06 and len(emails) < budget:
            outsider_pool = [
                p for p in _active(when) if p not in participants and p.key not in ("servicedesk", "hr")
            ]
            if outsider_pool:
                outsider = rng.choice(outsider_pool)
                forward_when = _working_time(rng, when + timedelta(days=rng.randint(1, 6)))
                if forward_when <= LAST_DAY:
                    note = rng.choice(FORWARD_NOTES)
                    body = f"Hi {outsider.first},\n\n{note}\n\n{sender.name}\n\n" \
                           f"---------- Forwarded message ----------\n{emails[-1].body}"
                    emails.append(Email(thread_id, sender, [outsider], "Fwd: " + subject, body, forward_when))
    return emails


# ---------------------------------------------------------------------------
# Storylines: the facts the demo tasks ask about. Dates are fixed, not drawn.
# ---------------------------------------------------------------------------


def _at(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp)


def _story(
    thread_id: str, stamp: str, sender: Person, to: list[str | Person], subject: str, body: str
) -> Email:
    recipients = [r if isinstance(r, Person) else RON_STAFF if r == "ron-staff" else BY_KEY[r] for r in to]
    return Email(thread_id, sender, recipients, subject, body.strip(), _at(stamp))


def _ron_chinn(rng: random.Random) -> list[Email]:
    """Ron Chinn: a contractor first recommended in May 2013, later our Head of Facilities."""
    gail, morgan, dana, victor = BY_KEY["gail"], BY_KEY["morgan"], BY_KEY["dana"], BY_KEY["victor"]
    emails = [
        _story("th-ron-2013a", "2013-05-14T10:12:37", gail, ["morgan", "dana"],
               "Third floor heating: contractor recommendation", """
Hi Morgan,

The third floor heating failed again on Monday and our current contractor cannot come out until next month.
At the building association meeting last week, the manager of the warehouse next door recommended Ron Chinn
of Baypoint Mechanical. He looked after their boilers for years and they were very happy with him.

Shall I ask him for a quote for a full service and the valve replacement?

Thanks,
Gail Ferreira"""),
        _story("th-ron-2013a", "2013-05-14T15:40:05", morgan, ["gail", "dana"],
               "Re: Third floor heating: contractor recommendation", """
Gail,

Yes please, go ahead and get a quote. If it comes in under the usual limit you can approve it yourself.

Thanks,
Morgan Ellis"""),
        _story("th-ron-2013b", "2013-08-02T11:05:48", gail, ["morgan", "victor"], "Heating service quote", """
Hi all,

The quote from Ron Chinn at Baypoint Mechanical came in at $3,800 for the full service and the valve
replacement, about a third less than last year. He can do the work over two Saturdays in September so nobody
is disturbed.

Victor, can you raise the purchase order?

Thanks,
Gail Ferreira"""),
        _story("th-ron-2013c", "2013-11-19T09:21:10", gail, ["morgan"], "Heating works finished", """
Morgan,

Ron Chinn finished the heating works on Saturday. All radiators on the third floor are working and he left a
maintenance schedule for the winter. I'd like to keep Baypoint on for the annual service.

Best,
Gail Ferreira"""),
    ]
    vendor_subjects = [
        "Annual boiler service", "Air conditioning check before summer",
        "Quote for the kitchen extraction fan",
        "Maintenance visit next week", "Invoice for the heating service", "Spring maintenance schedule",
    ]
    vendor_lines = [
        "The annual service is booked for {weekday} {date}; I need access to the plant room from {time}.",
        "I have attached the quote for the work we discussed, {amount} including parts.",
        "The compressor on the roof unit is getting old; I would budget for a replacement within two years.",
        "Everything passed inspection, and the certificate is attached for your records.",
        "Please let reception know my engineer will arrive early.",
    ]
    staff_subjects = [
        "Facilities update", "Building works this weekend", "Office safety walk-round", "Air quality survey",
        "Energy use report", "Desk moves on the second floor", "Meeting room upgrades",
    ]
    staff_lines = [
        "The energy use for the building is down {pct}% on last year after the lighting upgrade.",
        "Contractors will be on site this weekend; the side entrance will be closed.",
        "I will do a safety walk-round of every floor on {weekday}; please clear the fire exits.",
        "The air quality survey results are good, with one meeting room needing better ventilation.",
        "New screens are going into the meeting rooms on the second floor over the next {num} days.",
        "If anything in the building needs fixing, the facilities desk is the quickest route.",
    ]
    mention_subjects = [
        "Heating problem again", "Who should we call about the air conditioning?", "Plant room access",
        "Building maintenance costs", "Facilities contacts", "Contractor feedback",
    ]
    mention_templates = [
        "I have asked Ron Chinn to take a look at it; he knows the system better than anyone.",
        "Ron Chinn says the part is on order and should be fitted by {weekday}.",
        "Could you check with Ron Chinn whether this is covered by the maintenance contract?",
        "Ron Chinn sorted this out quickly last time, so I'd go to him first.",
        "Ron Chinn's quote was {amount}; I think that is fair for the scope.",
    ]
    for year in range(2014, 2027):
        ron = RON_VENDOR if year <= 2018 else RON_STAFF
        n_from_ron = rng.randint(2, 4) if year <= 2018 else rng.randint(4, 7)
        n_mentions = rng.randint(2, 4)
        for index in range(n_from_ron + n_mentions):
            day = datetime(year, 1, 6) + timedelta(days=rng.randrange(330))
            when = _working_time(rng, day)
            if year == 2019 and when < datetime(2019, 3, 4):
                when = _working_time(rng, datetime(2019, 3, 4) + timedelta(days=rng.randrange(250)))
            fill = _Filler(rng, when, "Morgan")
            if index < n_from_ron:
                sender = ron
                vendor = year <= 2018
                subjects, lines = (vendor_subjects, vendor_lines) if vendor else (staff_subjects, staff_lines)
                to = [BY_KEY["gail"] if year <= 2018 else BY_KEY["dana"], BY_KEY["morgan"]]
                sign = "Ron Chinn\nBaypoint Mechanical" if year <= 2018 else "Ron Chinn\nHead of Facilities"
                opener = "Hi Gail," if year <= 2018 else "Hi all,"
                subject = rng.choice(subjects)
            else:
                sender = rng.choice([p for p in (gail, dana, victor, morgan, BY_KEY["arjun"]) if
                                     p.first_year <= year <= p.last_year])
                to = [p for p in (morgan, dana) if p.key != sender.key]
                lines, sign, opener = mention_templates, sender.name, f"Hi {to[0].first},"
                subject = rng.choice(mention_subjects)
            sentences = rng.sample(lines, rng.randint(2, 3))
            body = f"{opener}\n\n{' '.join(s.format_map(fill) for s in sentences)}\n\nThanks,\n{sign}"
            emails.append(Email(f"th-ron-{year}-{index:02d}", sender, to, subject, body, when))
    everyone = ["dana", "morgan", "victor", "arjun", "sofia"]
    emails.append(_story("th-ron-welcome", "2019-03-01T09:02:11", BY_KEY["eleanor"], everyone,
                         "Welcome Ron Chinn, Head of Facilities", """
Hi everyone,

I'm delighted to announce that Ron Chinn joins us on Monday as Head of Facilities. Many of you know Ron from
his years at Baypoint Mechanical, where he looked after our heating and cooling since 2013. Gail retired at
the end of last year, and Ron takes over the building, the facilities desk and the office contracts.

Please make him welcome.

Eleanor Voss"""))
    return emails


def _project_alpha() -> list[Email]:
    """Project Alpha: a codename reused in 2026 for the order-tracking replacement."""
    priya, tomas, helen = BY_KEY["priya"], BY_KEY["tomas"], BY_KEY["helen"]
    hannah, keisha, janet = BY_KEY["hannah"], BY_KEY["keisha"], BY_KEY["janet"]
    team = ["morgan", "tomas", "dana", "hannah", "keisha"]
    return [
        _story("th-alpha-2019", "2019-04-11T14:20:33", BY_KEY["liam"], ["morgan", "owen"],
               "Mobile ordering app idea", """
Morgan,

Following our chat, I have written up the mobile ordering app idea under the working name Project Alpha. It is
a one-page outline; no budget needed yet.

Liam Novak"""),
        _story("th-alpha-2019", "2019-04-16T10:03:52", BY_KEY["morgan"], ["liam", "owen"],
               "Re: Mobile ordering app idea", """
Liam,

Thanks. We won't take Project Alpha forward this year; the order portal work comes first. Let's revisit next
spring.

Morgan Ellis"""),
        _story("th-alpha-kickoff", "2026-09-08T09:14:02", priya, team, "Project Alpha kickoff", """
Hi all,

Project Alpha starts this week. The goal is to replace the legacy order-tracking system with a single
analytics platform that operations, customer success and finance all use.

Roles: I will lead the project, Tomás Ortega owns engineering and the data migration, Hannah Cole owns
reporting, and Keisha Brown owns training and rollout.

The kickoff meeting is on Thursday 10 September at 10:00 in room 305. The target for the pilot is Monday
2 November, with a full rollout early next year if the pilot goes well.

Priya Raman"""),
        _story("th-alpha-kickoff", "2026-09-08T11:47:30", tomas, ["priya", *team],
               "Re: Project Alpha kickoff", """
Priya,

Thanks. I'll bring a first inventory of the data we need to migrate to Thursday's meeting. The order history
goes back to 2012, so the migration is the biggest risk on the engineering side.

Tomás Ortega"""),
        _story("th-alpha-kickoff", "2026-09-10T16:25:19", priya, team, "Re: Project Alpha kickoff", """
Hi all,

Notes from today's Project Alpha kickoff:
- Scope agreed: order tracking, delivery exceptions and the weekly operations report move to the new platform.
- Budget request of $240,000 to go to Helen Marsh by 15 September.
- Vendor shortlist to be agreed by the end of September.
- Weekly status meeting every Tuesday at 9:30.

Priya Raman"""),
        _story("th-alpha-budget", "2026-09-15T13:02:44", priya, ["helen", "morgan"],
               "Project Alpha budget request", """
Helen,

Attached is the budget request for Project Alpha: $240,000 for the first half of FY2027, covering licences,
the migration contractor and training. The business case expects the platform to pay for itself within two
years through fewer manual reports and faster exception handling.

Priya Raman"""),
        _story("th-alpha-budget", "2026-09-22T17:31:09", helen, ["priya", "morgan"],
               "Re: Project Alpha budget request", """
Priya,

Approved. The Project Alpha budget of $240,000 is signed off as of today, 22 September 2026. Please report
spend against it monthly, and come back to me before committing more than $60,000 to any single vendor
contract without a competitive quote.

Helen Marsh
Chief Financial Officer"""),
        _story("th-alpha-vendors", "2026-10-01T10:11:27", hannah, ["priya", "tomas", "morgan"],
               "Project Alpha vendor shortlist", """
Hi all,

The Project Alpha vendor shortlist after the demos: Northwind Analytics, Cobalt Data and Lumen Systems.
Northwind has the best migration tooling, Cobalt is the cheapest, and Lumen has the strongest reporting but a
six-month implementation time.

Hannah Cole"""),
        _story("th-alpha-vendors", "2026-10-02T15:56:40", janet, ["priya", "hannah"],
               "Re: Project Alpha vendor shortlist", """
Priya,

From our side, the references for Northwind Analytics were good. Two of their clients migrated a similar
amount of order history in under eight weeks. Happy to join the decision meeting if useful.

Janet Kim
Brightline Consulting"""),
        _story("th-alpha-vendors", "2026-10-06T18:04:15", priya, ["hannah", "tomas", "morgan", "helen"],
               "Re: Project Alpha vendor shortlist", """
Hi all,

Decision: we are going with Northwind Analytics for Project Alpha. Their migration tooling and references
outweighed the lower price from Cobalt Data, and Lumen Systems could not meet the pilot date. The contract is
$52,000 for the first year, under Helen's single-vendor limit. Tomás will start the technical onboarding with
Northwind next week.

Priya Raman"""),
        _story("th-alpha-pilot", "2026-10-20T11:38:51", tomas, ["priya", "dana", "hannah", "keisha"],
               "Project Alpha pilot date", """
Priya,

The test migration found gaps in the 2012 to 2015 order history: about 4% of the records have missing delivery
codes. Fixing them will take about two weeks, so I recommend moving the Project Alpha pilot from 2 November to
16 November.

Tomás Ortega"""),
        _story("th-alpha-pilot", "2026-10-22T09:27:06", priya, ["tomas", "dana", "hannah", "keisha", OWNER],
               "Re: Project Alpha pilot date", """
Hi all,

Agreed: the Project Alpha pilot moves to Monday 16 November. The pilot sites are the Boston warehouse and the
Portland office, about 40 users in total. Keisha, please move the training sessions to the week of 9 November.

Priya Raman"""),
        _story("th-alpha-pilot", "2026-10-28T14:15:44", keisha, ["priya", "dana"],
               "Re: Project Alpha pilot date", """
Priya,

Training for the Project Alpha pilot is now booked: Boston on 10 November and Portland on 12 November, both
at 13:30. The quick-start guide will be ready by 6 November.

Keisha Brown"""),
        _story("th-alpha-risks", "2026-11-03T10:44:20", priya, ["tomas", "keisha", "morgan", "ron-staff"],
               "Project Alpha risk register", """
Hi all,

The Project Alpha risk register, reviewed today:
1. Data migration quality (owner: Tomás Ortega). Cleanup of the old delivery codes is on track.
2. User adoption (owner: Keisha Brown). Training is booked; we will track logins daily during the pilot.
3. Server room power (owner: Ron Chinn). The extra hardware needs a power upgrade in the server room,
scheduled for 7 November.

Priya Raman"""),
        _story("th-alpha-risks", "2026-11-09T16:02:37", RON_STAFF, ["priya", "morgan"],
               "Re: Project Alpha risk register", """
Priya,

The server room power upgrade for Project Alpha was completed on Saturday as planned. There is now headroom
for two more racks. You can close risk 3.

Ron Chinn
Head of Facilities"""),
        _story("th-alpha-status", "2026-11-20T17:22:58", priya, [*team, "helen", "marcus"],
               "Project Alpha pilot status: week 1", """
Hi all,

The Project Alpha pilot went live on Monday 16 November with 42 users in Boston and Portland.
Summary of week 1:
- 3 issues raised, all fixed within a day. The worst was a time zone error in delivery estimates.
- Daily logins average 37 of 42 users.
- Spend to date is $118,000 of the $240,000 budget.

The go/no-go review for the full rollout is on Friday 4 December 2026. Hannah will bring the pilot metrics.

Priya Raman"""),
        _story("th-alpha-status", "2026-11-23T08:49:13", BY_KEY["marcus"], ["priya", *team],
               "Re: Project Alpha pilot status: week 1", """
Priya,

A great first week, well done to everyone on Project Alpha. For the go/no-go review on 4 December, please
include
the training feedback and an estimate for the full rollout.

Marcus Bell"""),
    ]


def _one_offs() -> list[Email]:
    """Single emails that tasks look up by subject or by a detail in the body."""
    return [
        _story("th-garage-2021", "2021-06-08T08:31:22", FACILITIES_DESK, ["morgan", "dana", "priya", "owen"],
               "Parking garage resurfacing schedule", """
Hi everyone,

The parking garage under the building will be resurfaced in two stages. Level -1 will be closed on Saturday 19
June 2021, and level -2 on Saturday 26 June 2021. Please use the visitor car park on Dock Road on those days;
it will be free for staff showing a badge.

Facilities Desk"""),
        *[_story(f"th-move-2024-{index}", stamp, sender, to, subject, body)
          for index, (stamp, sender, to, subject, body) in enumerate(_office_move())],
    ]


def _office_move() -> list[tuple[str, Person, list[str | Person], str, str]]:
    """The 2024 office move to 88 Harbor Street, led by Ron Chinn."""
    ron, marcus, dana, arjun = RON_STAFF, BY_KEY["marcus"], BY_KEY["dana"], BY_KEY["arjun"]
    everyone: list[str | Person] = ["morgan", "dana", "priya", "tomas", "owen", "sofia", "arjun"]
    return [
        ("2024-02-12T09:05:41", marcus, everyone, "Office move to 88 Harbor Street", """
Hi everyone,

Our lease ends in the summer, and we have signed for new space at 88 Harbor Street. The office move is planned
for the weekend of 15 June 2024. Ron Chinn will lead the move with a small working group.

Marcus Bell"""),
        ("2024-03-04T14:12:09", ron, ["morgan", "dana", "arjun"], "Office move working group", """
Hi all,

The first office move working group meeting is on Thursday at 14:00. Agenda: floor plan, IT cabling, the
removals contract and the timeline.

Ron Chinn
Head of Facilities"""),
        ("2024-04-10T10:40:55", ron, everyone, "Office move: floor plan", """
Hi everyone,

The floor plan for 88 Harbor Street is final. Operations and customer success get the third floor, finance and
leadership the fourth. Please check your team's area before the move.

Ron Chinn
Head of Facilities"""),
        ("2024-05-02T11:15:27", arjun, ["morgan", "ron-staff"], "Office move: IT cabling and network", """
Morgan,

The network cabling at the new office is installed and tested. We will move the servers on the Saturday of the
office move and should be online by Sunday noon.

Arjun Mehta"""),
        ("2024-05-20T16:30:03", ron, everyone, "Office move: packing instructions", """
Hi everyone,

Crates for the office move arrive on 10 June. Please label every crate with your name and new desk number, and
clear your desk by 14 June at 17:00.

Ron Chinn
Head of Facilities"""),
        ("2024-06-10T09:00:18", dana, ["morgan", "ron-staff"], "Office move: operations cover", """
Morgan,

During the office move weekend, operations will run from the warehouse office, so customers will not notice
anything.

Dana Whitfield"""),
        ("2024-06-17T08:15:44", ron, everyone, "Welcome to 88 Harbor Street", """
Hi everyone,

The office move went to plan, and welcome to 88 Harbor Street. Report any missing crates or desk problems to
the facilities desk this week.

Ron Chinn
Head of Facilities"""),
        ("2024-07-01T12:05:37", BY_KEY["helen"], ["morgan", "ron-staff"], "Office move costs", """
Morgan,

The final cost of the office move was $186,500, about 4% under budget. Thanks to Ron and the working group.

Helen Marsh"""),
    ]


def generate(seed: int = SEED) -> list[tuple]:
    """All rows, ids assigned in shuffled order so that id order carries no date information."""
    rng = random.Random(seed)
    stories = _ron_chinn(rng) + _project_alpha() + _one_offs()
    emails = _generated_threads(rng, TARGET_EMAILS - len(stories)) + stories
    emails.sort(key=lambda e: (e.date, e.thread_id, e.subject))
    rng.shuffle(emails)
    rows = []
    for email_id, email in enumerate(emails, start=1):
        recipients = ", ".join(p.address for p in email.recipients if p.key != email.sender.key)
        rows.append((email_id, email.thread_id, email.sender.address, email.sender.name, recipients,
                     email.subject, email.body, email.date.strftime("%Y-%m-%dT%H:%M:%S")))
    return rows


def build_archive(out: Path | str, seed: int = SEED) -> Path:
    """Write the archive to `out` atomically: readers only ever see no file or a finished one."""
    out = Path(out).resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp_name = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
    os.close(handle)
    tmp = Path(tmp_name)
    try:
        con = sqlite3.connect(tmp)
        try:
            con.execute("PRAGMA journal_mode=OFF")
            con.executescript(SCHEMA)
            con.executemany("INSERT INTO emails VALUES (?, ?, ?, ?, ?, ?, ?, ?)", generate(seed))
            con.execute("INSERT INTO emails_fts(emails_fts) VALUES ('rebuild')")
            con.commit()
        finally:
            con.close()
        os.replace(tmp, out)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return out


def ensure_archive(path: Path | str) -> Path:
    """Build the archive on first use; an existing file is trusted as is."""
    path = Path(path)
    if not path.exists():
        print(f"emailindex: building the email archive at {path}", file=sys.stderr)
        build_archive(path)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build the emailindex archive (SQLite + FTS5).")
    parser.add_argument("--out", required=True, type=Path, help="Path of the database file to write.")
    args = parser.parse_args(argv)
    path = build_archive(args.out)
    con = sqlite3.connect(path)
    count = con.execute("SELECT count(*) FROM emails").fetchone()[0]
    con.close()
    print(f"wrote {count} emails to {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
