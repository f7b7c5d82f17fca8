"""Findings: recurring failures across runs and real use, with evidence and a lifecycle.

Evidence comes from call records (`records`), written by the passive capture
proxy and by the Phase 1 capture proxy into journals under the findings home
(`home`). `index` derives a SQLite view of them (index.db, rebuildable);
`promote` turns recurring groups into findings; `lifecycle.db` holds what is
authoritative: findings registered, annotations, lifecycle states and
verification evidence, so deleting index.db loses nothing.
"""
