"""doit's entry point for this folder: `doit list` shows the MCPipeChekr pipeline, `doit loop` runs it."""

from mcpipechekr.dodo import *  # noqa: F403
