"""The bundled example server, emailindex, driven through a real MCP client over stdio and HTTP.

Facts about the archive are checked against SQL on the database file itself, so the server's
answers are compared with the truth rather than with themselves. Each server process costs about
a second to start, so every test groups its assertions into one session.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from mcp import Client, StdioServerParameters

REPO_ROOT = Path(__file__).resolve().parents[1]
TOOLS = {"query_email_database", "get_email", "count_emails"}
PATCHES = ("0001-add-sort-order.patch", "0002-fix-fts-rank-projection.patch")


def sql(db: Path, query: str, *params: Any) -> list[tuple]:
    con = sqlite3.connect(db)
    try:
        return con.execute(query, params).fetchall()
    finally:
        con.close()


def ron_chinn_mentions(db: Path) -> list[tuple[int, str, str]]:
    """(id, date, subject) of every email whose subject or body names Ron Chinn, oldest first."""
    return sql(
        db,
        "SELECT id, date, subject FROM emails WHERE subject LIKE '%Ron Chinn%' OR body LIKE '%Ron Chinn%'"
        " ORDER BY date",
    )


def text_of(result: Any) -> str:
    return " ".join(getattr(block, "text", "") for block in result.content)


async def call(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A call that must succeed; returns its structured content."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, f"{tool}({arguments}) failed: {text_of(result)}"
    return result.structured_content


async def call_error(client: Client, tool: str, arguments: dict[str, Any]) -> str:
    """A call that must fail as a tool error (isError result, not a protocol error); returns its text."""
    result = await client.call_tool(tool, arguments)
    assert result.is_error, f"{tool}({arguments}) should have failed but returned {result.structured_content}"
    return text_of(result)


def copy_example(emailindex_dir: Path, dest: Path) -> Path:
    """The example as a fresh git repository, the way the harness prepares it."""
    shutil.copytree(
        emailindex_dir, dest, ignore=shutil.ignore_patterns("*.db", "*.db-*", ".*.tmp", "__pycache__")
    )
    git(dest, "init", "-q")
    git(dest, "add", "-A")
    git(dest, "commit", "-q", "-m", "emailindex as shipped")
    return dest


def git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-c", "user.name=Test", "-c", "user.email=test@example.com", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )


# --- The archive, checked with SQL --------------------------------------------------------------


def test_archive_holds_the_facts_the_tasks_ask_about(
    emailindex_db: Path, build_emailindex: Callable[[Path], Path], tmp_path: Path
) -> None:
    (total,) = sql(emailindex_db, "SELECT count(*) FROM emails")[0]
    assert 4500 <= total <= 5500
    first, last = sql(emailindex_db, "SELECT min(date), max(date) FROM emails")[0]
    assert first.startswith("2012-") and last.startswith("2026-11")

    # Ron Chinn: one earliest mention in 2013, then dozens across later years and as a sender.
    mentions = ron_chinn_mentions(emailindex_db)
    assert mentions[0][1].startswith("2013-05-14")
    assert mentions[0][1] < mentions[1][1], "the earliest mention must be unique"
    assert len(mentions) >= 40
    assert len({date[:4] for _, date, _ in mentions}) >= 10
    sent = sql(emailindex_db, "SELECT min(date), count(*) FROM emails WHERE sender LIKE 'ron.chinn@%'")[0]
    assert sent[0] > mentions[0][1] and sent[1] >= 20
    # A keyword search finds exactly these emails: no other email has both words.
    fts = sql(emailindex_db, 'SELECT rowid FROM emails_fts WHERE emails_fts MATCH \'"ron" "chinn"\'')
    assert {row[0] for row in fts} == {m[0] for m in mentions}

    # Project Alpha: a burst of threads in Sept-Nov 2026, barely mentioned before.
    alpha = sql(
        emailindex_db,
        "SELECT e.date FROM emails_fts JOIN emails AS e ON e.id = emails_fts.rowid"
        " WHERE emails_fts MATCH '\"project alpha\"'",
    )
    recent = [d for (d,) in alpha if d >= "2026-09-01"]
    assert len(recent) >= 12 and all(d < "2026-12-01" for d in recent)
    assert len(alpha) - len(recent) <= 3

    # Ids are not in date order, so id order cannot stand in for sorting by date.
    dates = [d for (d,) in sql(emailindex_db, "SELECT date FROM emails ORDER BY id")]
    assert dates != sorted(dates)
    assert sql(emailindex_db, "SELECT id FROM emails ORDER BY date LIMIT 1")[0][0] != 1

    # Lookup facts used by tasks.yaml.
    garage = sql(
        emailindex_db, "SELECT sender FROM emails WHERE subject = 'Parking garage resurfacing schedule'"
    )
    assert garage == [("facilities@harborpine.com",)]

    # The generator is deterministic: a second build holds the same rows and answers the same query.
    again = build_emailindex(tmp_path / "again.db")
    dump = "SELECT * FROM emails ORDER BY id"
    assert sql(again, dump) == sql(emailindex_db, dump)
    query = "SELECT rowid FROM emails_fts WHERE emails_fts MATCH 'budget' ORDER BY rank LIMIT 50"
    assert sql(again, query) == sql(emailindex_db, query)


def test_concurrent_builds_never_leave_a_partial_archive(emailindex_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "shared.db"
    builders = [
        subprocess.Popen(
            [sys.executable, "archive.py", "--out", str(out)], cwd=emailindex_dir, stdout=subprocess.DEVNULL
        )
        for _ in range(2)
    ]
    for builder in builders:
        assert builder.wait(timeout=60) == 0
    assert sql(out, "PRAGMA integrity_check") == [("ok",)]
    assert sql(out, "SELECT count(*) FROM emails")[0][0] >= 4500
    assert sorted(p.name for p in tmp_path.iterdir()) == ["shared.db"], "temporary files were left behind"


# --- The server over stdio ----------------------------------------------------------------------


def test_tools_answers_and_planted_defects_over_stdio(
    emailindex_stdio: StdioServerParameters, emailindex_db: Path
) -> None:
    mentions = ron_chinn_mentions(emailindex_db)
    first_id = mentions[0][0]
    ids_2013 = {m[0] for m in mentions if m[1].startswith("2013")}

    async def scenario() -> None:
        async with Client(emailindex_stdio) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert set(tools) == TOOLS
            for tool in tools.values():
                assert tool.description and len(tool.description) > 40
                assert tool.annotations.read_only_hint is True
                assert tool.annotations.destructive_hint is False
                assert tool.annotations.idempotent_hint is True
                assert tool.annotations.open_world_hint is False
                for name, schema in tool.input_schema["properties"].items():
                    assert schema.get("description"), f"{tool.name}.{name} has no description"
            query_params = tools["query_email_database"].input_schema["properties"]
            assert set(query_params) == {
                "keywords",
                "sender",
                "date_from",
                "date_to",
                "limit",
                "offset",
                "fields",
            }

            # A keyword query restricted to 2013 finds exactly the 2013 mentions, the first among them.
            found = await call(
                client,
                "query_email_database",
                {"keywords": "Ron Chinn", "date_from": "2013-01-01", "date_to": "2013-12-31"},
            )
            assert found["total"] == len(ids_2013) == 3
            assert {e["id"] for e in found["emails"]} == ids_2013
            assert all("[Ron] [Chinn]" in e["snippet"] for e in found["emails"])
            # date_to is inclusive although dates carry a time of day.
            day = mentions[0][1][:10]
            one_day = await call(
                client, "count_emails", {"keywords": "Ron Chinn", "date_from": day, "date_to": day}
            )
            assert one_day == {"count": 1}

            email = await call(client, "get_email", {"email_id": first_id})
            assert email["date"] == mentions[0][1] and email["subject"] == mentions[0][2]
            assert "Ron Chinn" in email["body"] and email["sender"] == "gail.ferreira@harborpine.com"
            assert "no email with id 999999" in await call_error(client, "get_email", {"email_id": 999999})

            # count_emails agrees with SQL and with the query's total.
            (dana_2019,) = sql(
                emailindex_db,
                "SELECT count(*) FROM emails WHERE sender_name = 'Dana Whitfield' AND date LIKE '2019-%'",
            )[0]
            window = {"sender": "dana whitfield", "date_from": "2019-01-01", "date_to": "2019-12-31"}
            assert (await call(client, "count_emails", window))["count"] == dana_2019 > 10
            assert (await call(client, "query_email_database", {**window, "limit": 1}))["total"] == dana_2019
            all_mentions = await call(client, "count_emails", {"keywords": "Ron Chinn"})
            assert all_mentions["count"] == len(mentions)

            # Without keywords results come in id order, and paging with offset is exact.
            page1 = await call(client, "query_email_database", {"limit": 5})
            page2 = await call(client, "query_email_database", {"limit": 5, "offset": 5})
            assert [e["id"] for e in page1["emails"] + page2["emails"]] == list(range(1, 11))
            # fields projects to the named columns only (without keywords it works).
            projected = await call(
                client,
                "query_email_database",
                {"sender": "ron.chinn", "fields": ["date", "subject"], "limit": 3},
            )
            assert [set(e) for e in projected["emails"]] == [{"date", "subject"}] * 3

            # Defect 1, the feature gap: no parameter sorts by date, and one passed anyway is ignored.
            assert not [p for p in query_params if "sort" in p or "order" in p]
            plain = await call(client, "query_email_database", {"keywords": "Ron Chinn", "limit": 5})
            asked = await call(
                client,
                "query_email_database",
                {"keywords": "Ron Chinn", "limit": 5, "sort_order": "date_asc"},
            )
            assert asked == plain
            assert asked["emails"][0]["id"] != first_id

            # Defect 2, the bug: keywords together with fields fails with an SQL error.
            message = await call_error(
                client, "query_email_database", {"keywords": "Ron Chinn", "fields": ["id", "date", "subject"]}
            )
            assert "no such column: fts.rank" in message

            # Bad arguments are tool errors that say how to fix them.
            assert "YYYY-MM-DD" in await call_error(
                client, "query_email_database", {"date_from": "2013/01/01"}
            )
            assert "YYYY-MM-DD" in await call_error(client, "count_emails", {"date_to": "last year"})
            unknown = await call_error(client, "query_email_database", {"fields": ["subject", "author"]})
            assert "author" in unknown and "sender_name" in unknown
            assert "after date_to" in await call_error(
                client, "count_emails", {"date_from": "2020-01-01", "date_to": "2019-01-01"}
            )
            await call_error(client, "query_email_database", {"limit": 500})
            # Search text is never parsed as FTS syntax, so punctuation cannot break a query.
            odd = await call(client, "count_emails", {"keywords": 'Ron-Chinn ( "'})
            assert odd["count"] == len(mentions)

    asyncio.run(scenario())


def test_reference_calls_of_every_task_succeed(
    emailindex_stdio: StdioServerParameters, emailindex_db: Path
) -> None:
    tasks = yaml.safe_load((REPO_ROOT / "tasks.yaml").read_text())["tasks"]
    assert len(tasks) >= 6
    by_id = {task["task_id"]: task for task in tasks}
    assert {"find-first-email-ron-chinn", "summarize-recent-project-alpha"} <= set(by_id)
    mentions = ron_chinn_mentions(emailindex_db)

    async def scenario() -> dict[str, list[dict[str, Any]]]:
        outputs: dict[str, list[dict[str, Any]]] = {}
        async with Client(emailindex_stdio) as client:
            for task in tasks:
                seen_ids: set[int] = set()
                outputs[task["task_id"]] = []
                for ref in task["reference_calls"]:
                    out = await call(client, ref["tool"], ref["arguments"])
                    outputs[task["task_id"]].append(out)
                    seen_ids |= {e["id"] for e in out.get("emails", []) if "id" in e}
                    if ref["tool"] == "get_email":
                        # Ids in tasks.yaml must come from the task's own earlier query, so a change to the
                        # archive that shifts ids cannot silently point a task at an unrelated email.
                        assert ref["arguments"]["email_id"] in seen_ids, task["task_id"]
        return outputs

    outputs = asyncio.run(scenario())

    # The first-mention task's minimal sequence really reaches the answer.
    none_before, in_2013, listing = outputs["find-first-email-ron-chinn"]
    assert none_before == {"count": 0} and in_2013["count"] == listing["total"] > 0
    assert min(e["date"] for e in listing["emails"]) == mentions[0][1]
    # The Project Alpha summary reads the recent decisions.
    alpha = outputs["summarize-recent-project-alpha"]
    assert all(e["date"] >= "2026-09-01" for e in alpha[0]["emails"])
    assert any("Northwind Analytics" in out.get("body", "") for out in alpha[1:])
    # The latest-email task's listing holds Ron Chinn's newest email.
    latest = sql(emailindex_db, "SELECT max(date) FROM emails WHERE sender_name = 'Ron Chinn'")[0][0]
    assert latest in {e["date"] for e in outputs["latest-email-from-ron-chinn"][1]["emails"]}
    # The history task pages through every mention.
    history = outputs["ron-chinn-history"]
    assert sum(len(out["emails"]) for out in history) == len(mentions)

    # One task's natural solution (keywords plus fields) meets the fts.rank bug.
    projection = by_id["list-office-move-emails-2024"]
    assert "subject" in projection["prompt"] and "date" in projection["prompt"]
    assert not any("fields" in ref["arguments"] for ref in projection["reference_calls"])


# --- The server over streamable HTTP ------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def wait_for_http(url: str, process: subprocess.Popen[bytes], log: Path, deadline_s: float) -> None:
    deadline = time.monotonic() + deadline_s
    while True:
        if process.poll() is not None:
            raise AssertionError(f"server exited with {process.returncode}: {log.read_text()}")
        try:
            async with Client(url) as client:
                await client.list_tools()
                return
        except Exception:  # not listening yet: connection refused, reset, ...
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.2)


def test_same_tools_and_defects_over_streamable_http(
    emailindex_dir: Path, emailindex_env: dict[str, str], emailindex_db: Path, tmp_path: Path
) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    log = tmp_path / "server.log"
    with log.open("wb") as log_file:
        process = subprocess.Popen(
            [sys.executable, "server.py", "--http", str(port), "--host", "127.0.0.1"],
            cwd=emailindex_dir,
            env=emailindex_env,
            stdout=log_file,
            stderr=subprocess.STDOUT,
        )
    first = ron_chinn_mentions(emailindex_db)[0]

    async def scenario() -> None:
        await wait_for_http(url, process, log, deadline_s=30)
        async with Client(url) as client:
            assert {tool.name for tool in (await client.list_tools()).tools} == TOOLS
            email = await call(client, "get_email", {"email_id": first[0]})
            assert (email["date"], email["subject"]) == first[1:]
            counted = await call(client, "count_emails", {"keywords": "Ron Chinn", "date_to": "2013-12-31"})
            assert counted == {"count": 3}
            message = await call_error(
                client, "query_email_database", {"keywords": "heating", "fields": ["subject"]}
            )
            assert "no such column: fts.rank" in message

    try:
        asyncio.run(scenario())
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


# --- The fixes ----------------------------------------------------------------------------------


def test_fix_index_names_each_patch_and_its_trigger(emailindex_dir: Path) -> None:
    index = json.loads((emailindex_dir / "fixes" / "index.json").read_text())
    assert [entry["patch"] for entry in index] == list(PATCHES)
    assert {entry["fixes"] for entry in index} == {"feature_gap", "bug"}
    for entry in index:
        assert entry["tool"] == "query_email_database"
        assert (emailindex_dir / "fixes" / entry["patch"]).is_file()
        assert entry["matches"] and all(isinstance(m, str) and m for m in entry["matches"])
    assert "no such column: fts.rank" in index[1]["matches"]
    readme = (emailindex_dir / "fixes" / "README.md").read_text()
    assert all(patch in readme for patch in PATCHES)


def test_patches_apply_alone_and_in_either_order_and_fix_both_defects(
    emailindex_dir: Path, emailindex_db: Path, tmp_path: Path
) -> None:
    repo = copy_example(emailindex_dir, tmp_path / "emailindex")
    patches = [str(repo / "fixes" / name) for name in PATCHES]
    shipped = (repo / "server.py").read_text()
    results = {}
    for order in ([patches[0]], [patches[1]], patches, patches[::-1]):
        git(repo, "checkout", "-q", "--", "server.py")
        for patch in order:
            git(repo, "apply", "--check", patch)
            git(repo, "apply", patch)
        results[tuple(Path(p).name for p in order)] = (repo / "server.py").read_text()
    assert results[PATCHES] == results[PATCHES[::-1]] != shipped
    assert shipped not in (results[PATCHES[:1]], results[PATCHES[1:]])
    patched = results[PATCHES]
    assert "sort_order" in patched and "sort_order" not in shipped

    # Run the patched server from the copy without EMAILINDEX_DB: it builds archive.db beside
    # server.py on first start, and .gitignore keeps the build out of the repository.
    env = {k: v for k, v in os.environ.items() if k != "EMAILINDEX_DB"}
    params = StdioServerParameters(command=sys.executable, args=["server.py"], env=env, cwd=str(repo))
    mentions = ron_chinn_mentions(emailindex_db)

    async def scenario() -> None:
        async with Client(params) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            sort_schema = tools["query_email_database"].input_schema["properties"]["sort_order"]
            assert (
                sort_schema["enum"] == ["relevance", "date_asc", "date_desc"] and sort_schema["description"]
            )
            assert "date_asc" in tools["query_email_database"].description

            oldest = await call(
                client,
                "query_email_database",
                {"keywords": "Ron Chinn", "sort_order": "date_asc", "limit": 3},
            )
            assert [(e["id"], e["date"]) for e in oldest["emails"]] == [m[:2] for m in mentions[:3]]
            newest = await call(
                client,
                "query_email_database",
                {"keywords": "Ron Chinn", "sort_order": "date_desc", "limit": 1, "fields": ["id", "date"]},
            )
            assert newest["emails"] == [{"id": mentions[-1][0], "date": mentions[-1][1]}]

            projected = await call(
                client,
                "query_email_database",
                {"keywords": "Ron Chinn", "fields": ["id", "subject"], "limit": 100},
            )
            assert projected["total"] == len(mentions)
            assert [set(e) for e in projected["emails"]] == [{"id", "subject"}] * 100
            ranked = await call(client, "query_email_database", {"keywords": "Ron Chinn", "limit": 100})
            assert [e["id"] for e in projected["emails"]] == [e["id"] for e in ranked["emails"]]
            await call_error(client, "query_email_database", {"sort_order": "by_sender"})

    asyncio.run(scenario())
    assert (repo / "archive.db").is_file()
    assert git(repo, "status", "--porcelain").stdout.strip() == "M server.py"
