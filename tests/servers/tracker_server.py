"""An issue tracker over MCP (stdio) that answers in JSON: projects, their issues, and each issue's details.

A second shape beside the text handbook: structured results, integer and
string ids the user never sees, a listing with a `total`, and details only a
fetch gives. Tools (all read-only, annotated so):

- `list_projects()`: `{"projects": [{id, name, lead, status, started}]}`;
- `list_issues(project_id=None)`: `{"issues": [{id, title, project, assignee, state, priority, opened}],
  "total": n}`, every issue or one project's;
- `get_issue(issue_id)`: one issue with its `labels`, `estimate_days` and `reporter`;
- `find_issues(text)`: issues whose title contains the words, as `list_issues` (no total).

Run it with `python tracker_server.py` (stdio).
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

READ_ONLY = ToolAnnotations(
    readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False
)
app = MCPServer("tracker", log_level="WARNING")

PROJECTS = [
    {
        "id": "PRJ-1",
        "name": "Harbour app",
        "lead": "Ines Okafor",
        "status": "active",
        "started": "2025-09-01",
    },
    {
        "id": "PRJ-2",
        "name": "Payroll migration",
        "lead": "Tomas Reyes",
        "status": "active",
        "started": "2026-01-12",
    },
    {
        "id": "PRJ-3",
        "name": "Field guide",
        "lead": "Mara Ellison",
        "status": "paused",
        "started": "2025-05-20",
    },
]
ISSUES = [  # id, title, project, assignee, state, priority, opened, labels, estimate, reporter
    (101, "Map tiles load slowly", "PRJ-1", "Oskar Lund", "open", "high", "2026-02-02",
     ["maps", "performance"], 3, "Ines Okafor"),
    (102, "Login fails offline", "PRJ-1", "Ines Okafor", "closed", "high", "2026-01-20",
     ["auth"], 2, "Priya Nair"),
    (103, "Dark mode colours", "PRJ-1", "Oskar Lund", "open", "low", "2026-03-05",
     ["ui"], 1, "Mara Ellison"),
    (104, "Export tide data", "PRJ-1", "Priya Nair", "open", "medium", "2026-03-18",
     ["data"], 5, "Ines Okafor"),
    (105, "Import old salaries", "PRJ-2", "Tomas Reyes", "open", "high", "2026-01-15",
     ["data", "import"], 8, "Tomas Reyes"),
    (106, "Tax table for 2026", "PRJ-2", "Gil Andersen", "closed", "high", "2026-01-28",
     ["tax"], 3, "Tomas Reyes"),
    (107, "Payslip layout", "PRJ-2", "Gil Andersen", "open", "low", "2026-02-24",
     ["ui"], 2, "Priya Nair"),
    (108, "Photo credits page", "PRJ-3", "Mara Ellison", "closed", "low", "2025-07-02",
     ["content"], 1, "Mara Ellison"),
    (109, "Moss species index", "PRJ-3", "Mara Ellison", "open", "medium", "2025-08-14",
     ["content", "data"], 4, "Oskar Lund"),
    (110, "Print layout", "PRJ-3", "Oskar Lund", "open", "medium", "2025-09-30",
     ["ui"], 2, "Mara Ellison"),
]  # fmt: skip


def _summary(issue: tuple) -> dict:
    number, title, project, assignee, state, priority, opened, *_ = issue
    return {
        "id": number,
        "title": title,
        "project": project,
        "assignee": assignee,
        "state": state,
        "priority": priority,
        "opened": opened,
    }


@app.tool(description="Every project: id, name, lead, status and start date.", annotations=READ_ONLY)
def list_projects() -> dict:
    return {"projects": PROJECTS}


@app.tool(
    description="Issues, all of them or one project's (its id from list_projects).", annotations=READ_ONLY
)
def list_issues(project_id: str | None = None) -> dict:
    found = [_summary(issue) for issue in ISSUES if project_id in (None, issue[2])]
    return {"issues": found, "total": len(found)}


@app.tool(
    description="One issue by its numeric id, with labels, estimate and reporter.", annotations=READ_ONLY
)
def get_issue(issue_id: int) -> dict:
    for issue in ISSUES:
        if issue[0] == issue_id:
            return {**_summary(issue), "labels": issue[7], "estimate_days": issue[8], "reporter": issue[9]}
    raise ToolError(f"no issue {issue_id}")


@app.tool(description="Issues whose title contains every word of the text.", annotations=READ_ONLY)
def find_issues(text: str) -> dict:
    wanted = text.lower().split()
    return {
        "issues": [_summary(issue) for issue in ISSUES if all(word in issue[1].lower() for word in wanted)]
    }


if __name__ == "__main__":
    app.run()
