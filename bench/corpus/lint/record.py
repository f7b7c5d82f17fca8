"""Re-record the lint corpus: install each published server at its pinned version and keep its tools/list.

The lint corpus (bench/corpus/lint/servers/*.json) is the tool list of published
MCP servers exactly as each one serves it, so tests and bench/lint_precision.py
run offline. This script is how those files were made and how to make them
again after a pin moves:

    python bench/corpus/lint/record.py            # every server not recorded yet
    python bench/corpus/lint/record.py --all      # every server
    python bench/corpus/lint/record.py duckduckgo # one

Each PyPI server gets a virtual environment of its own (their mcp versions
differ from ours); the npm servers share one `npm install --prefix`. Installs go
to `.cache/lint-corpus/` (or `$MCPIPECHEKR_LINT_CORPUS`). A server is started
with placeholder credentials where it refuses to start without any: listing
tools never uses them, and no tool is called. Servers tried and left out because
they would not list their tools here without a live service or a download at
install time: mcp-server-sqlite, chroma-mcp, mcp-server-qdrant, yfinance-mcp,
mcp-server-tree-sitter, @playwright/mcp, @bytebase/dbhub, @heroku/mcp-server,
basic-memory (needs Python 3.12).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
SERVERS_DIR = HERE / "servers"
PLACEHOLDER = "placeholder-not-a-real-key"


@dataclass(frozen=True)
class Published:
    key: str
    registry: str  # "pypi" or "npm"
    package: str
    version: str
    executable: str
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    source: str = ""

    @property
    def pin(self) -> str:
        return (
            f"{self.package}=={self.version}" if self.registry == "pypi" else f"{self.package}@{self.version}"
        )


SERVERS: tuple[Published, ...] = (
    # PyPI
    Published("mcp-server-git", "pypi", "mcp-server-git", "2026.10.19", "mcp-server-git"),
    Published("mcp-server-time", "pypi", "mcp-server-time", "2026.10.19", "mcp-server-time"),
    Published("mcp-server-fetch", "pypi", "mcp-server-fetch", "2026.10.24", "mcp-server-fetch"),
    Published("duckduckgo-mcp-server", "pypi", "duckduckgo-mcp-server", "0.7.0", "duckduckgo-mcp-server"),
    Published("wikipedia-mcp", "pypi", "wikipedia-mcp", "2.0.1", "wikipedia-mcp"),
    Published(
        "mcp-obsidian", "pypi", "mcp-obsidian", "0.2.3", "mcp-obsidian", env={"OBSIDIAN_API_KEY": PLACEHOLDER}
    ),
    Published(
        "arxiv-mcp-server",
        "pypi",
        "arxiv-mcp-server",
        "0.8.2",
        "arxiv-mcp-server",
        ("--storage-path", "{tmp}"),
    ),
    Published("excel-mcp-server", "pypi", "excel-mcp-server", "2.2.2", "excel-mcp-server", ("stdio",)),
    Published("markitdown-mcp", "pypi", "markitdown-mcp", "0.0.1a8", "markitdown-mcp"),
    Published("blender-mcp", "pypi", "blender-mcp", "2.0.0", "blender-mcp"),
    Published("mcp-server-calculator", "pypi", "mcp-server-calculator", "0.2.1", "mcp-server-calculator"),
    Published("office-word-mcp-server", "pypi", "office-word-mcp-server", "1.1.11", "word_mcp_server"),
    Published("mcp-pandoc", "pypi", "mcp-pandoc", "0.11.1", "mcp-pandoc"),
    Published(
        "awslabs-aws-documentation-mcp-server",
        "pypi",
        "awslabs-aws-documentation-mcp-server",
        "1.2.3",
        "awslabs.aws-documentation-mcp-server",
    ),
    # npm
    Published(
        "server-everything",
        "npm",
        "@modelcontextprotocol/server-everything",
        "2026.8.31",
        "mcp-server-everything",
    ),
    Published(
        "server-filesystem",
        "npm",
        "@modelcontextprotocol/server-filesystem",
        "2026.8.31",
        "mcp-server-filesystem",
        ("{tmp}",),
    ),
    Published(
        "server-memory",
        "npm",
        "@modelcontextprotocol/server-memory",
        "2026.8.31",
        "mcp-server-memory",
        env={"MEMORY_FILE_PATH": "{tmp}/m.jsonl"},
    ),
    Published(
        "server-sequential-thinking",
        "npm",
        "@modelcontextprotocol/server-sequential-thinking",
        "2026.8.31",
        "mcp-server-sequential-thinking",
    ),
    Published(
        "server-github",
        "npm",
        "@modelcontextprotocol/server-github",
        "2025.4.8",
        "mcp-server-github",
        env={"GITHUB_PERSONAL_ACCESS_TOKEN": PLACEHOLDER},
    ),
    Published(
        "server-puppeteer",
        "npm",
        "@modelcontextprotocol/server-puppeteer",
        "2025.5.12",
        "mcp-server-puppeteer",
    ),
    Published("antv-chart", "npm", "@antv/mcp-server-chart", "0.9.10", "mcp-server-chart"),
    Published("context7", "npm", "@upstash/context7-mcp", "4.1.1", "context7-mcp"),
    Published("notion", "npm", "@notionhq/notion-mcp-server", "2.5.2", "notion-mcp-server"),
    Published("chrome-devtools", "npm", "chrome-devtools-mcp", "1.11.0", "chrome-devtools-mcp"),
    Published("desktop-commander", "npm", "@wonderwhy-er/desktop-commander", "0.2.52", "desktop-commander"),
    Published("exa", "npm", "exa-mcp-server", "3.4.1", "exa-mcp-server", env={"EXA_API_KEY": PLACEHOLDER}),
    Published("tavily", "npm", "tavily-mcp", "0.2.22", "tavily-mcp", env={"TAVILY_API_KEY": PLACEHOLDER}),
    Published(
        "firecrawl", "npm", "firecrawl-mcp", "3.26.0", "firecrawl-mcp", env={"FIRECRAWL_API_KEY": PLACEHOLDER}
    ),
    Published(
        "youtube-transcript",
        "npm",
        "@kimtaeyoon83/mcp-server-youtube-transcript",
        "0.1.1",
        "mcp-server-youtube-transcript",
    ),
    Published(
        "executeautomation-playwright",
        "npm",
        "@executeautomation/playwright-mcp-server",
        "1.0.12",
        "playwright-mcp-server",
    ),
    Published(
        "brave-search",
        "npm",
        "@brave/brave-search-mcp-server",
        "2.1.4",
        "brave-search-mcp-server",
        env={"BRAVE_API_KEY": PLACEHOLDER},
    ),
    Published("kubernetes", "npm", "mcp-server-kubernetes", "4.1.7", "mcp-server-kubernetes"),
    Published(
        "agent-infra-commands", "npm", "@agent-infra/mcp-server-commands", "1.2.18", "mcp-server-commands"
    ),
)


def cache_dir() -> Path:
    return Path(os.environ.get("MCPIPECHEKR_LINT_CORPUS", REPO / ".cache" / "lint-corpus"))


def _run(command: list[str], **kwargs) -> str | None:
    done = subprocess.run(command, capture_output=True, text=True, timeout=900, **kwargs)
    return None if done.returncode == 0 else (done.stderr or done.stdout)[-2000:]


def install(server: Published, cache: Path) -> str | None:
    if server.registry == "npm":
        return None  # installed together, see install_npm
    folder = cache / server.key
    if (folder / "bin" / server.executable).exists():
        return None
    return _run([sys.executable, "-m", "venv", str(folder)]) or _run(
        [str(folder / "bin" / "pip"), "install", "-q", server.pin]
    )


def install_npm(servers: list[Published], cache: Path) -> str | None:
    pins = [s.pin for s in servers if s.registry == "npm"]
    if not pins:
        return None
    folder = cache / "npm"
    folder.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "PUPPETEER_SKIP_DOWNLOAD": "1",
        "PUPPETEER_SKIP_CHROMIUM_DOWNLOAD": "1",
        "PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD": "1",
    }
    return _run(["npm", "install", "--no-audit", "--no-fund", "--prefix", str(folder), *pins], env=env)


def command(server: Published, cache: Path) -> str:
    if server.registry == "pypi":
        return str(cache / server.key / "bin" / server.executable)
    return str(cache / "npm" / "node_modules" / ".bin" / server.executable)


async def list_tools(server: Published, cache: Path) -> list[dict]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    with tempfile.TemporaryDirectory() as tmp:
        fill = lambda s: s.replace("{tmp}", tmp)  # noqa: E731
        env = {"PATH": os.environ["PATH"], "HOME": tmp, **{k: fill(v) for k, v in server.env.items()}}
        params = StdioServerParameters(
            command=command(server, cache), args=[fill(a) for a in server.args], env=env, cwd=tmp
        )
        with open(os.devnull, "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    tools, cursor = [], None
                    while True:
                        page = (
                            await session.list_tools(cursor=cursor) if cursor else await session.list_tools()
                        )
                        tools += [
                            t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in page.tools
                        ]
                        cursor = page.next_cursor
                        if not cursor:
                            return tools


def record(server: Published, cache: Path) -> str:
    try:
        tools = asyncio.run(asyncio.wait_for(list_tools(server, cache), 90))
    except BaseException as error:  # noqa: BLE001 - reported per server, the others go on
        return f"{server.key}: FAILED {type(error).__name__}: {error}"[:400]
    data = {
        "about": f"tools/list of {server.pin} ({server.registry}), listed over stdio; verbatim.",
        "server": server.key,
        "registry": server.registry,
        "package": server.package,
        "version": server.version,
        "tools": tools,
    }
    (SERVERS_DIR / f"{server.key}.json").write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    return f"{server.key}: {len(tools)} tool(s)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("keys", nargs="*")
    parser.add_argument("--all", action="store_true")
    options = parser.parse_args()
    chosen = [
        s
        for s in SERVERS
        if (
            s.key in options.keys
            if options.keys
            else options.all or not (SERVERS_DIR / f"{s.key}.json").exists()
        )
    ]
    cache = cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    SERVERS_DIR.mkdir(exist_ok=True)
    with ThreadPoolExecutor(8) as pool:
        npm = pool.submit(install_npm, chosen, cache)
        for server, problem in zip(chosen, pool.map(lambda s: install(s, cache), chosen), strict=True):
            if problem:
                print(f"{server.key}: install failed: {problem}", file=sys.stderr)
        if problem := npm.result():
            print(f"npm install failed: {problem}", file=sys.stderr)
        for line in pool.map(lambda s: record(s, cache), chosen):
            print(line)


if __name__ == "__main__":
    main()
