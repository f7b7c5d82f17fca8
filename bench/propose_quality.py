"""Benchmark: `mcpipechekr tasks propose` on published MCP servers nobody here wrote.

For each server, seed its state in a temporary folder (a git repository with
commits, a folder of notes, a knowledge graph), run `propose_tasks` (the call
behind `tasks propose`, offline templates, 10 tasks asked), and print per
server: the proposals made, the tasks verified (and written), those whose
answer is not trivial (not a yes/no, not 0 or 1, not empty), those needing
two calls or more, the distinct tools the tasks rely on out of the tools
propose may call, and the wall time. Targets per server: >= 8 verified, >= 6
non-trivial, >= 3 needing two calls or more, >= 3 distinct tools used where
three read-only tools gave content (results with records: not prose, not an
error).

The servers: the six of bench/real_servers.py but fetch (its one tool needs
the network), installed by `real_servers.install` into .cache/real-servers,
and @cyanheads/git-mcp-server (JSON answers), installed by this benchmark
into .cache/propose-bench. Text answers: mcp-server-git, server-filesystem,
server-memory (JSON printed as text), mcp-server-time. mcp-server-time is the
control: every answer it gives depends on the clock, so nothing may be written.

Run: python bench/propose_quality.py [--only git,memory] [--count 10] [--show]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import real_servers as published  # noqa: E402

from mcpipechekr.propose import ProposeOutcome, propose_tasks  # noqa: E402

TARGETS = {"verified": 8, "non_trivial": 6, "multi_call": 3, "tools": 3}
CONTROL = "time"
"""The server whose answers all move with the clock: the target is zero tasks, every refusal saying why."""
EXTRA_CACHE = published.REPO / ".cache" / "propose-bench"

# --- seeds richer than the check benchmark's: content worth asking about --------------------------------

NOTES = {
    "notes/harbour-survey.md": (
        "# Harbour survey\nauthor: Ines Okafor\nstatus: open\nupdated: 2026-03-02\ntags: field, water\n\n"
        "## Attendees\n- Ines Okafor\n- Tomas Reyes\n\nDepth readings along the north pier.\n"
    ),
    "notes/budget-2026.md": (
        "# Budget 2026\nauthor: Tomas Reyes\nstatus: open\nupdated: 2026-02-20\ntags: money\n\n"
        "## Attendees\n- Tomas Reyes\n- Gil Andersen\n- Ines Okafor\n\n"
        "Travel is capped at the spring level.\n"
    ),
    "notes/moss-inventory.md": (
        "# Moss inventory\nauthor: Mara Ellison\nstatus: done\nupdated: 2026-01-15\ntags: field\n\n"
        "Forty-one species recorded in the old quarry.\n"
    ),
    "notes/recipes/seaweed-crisps.md": (
        "# Seaweed crisps\nauthor: Mara Ellison\nstatus: open\nupdated: 2026-04-11\ntags: food\n\n"
        "## Ingredients\n- dulse\n- rapeseed oil\n- sea salt\n\nBake the dulse until it snaps.\n"
    ),
    "notes/recipes/barley-bread.md": (
        "# Barley bread\nauthor: Gil Andersen\nstatus: done\nupdated: 2026-03-15\ntags: food\n\n"
        "## Ingredients\n- barley flour\n- yeast\n- honey\n\nProve overnight in the cold room.\n"
    ),
    "data/harvest.csv": "month,kg,picker\nmarch,12,Ines\napril,17,Mara\nmay,23,Ines\njune,9,Gil\n",
    "data/people.csv": "name,team,joined\nInes Okafor,Harbour,2021-04-12\nMara Ellison,Field,2022-02-14\n"
    "Gil Andersen,Office,2018-06-25\nTomas Reyes,Finance,2019-09-01\n",
    "docs/readme.md": "# Field notes\n\nThe team's notes, recipes and data.\n",
    "docs/todo.txt": "water the plants\nrepot the fern\norder more dulse\n",
}


def seed_notes_folder(folder: Path) -> published.Seeded:
    """A folder a team keeps: markdown notes with a header, recipes in a subfolder, two CSV files."""
    root = folder / "files"
    for name, text in NOTES.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return published.Seeded(folder, args=[str(root)])


GRAPH = [
    ("Ada Lovelace", "person", ["wrote the first program", "born in 1815"]),
    ("Charles Babbage", "person", ["designed the Analytical Engine", "born in 1791"]),
    ("Mary Somerville", "person", ["wrote On the Connexion of the Physical Sciences"]),
    ("Analytical Engine", "machine", ["never completed", "used punched cards"]),
    ("Difference Engine", "machine", ["calculated polynomial tables"]),
    ("London", "city", ["on the Thames"]),
    ("Royal Society", "organisation", ["founded in 1660"]),
]
RELATIONS = [
    ("Ada Lovelace", "Analytical Engine", "programmed"),
    ("Ada Lovelace", "London", "lived in"),
    ("Ada Lovelace", "Charles Babbage", "corresponded with"),
    ("Ada Lovelace", "Mary Somerville", "was tutored by"),
    ("Charles Babbage", "Analytical Engine", "designed"),
    ("Charles Babbage", "Difference Engine", "designed"),
    ("Charles Babbage", "London", "lived in"),
    ("Charles Babbage", "Royal Society", "was a fellow of"),
    ("Mary Somerville", "Royal Society", "was honoured by"),
]


def seed_graph(folder: Path) -> published.Seeded:
    """A knowledge graph of seven entities of four types and nine relations."""
    memory = folder / "memory.jsonl"
    lines = [
        json.dumps({"type": "entity", "name": name, "entityType": kind, "observations": notes})
        for name, kind, notes in GRAPH
    ] + [json.dumps({"type": "relation", "from": a, "to": b, "relationType": r}) for a, b, r in RELATIONS]
    memory.write_text("\n".join(lines), encoding="utf-8")
    return published.Seeded(folder, env={"MEMORY_FILE_PATH": str(memory)})


def seed_repository_cwd(folder: Path) -> published.Seeded:
    """The git seed, with the repository as the working directory (a server that takes `path: .`)."""
    seeded = published.seed_git(folder)
    assert seeded.git_repo is not None
    return published.Seeded(seeded.git_repo, git_repo=seeded.git_repo)


CYANHEADS_GIT = published.RealServer(
    "cyanheads-git", "npm", "@cyanheads/git-mcp-server", "2.15.3", "git-mcp-server", seed_repository_cwd
)
SEEDS = {"filesystem": seed_notes_folder, "memory": seed_graph}


def servers() -> list[tuple[published.RealServer, Path]]:
    """(server, the cache it is installed in), fetch left out: its one tool needs the network."""
    cache = published.install(log=lambda line: print(line, file=sys.stderr))
    chosen = [(server, cache) for server in published.SERVERS if server.key != "fetch"]
    return [*chosen, (CYANHEADS_GIT, install_extra())]


def install_extra() -> Path:
    """@cyanheads/git-mcp-server at its pinned version, once, under .cache/propose-bench."""
    folder = CYANHEADS_GIT.folder(EXTRA_CACHE)
    stamp = CYANHEADS_GIT.pin + "\n"
    if not published._installed(folder, stamp):
        EXTRA_CACHE.mkdir(parents=True, exist_ok=True)
        failed = published._run(
            [
                "npm",
                "install",
                "--prefix",
                str(folder),
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
                CYANHEADS_GIT.pin,
            ]
        )
        if failed is not None:
            raise RuntimeError(failed)
        (folder / published.STAMP).write_text(stamp, encoding="utf-8")
    return EXTRA_CACHE


# --- measuring ------------------------------------------------------------------------------------------


@dataclass
class Measured:
    key: str
    outcome: ProposeOutcome
    seconds: float

    @property
    def figures(self) -> dict[str, int]:
        tasks = self.outcome.tasks
        return {
            "proposed": self.outcome.proposed,
            "verified": len(tasks),
            "non_trivial": sum(1 for t in tasks if non_trivial(t.expected_result)),
            "multi_call": sum(1 for t in tasks if len(t.reference_calls) >= 2),
            "tools": len(
                {t.expected_tool for t in tasks} | {c.tool for t in tasks for c in t.reference_calls}
            ),
            "callable": self.outcome.callable_tools,
            "content": self.outcome.content_tools,
        }

    def met(self) -> bool:
        figures = self.figures
        if self.key == CONTROL:
            return figures["verified"] == 0
        return all(
            figures[name] >= min(target, figures["content"]) if name == "tools" else figures[name] >= target
            for name, target in TARGETS.items()
        )


def non_trivial(answer: object) -> bool:
    return not isinstance(answer, bool) and answer not in (0, 1, "", [], {}, None)


def measure(server: published.RealServer, cache: Path, count: int) -> Measured:
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        seeded = SEEDS.get(server.key, server.seed)(folder)
        config = server.config(cache, seeded)
        config = config.model_copy(
            update={"paths": config.paths.model_copy(update={"home": folder / "home"})}
        )
        started = time.perf_counter()
        outcome = propose_tasks(config, count=count)
        return Measured(server.key, outcome, time.perf_counter() - started)


def table(rows: list[Measured]) -> str:
    head = (
        "| server | proposed | verified | non-trivial | 2+ calls | tools used "
        "| read-only tools (with content) | time s | targets |"
    )
    lines = [head, "|" + "---|" * 9]
    for row in rows:
        f = row.figures
        lines.append(
            f"| {row.key} | {f['proposed']} | {f['verified']} | {f['non_trivial']} | {f['multi_call']} | "
            f"{f['tools']} | {f['callable']} ({f['content']}) | {row.seconds:.1f} | "
            f"{'met' if row.met() else 'MISSED'} |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated server keys")
    parser.add_argument("--count", type=int, default=10)
    parser.add_argument("--show", action="store_true", help="print every task and refusal")
    opts = parser.parse_args()
    wanted = set(opts.only.split(",")) if opts.only else None
    rows = []
    for server, cache in servers():
        if wanted and server.key not in wanted:
            continue
        row = measure(server, cache, opts.count)
        rows.append(row)
        if opts.show:
            print(f"\n== {server.key}: {len(row.outcome.tasks)} task(s)")
            for task in row.outcome.tasks:
                calls = " → ".join(call.tool for call in task.reference_calls)
                print(f"  {task.prompt}  =  {json.dumps(task.expected_result)}  [{calls}]")
            for refusal in row.outcome.refused:
                print(f"  refused ({refusal.template}): {refusal.prompt} — {refusal.reason}")
            if not row.outcome.tasks:
                print(f"  why none: {row.outcome.why_none()}")
    print()
    print(table(rows))
    print(
        f"\ntargets per server: >= {TARGETS['verified']} verified, >= {TARGETS['non_trivial']} non-trivial, "
        f">= {TARGETS['multi_call']} needing two calls or more, >= {TARGETS['tools']} tools used "
        f"(or all those whose results held content); {CONTROL}: none written, since every answer moves "
        "with the clock"
    )
    return 0 if all(row.met() for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
