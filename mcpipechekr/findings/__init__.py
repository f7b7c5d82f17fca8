"""Findings: recurring failures across runs and real use, with evidence and a lifecycle.

Grouped by concern, each group importing only from those below it (the import-linter
contract in pyproject.toml checks it, and names its one exception):

- `views/`: the findings rendered, exported as issues, served over MCP;
- `verification/`: a finding's case, its runs as evidence, what the loop calls after a fix;
- `promotion/`: recurring groups of failures (and Phase 2 bugs) registered as findings;
- `lifecycle/` (lifecycle.db, authoritative) and `evidence/` (call records and index.db,
  rebuildable), side by side;
- below them all, as modules of this package: `home` (where it all lives), `errors`,
  `locking` and `classes` (the defect classes, from capture to display).

Deleting index.db loses nothing: lifecycle.db holds the registered findings, annotations,
lifecycle states and verification evidence.
"""
