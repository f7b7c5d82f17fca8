"""Provider strings to pydantic-ai models: the one place a phase gets its model.

Every phase that talks to an LLM (the lint's tool-selection test, the Phase 1
native agent, later the evaluators) builds its model here, so a provider string
means the same thing everywhere: a configured or built-in OpenAI-compatible
endpoint (`providers.endpoints`, `minimax`) becomes an OpenAI chat model at its
`base_url`; anything else is handed to pydantic-ai's own `provider:model`
inference, which reads the provider's usual environment variables
(`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, `OPENAI_BASE_URL`, ...). Keys come from
the environment (or the `.env` beside config.yaml) only, never from a file we write.

`demo` is not a model: the scripted demo model lives in `runners/demo.py`, and
callers handle `spec.is_demo` before getting here.

Cost: a model owns an HTTP client, and building one reads the system's CA
bundle into a fresh TLS context (~60 ms of CPU, during which an event loop
stands still). Build a model once per provider and share it between
concurrent requests (pydantic-ai models are made for that); the Phase 1 native
runner keeps one per provider for a whole run. Other HTTP clients of ours take
`tls_context()`, built once per process.
"""

from __future__ import annotations

import functools
import os
import ssl
from typing import Any

from mcpipechekr.config import Config
from mcpipechekr.errors import UserError
from mcpipechekr.providers import ProviderSpec


def quiet_agents() -> None:
    """pydantic-ai greets a terminal with a banner on a process's first agent run; in the middle of
    the loop's output it would read as ours. Called wherever our agents are built."""
    import pydantic_ai

    pydantic_ai.BANNER_ENABLED = False


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The process's one TLS context for HTTP clients, with httpx's defaults (SSL_CERT_FILE, system CAs).

    Sharing it is safe: a context is only read once configured.
    """
    import httpx2

    return httpx2.create_ssl_context()


def build_model(spec: ProviderSpec, config: Config, *, purpose: str = "this phase") -> Any:
    """The pydantic-ai model a provider string names; a UserError the user can act on otherwise.

    `purpose` finishes the error message ("cannot use provider X for <purpose>").
    """
    if spec.is_demo:
        raise UserError(f"provider `demo` is the scripted demo model, not an LLM; it cannot serve {purpose}")
    quiet_agents()
    endpoint = config.providers.endpoint_for(spec)
    try:
        if endpoint is not None:
            from pydantic_ai.models.openai import OpenAIChatModel
            from pydantic_ai.providers.openai import OpenAIProvider

            key = os.environ.get(endpoint.api_key_env) if endpoint.api_key_env else None
            if endpoint.api_key_env and not key:
                raise UserError(
                    f"provider {spec} needs an API key in ${endpoint.api_key_env} (providers.endpoints)"
                )
            provider = OpenAIProvider(base_url=endpoint.base_url, api_key=key or "not-needed")
            return OpenAIChatModel(spec.model or "", provider=provider)
        from pydantic_ai.models import infer_model

        return infer_model(spec.pydantic_ai_name)
    except UserError:
        raise
    except Exception as exc:  # missing key, missing SDK extra: the user can fix these
        raise UserError(f"cannot use provider {spec} for {purpose}: {exc}") from exc
