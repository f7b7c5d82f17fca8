"""Promotion: recurring failures become findings.

Captured calls are grouped (`groups`), annotations applied (`annotate`), groups scored
(`scoring`, threshold in `settings`) and the recurring ones registered (`promote`); Phase 2
bugs are registered as findings too (`bugs`).
"""
