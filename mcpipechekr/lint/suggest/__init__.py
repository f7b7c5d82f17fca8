"""Description rewrites from evidence: `mcpipechekr lint --suggest RUN`.

After an evaluation, each bug whose cause is a description (a wrong or late
tool choice, a parameter that would have saved calls but went unused, a
parameter whose accepted values the agent had to guess) gets a new tool or
parameter text, the trace steps that motivate it, and the selection test run
again with it. `evidence.py` decides which bugs qualify and quotes their steps,
`rewrite.py` builds the text offline, `draft.py` lets the phase-0.5 model draft
it, `rescore.py` measures it, `orchestrate.py` puts them together and
`render.py` prints the result. docs/lint.md describes it.
"""

from mcpipechekr.lint.suggest.orchestrate import suggest_descriptions
from mcpipechekr.lint.suggest.render import render_suggestions

__all__ = ["render_suggestions", "suggest_descriptions"]
