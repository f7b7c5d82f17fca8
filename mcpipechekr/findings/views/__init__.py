"""Views: the findings for people, tools and coding agents.

Text, markdown or JSON (`render`), one issue file per finding (`export`), and the findings
as an MCP server (`serve`).
"""
