"""A knowledge base over markdown notes, served over MCP stdio; installed as a package, slow to start."""
