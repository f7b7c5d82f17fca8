"""Provider strings to pydantic-ai models: the one place a phase gets its model.

Every phase that talks to an LLM (the lint's tool-selection test, the Phase 1
native agent, later the evaluators) builds its model here, so a provider string
means the same thing everywhere: a configured or built-in OpenAI-compatible
endpoint (`providers.endpoints`, `minimax`) becomes an OpenAI chat model at its
`base_url`; anything else is handed to pydantic-ai's own `provider:model`
inference, which reads the provider's usual environment variables
(`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, `OPENAI_BASE_URL`, ...). Keys come from
the environment or the `.env` beside config.yaml (`Config.environ`; the
environment wins), never from a file we write. pydantic-ai reads only
`os.environ`, and `.env` is kept out of it (the server under test inherits our
environment), so a key or base URL found only in `.env` is handed to the
provider class explicitly (`api_key=`, `base_url=`); one in the environment is
left for pydantic-ai to read, as before.

`demo` is not a model: the scripted demo model is run by `runners/demo.py`, and
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
import inspect
import os
import ssl
from collections.abc import Mapping
from typing import Any

from mcpipechekr._util.yamlsrc import display_path
from mcpipechekr.config import Config
from mcpipechekr.errors import UserError
from mcpipechekr.providers import PROVIDER_ENV, ProviderSpec, first_set, missing_key


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
    environ = config.environ
    needed = missing_key(spec, config.providers.endpoints, environ)
    if needed is not None:
        raise UserError(missing_key_message(spec, needed, config))
    endpoint = config.providers.endpoint_for(spec)
    try:
        if endpoint is not None:
            from pydantic_ai.models.openai import OpenAIChatModel
            from pydantic_ai.providers.openai import OpenAIProvider

            key = environ.get(endpoint.api_key_env) if endpoint.api_key_env else None
            provider = OpenAIProvider(base_url=endpoint.base_url, api_key=key or "not-needed")
            return OpenAIChatModel(spec.model or "", provider=provider)
        from pydantic_ai.models import infer_model

        settings = _settings_from_dotenv(spec, environ)
        if not settings:
            return infer_model(spec.pydantic_ai_name)
        from pydantic_ai.providers import infer_provider_class

        provider_class = infer_provider_class(spec.provider)
        return infer_model(spec.pydantic_ai_name, provider_factory=lambda _: provider_class(**settings))
    except UserError:
        raise
    except Exception as exc:  # missing key, missing SDK extra: the user can fix these
        raise UserError(f"cannot use provider {spec} for {purpose}: {exc}") from exc


def missing_key_message(spec: ProviderSpec, name: str, config: Config) -> str:
    """What to do about a provider's missing key: where it is looked for, and both ways to give it."""
    return (
        f"provider {spec} needs an API key in ${name}: export it, or add `{name}=...` to "
        f"{display_path(config.dotenv_path)} (beside config.yaml; never copied into a run)"
    )


def _settings_from_dotenv(spec: ProviderSpec, environ: Mapping[str, str]) -> dict[str, str]:
    """`api_key`/`base_url` for the provider class, for the values pydantic-ai cannot see in `os.environ`.

    Only those the class takes: a provider without a `base_url` argument reads
    no base-URL variable either.
    """
    entry = PROVIDER_ENV.get(spec.provider)
    if entry is None:
        return {}
    wanted = {"api_key": first_set(entry.keys, environ)}
    if entry.base_url:
        wanted["base_url"] = entry.base_url if environ.get(entry.base_url) else None
    settings = {
        argument: environ[name]
        for argument, name in wanted.items()
        if name is not None and os.environ.get(name) != environ[name]
    }
    if not settings:
        return {}
    from pydantic_ai.providers import infer_provider_class

    accepted = inspect.signature(infer_provider_class(spec.provider)).parameters
    return {argument: value for argument, value in settings.items() if argument in accepted}
