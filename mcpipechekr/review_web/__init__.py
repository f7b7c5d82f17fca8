"""The review in the browser: `mcpipechekr review RUN --web` serves one page to decide on a run.

The page shows what the terminal review shows (the summary, the bugs in fix
order, the narrative), with a box per bug the server can fix, evidence links
that open the trace at the wasted step, an annotation and Approve / Exit. The
decision is recorded by `review.record_decision`, exactly as the prompt records
it. `_api` holds the JSON API's models, `_session` the run under review and its
one decision, `_page` the markup (escaped with the HTML report's helpers, under
a hashed-script Content-Security-Policy), `_server` the HTTP server (127.0.0.1,
a token, the Origin check) and the loop's one page (`LoopPage`), `_progress` what
that page shows between reviews. docs/review.md describes the API.
"""

from mcpipechekr.review_web._api import DecisionAnswer, DecisionRequest, ProgressView, RunView
from mcpipechekr.review_web._page import kpi_section
from mcpipechekr.review_web._progress import LoopProgress
from mcpipechekr.review_web._server import (
    HOST,
    TOKEN_HEADER,
    LoopPage,
    ReviewServer,
    active_loop_page,
    loop_page,
    serve_review,
)
from mcpipechekr.review_web._session import ReviewSession

__all__ = [
    "HOST",
    "TOKEN_HEADER",
    "DecisionAnswer",
    "DecisionRequest",
    "LoopPage",
    "LoopProgress",
    "ProgressView",
    "ReviewServer",
    "ReviewSession",
    "RunView",
    "active_loop_page",
    "kpi_section",
    "loop_page",
    "serve_review",
]
