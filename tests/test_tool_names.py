"""The rule that maps a recorded session's tool names to the server's listed tools (runners/tool_names.py)."""

from __future__ import annotations

import pytest

from mcpipechekr.runners.tool_names import map_tool_names, resolve_tool_name

LISTED = ["books", "search_books", "get_book"]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("search_books", ("search_books", "")),  # exact
        ("shelf_search_books", ("search_books", "shelf_")),  # longest listed name, not `books`
        ("shelf_books", ("books", "shelf_")),
        ("mcp__shelf__search_books", ("search_books", "mcp__shelf__")),
        ("mcp__my_shelf__get_book", ("get_book", "mcp__my_shelf__")),
        ("my-lib_get_book", ("get_book", "my-lib_")),
        ("shelfbooks", None),  # no separator before the listed name
        ("_books", None),  # a separator alone is no prefix
        ("__books", None),
        ("shelf_gone", None),
    ],
)
def test_a_name_resolves_to_the_exact_or_longest_listed_name_after_a_separator(
    name: str, expected: tuple[str, str] | None
) -> None:
    assert resolve_tool_name(name, LISTED) == expected


def test_a_listed_name_that_is_another_with_a_prefix_wins_as_the_exact_name() -> None:
    assert resolve_tool_name("shelf_books", ["books", "shelf_books"]) == ("shelf_books", "")


def test_opencode_names_lose_any_prefix_and_its_own_tools_are_kept() -> None:
    mapping = map_tool_names(
        ["shelf_search_books", "bash", "shelf_books", "read", "shelf_search_books"],
        LISTED,
        client="opencode",
        server_name="library",
    )
    assert mapping.tools == {"shelf_search_books": "search_books", "shelf_books": "books"}
    assert (mapping.kept, mapping.unknown, mapping.namespaces) == (("bash", "read"), (), ("shelf_",))
    assert mapping.tool_for("bash") == "bash" and mapping.tool_for("shelf_books") == "books"


def test_claude_code_names_outside_mcp_are_its_own_tools_even_when_the_server_lists_them() -> None:
    mapping = map_tool_names(
        ["mcp__shelf__get_book", "Bash", "Read"], [*LISTED, "Read"], client="claude-code"
    )
    assert mapping.tools == {"mcp__shelf__get_book": "get_book"}
    assert mapping.kept == ("Bash", "Read") and mapping.unknown == ()


@pytest.mark.parametrize(
    ("client", "names", "unknown", "kept"),
    [
        # In the namespace of a resolved call: the server's, but not listed.
        ("opencode", ["shelf_get_book", "shelf_gone"], ("shelf_gone",), ()),
        ("claude-code", ["mcp__shelf__get_book", "mcp__shelf__gone"], ("mcp__shelf__gone",), ()),
        # Another namespace beside the server's: another MCP server of the session.
        ("opencode", ["shelf_get_book", "github_create_issue"], (), ("github_create_issue",)),
        (
            "claude-code",
            ["mcp__shelf__get_book", "mcp__github__create_issue"],
            (),
            ("mcp__github__create_issue",),
        ),
        # No call resolved under a prefix: nothing tells the server's names from others.
        ("opencode", ["github_create_issue", "bash"], ("github_create_issue",), ("bash",)),
        ("claude-code", ["mcp__github__create_issue"], ("mcp__github__create_issue",), ()),
        ("opencode", ["get_book", "github_create_issue"], ("github_create_issue",), ()),
        # The configured server's prefix marks its namespace too.
        ("opencode", ["shelf_get_book", "library_gone"], ("library_gone",), ()),
        ("claude-code", ["mcp__shelf__get_book", "mcp__library__gone"], ("mcp__library__gone",), ()),
    ],
)
def test_an_unlisted_name_is_unknown_only_in_the_servers_namespace(
    client: str, names: list[str], unknown: tuple[str, ...], kept: tuple[str, ...]
) -> None:
    mapping = map_tool_names(names, LISTED, client=client, server_name="library")  # type: ignore[arg-type]
    assert (mapping.unknown, mapping.kept) == (unknown, kept)


def test_two_namespaces_with_listed_names_need_the_configured_name_to_choose() -> None:
    names = ["shelf_search_books", "github_search_books"]
    unclear = map_tool_names(names, LISTED, client="opencode", server_name="library")
    assert unclear.conflicting and unclear.namespaces == ("github_", "shelf_")

    chosen = map_tool_names(names, LISTED, client="opencode", server_name="shelf")
    assert not chosen.conflicting
    assert chosen.tools == {"shelf_search_books": "search_books"}
    assert chosen.kept == ("github_search_books",) and chosen.namespaces == ("shelf_",)
