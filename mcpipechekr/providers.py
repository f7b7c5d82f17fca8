"""Provider strings: which model runs a phase, written `provider/model`.

Accepted spellings:
- `provider/model`, e.g. `openai/gpt-4o`, `anthropic/claude-sonnet-4-6`, `minimax/m2.5`;
  the model part may itself contain `/` (`openrouter/meta-llama/llama-3.3-70b`);
- pydantic-ai's own `provider:model`, e.g. `openai:gpt-4o` (the model part may
  contain `:`, as Ollama tags do: `ollama:llama3.1:8b`);
- `demo`: the offline scripted demo model, with no model part.

Whichever of `/` and `:` comes first separates the provider. The provider must
be one pydantic-ai can build (`PYDANTIC_AI_PROVIDERS`), a named OpenAI-compatible
endpoint from `providers.endpoints` in config.yaml, or a built-in endpoint
preset (`minimax`). Checking this when the file is read means a typo fails in
`mcpipechekr validate`, not half-way through a paid run.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict, Field, model_serializer

DEMO = "demo"

# Chat-model providers of pydantic-ai's `infer_provider_class` (pydantic-ai 2.x), i.e. the names
# `Agent("provider:model")` accepts. Embedding- and speech-only providers are left out: they cannot
# drive an agent. tests/test_config.py checks that the installed pydantic-ai still knows each name.
PYDANTIC_AI_PROVIDERS: tuple[str, ...] = (
    "alibaba",
    "anthropic",
    "azure",
    "bedrock",
    "cerebras",
    "cohere",
    "deepseek",
    "fireworks",
    "github",
    "google",
    "google-cloud",
    "groq",
    "heroku",
    "huggingface",
    "litellm",
    "meta",
    "mistral",
    "moonshotai",
    "nebius",
    "ollama",
    "openai",
    "openai-chat",
    "openai-responses",
    "openrouter",
    "ovhcloud",
    "sambanova",
    "together",
    "vercel",
    "vllm",
    "xai",
    "zai",
)


class EndpointConfig(BaseModel):
    """An OpenAI-compatible chat endpoint (Ollama, vLLM, LM Studio, llama.cpp, MiniMax, ...)."""

    model_config = ConfigDict(extra="forbid")

    base_url: str = Field(
        description="Base URL of the OpenAI-compatible API, e.g. http://127.0.0.1:11434/v1."
    )
    api_key_env: str | None = Field(
        default=None,
        description="Environment variable holding the API key; leave out for keyless local servers.",
    )


# Endpoints every config knows without declaring them; a config may redefine a name.
BUILTIN_ENDPOINTS: dict[str, EndpointConfig] = {
    "minimax": EndpointConfig(base_url="https://api.minimax.io/v1", api_key_env="MINIMAX_API_KEY"),
}

_PROVIDER_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
ACCEPTED_FORMS = (
    "`provider/model` (e.g. openai/gpt-4o), pydantic-ai's `provider:model` "
    "(e.g. anthropic:claude-sonnet-4-6), or `demo`"
)


class ProviderSpec(BaseModel):
    """A parsed provider string. Written back as `provider/model` (or `demo`) wherever it is recorded."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    provider: str
    model: str | None = None

    @property
    def is_demo(self) -> bool:
        return self.provider == DEMO

    @property
    def pydantic_ai_name(self) -> str:
        """The `provider:model` name pydantic-ai's `Agent(...)`/`infer_model` take (`demo` stays `demo`)."""
        return self.provider if self.model is None else f"{self.provider}:{self.model}"

    def __str__(self) -> str:
        return self.provider if self.model is None else f"{self.provider}/{self.model}"

    @model_serializer
    def _as_string(self) -> str:
        return str(self)


def known_providers(endpoints: Iterable[str] = ()) -> list[str]:
    """Every provider name a provider string may use, given the configured endpoint names."""
    return sorted({*PYDANTIC_AI_PROVIDERS, *BUILTIN_ENDPOINTS, *endpoints, DEMO})


def parse_provider(text: str, endpoints: Iterable[str] = ()) -> ProviderSpec:
    """Parse a provider string; raise ValueError with the accepted forms when it is not one."""
    endpoints = list(endpoints)
    text = text.strip()
    if text == DEMO:
        return ProviderSpec(provider=DEMO)
    cuts = [index for index in (text.find("/"), text.find(":")) if index >= 0]
    if not cuts:
        raise ValueError(f"'{text}' names no provider: write {ACCEPTED_FORMS}")
    cut = min(cuts)
    provider, model = text[:cut], text[cut + 1 :]
    if not provider or not model or not _PROVIDER_NAME.match(provider) or any(ch.isspace() for ch in model):
        raise ValueError(f"'{text}' is not a provider string: write {ACCEPTED_FORMS}")
    if provider == DEMO:
        raise ValueError(f"'{text}': `demo` takes no model part, write just `demo`")
    if (
        provider not in PYDANTIC_AI_PROVIDERS
        and provider not in BUILTIN_ENDPOINTS
        and provider not in endpoints
    ):
        raise ValueError(
            f"unknown provider '{provider}' in '{text}': use one of {', '.join(known_providers(endpoints))}, "
            "or name an endpoint under providers.endpoints"
        )
    return ProviderSpec(provider=provider, model=model)
