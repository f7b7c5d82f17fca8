"""The review checkpoint: a person approves a run's bug report before anything is fixed.

`decision.py` records the decision (sealed review.json, the manifest's entry) and reads it back,
`bugs.py` says which bugs are shown and may be approved, `render.py` shows the review in a terminal
and `prompt.py` asks for the decision. The names below are the documented surface (docs/review.md).
"""

from mcpipechekr.review.bugs import approved_bugs, bugs_to_fix, fix_order
from mcpipechekr.review.decision import approved_report, current_review, record_decision, require_approval
from mcpipechekr.review.prompt import continue_hint, help_text, interactive_review, review_checkpoint
from mcpipechekr.session_summary import write_session_summary

__all__ = [
    "approved_bugs",
    "approved_report",
    "bugs_to_fix",
    "continue_hint",
    "current_review",
    "fix_order",
    "help_text",
    "interactive_review",
    "record_decision",
    "require_approval",
    "review_checkpoint",
    "write_session_summary",
]
