"""Evidence: call records and the index built from them.

Call records (`records`) come from the passive proxy (`passive`) and from Phase 1 capture
journals (`phase1`); both pair requests with responses the same way (`tracker`). `index`
derives index.db from the journals (`journal_rows`, `windows`); it can always be rebuilt.
"""
