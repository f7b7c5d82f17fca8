"""A recorded session's tool names, mapped back to the server's own (`mcpipechekr import`).

Why: agent clients rename MCP tools before the model sees them — opencode as
`<server>_<tool>`, Claude Code as `mcp__<server>__<tool>` — where `<server>` is
whatever the user called the server in the client's own config, which need not
be config.yaml's `server.name`. Phase 2 compares tool names with tasks.yaml
(`expected_tool`, `reference_calls`) and names bugs after tools, so a trace
that kept the client's names would show a wrong-tool bug that is not there and
split one bug under two ids. The reference is therefore the server's tool list
(the run's tools.json), never a guess of the prefix.

The rule, for each tool name of the session:

1. The client's own tools are not the server's, whatever they are called: in
   Claude Code every name outside the `mcp__` namespace (Bash, Read, Task,
   ...), since Claude Code names every MCP tool `mcp__…`; in opencode the names
   of its built-in tools (`OPENCODE_BUILTIN_TOOLS`: bash, read, edit, ...,
   `invalid` for a call it could not match). They keep the client's name and
   stay in the trace as calls that never reached the server, as the opencode
   and Claude Code runners keep them.
2. A name equal to a listed tool is that tool.
3. Otherwise it is the longest listed name that ends the session's name after
   a separator (`_` or `__`) behind a non-empty prefix: with `books` and
   `search_books` listed, `shelf_search_books` and `mcp__shelf__search_books`
   are `search_books`, `shelf_books` is `books`. The prefix is the call's
   namespace (`shelf_`, `mcp__shelf__`).
4. A name still unresolved is a tool of the server under test that the server
   does not list — an error — when it starts with a namespace of a resolved
   call or the client's prefix for config.yaml's `server.name`, or when no
   call resolved under a prefix (then nothing tells the server's names from
   others).
   Otherwise it is a tool of another MCP server the session also used, kept
   as in (1).
5. Resolved calls normally share one namespace. When they do not (two servers
   of the session list a tool of the same name: `shelf_search` and
   `github_search`), the namespace of config.yaml's `server.name` is the
   server's and the other names are treated as in (4); without it among them,
   nothing tells which server was under test, and the import is refused.

Blind spot: a server listing both `x` and `<prefix>_x` makes a session's
`<prefix>_x` ambiguous; the exact name wins (2), though the client may have
meant `x` under the namespace `<prefix>_`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from mcpipechekr.runners.claude_code import claude_server_key
from mcpipechekr.runners.opencode import opencode_server_key

SessionClient = Literal["opencode", "claude-code"]
"""The agent clients whose sessions can be imported."""

CLAUDE_MCP_PREFIX = "mcp__"
"""Claude Code names every MCP tool `mcp__<server>__<tool>`; its own tools never start so."""

OPENCODE_BUILTIN_TOOLS = frozenset(
    {
        "apply_patch",
        "bash",
        "batch",
        "codesearch",
        "edit",
        "glob",
        "grep",
        "invalid",
        "list",
        "lsp",
        "multiedit",
        "patch",
        "plan_enter",
        "plan_exit",
        "question",
        "read",
        "skill",
        "task",
        "todoread",
        "todowrite",
        "webfetch",
        "websearch",
        "write",
    }
)
"""opencode's own tools (1.x, current and earlier names); `invalid` stands for a call opencode could not
match to any tool. opencode names MCP tools `<server>_<tool>`, so none of these is an MCP tool's name."""


def is_client_tool(client: SessionClient, name: str) -> bool:
    """True when `name` is one of the client's own tools, never an MCP server's (rule 1)."""
    if client == "claude-code":
        return not name.startswith(CLAUDE_MCP_PREFIX)
    return name in OPENCODE_BUILTIN_TOOLS


def client_prefix(client: SessionClient, server_name: str) -> str:
    """The prefix the client puts before the tools of a server it calls `server_name`."""
    if client == "claude-code":
        return f"{CLAUDE_MCP_PREFIX}{claude_server_key(server_name)}__"
    return f"{opencode_server_key(server_name)}_"


def resolve_tool_name(name: str, listed: Iterable[str]) -> tuple[str, str] | None:
    """(listed tool, namespace) that `name` stands for by rules 2 and 3, or None.

    The namespace is the prefix that was stripped (`""` for an exact name).
    """
    tools = sorted(set(listed), key=lambda tool: (-len(tool), tool))
    if name in tools:
        return name, ""
    for tool in tools:
        if len(name) <= len(tool) or not name.endswith(tool):
            continue
        prefix = name[: -len(tool)]
        if prefix.endswith("_") and prefix.strip("_"):
            return tool, prefix
    return None


@dataclass(frozen=True)
class ToolNameMapping:
    """What each tool name of a session stands for (see the module docstring)."""

    tools: dict[str, str]
    """Session name -> the server's tool, for every name that is the server's."""
    kept: tuple[str, ...]
    """Names that are not the server's (the client's own tools, another server's), first seen first."""
    unknown: tuple[str, ...]
    """Names of the server under test that it does not list: the import must stop."""
    namespaces: tuple[str, ...]
    """The prefixes the server's tools carried in the session (`shelf_`, `mcp__shelf__`), sorted."""
    conflicting: bool = False
    """True when resolved names carry several namespaces and none is config.yaml's (rule 5)."""

    def tool_for(self, name: str) -> str:
        """The server's name for a session's tool name; the name itself when it is not the server's."""
        return self.tools.get(name, name)


def map_tool_names(
    names: Iterable[str], listed: Iterable[str], *, client: SessionClient, server_name: str | None = None
) -> ToolNameMapping:
    """Map every distinct name of `names` to a tool of `listed` by the module's rule.

    `server_name` is config.yaml's name for the server: its client prefix marks
    the server's namespace even when the session resolved no call under it.
    """
    listed = list(listed)
    ordered = list(dict.fromkeys(names))
    resolved: dict[str, tuple[str, str]] = {}
    kept: list[str] = []
    rest: list[str] = []
    for name in ordered:
        if is_client_tool(client, name):
            kept.append(name)
        elif (found := resolve_tool_name(name, listed)) is not None:
            resolved[name] = found
        else:
            rest.append(name)

    own = client_prefix(client, server_name) if server_name else None
    prefixes = {namespace for _, namespace in resolved.values() if namespace}
    conflicting = False
    if len(prefixes) > 1:
        if own in prefixes:
            # Rule 5: the configured server's namespace is the one under test; the rest are other servers'.
            for name, (_, namespace) in list(resolved.items()):
                if namespace and namespace != own:
                    del resolved[name]
                    rest.append(name)
            prefixes = {own}
        else:
            conflicting = True

    ours = prefixes | ({own} if own else set())
    unknown: list[str] = []
    for name in rest:
        if not prefixes or any(name.startswith(prefix) for prefix in ours):
            unknown.append(name)
        else:
            kept.append(name)
    order = {name: position for position, name in enumerate(ordered)}
    return ToolNameMapping(
        tools={name: tool for name, (tool, _) in resolved.items()},
        kept=tuple(sorted(kept, key=order.__getitem__)),
        unknown=tuple(sorted(unknown, key=order.__getitem__)),
        namespaces=tuple(sorted(prefixes)),
        conflicting=conflicting,
    )
