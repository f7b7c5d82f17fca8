"""Verification: proving that a fix holds.

A finding's case (`generate`, in a manifest: `case_manifest`) is run and recorded as
evidence (`verify`), repeated enough times (`probes`) under a credit binding (`credit`);
`reverify` is what the loop calls after a fix commit and on every run.
"""
