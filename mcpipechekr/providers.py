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

Which environment variables each provider reads its key (and base URL) from
lives here too (`PROVIDER_ENV`): the same table tells `llm.build_model` which
key to hand pydantic-ai when it sits in `.env`, the agent CLIs which variables
to receive, the redactor which values to scrub, and the preflight which key a
phase is missing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

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


@dataclass(frozen=True)
class ProviderEnv:
    """The environment variables a pydantic-ai provider reads, by the names its SDK uses."""

    keys: tuple[str, ...]
    """API key variables, the first that is set wins (`GOOGLE_API_KEY`, then `GEMINI_API_KEY`)."""
    base_url: str | None = None
    """The variable that moves the provider to another URL (a proxy, a local compatible server)."""
    key_required: bool = True
    """Whether the provider refuses to start without a key; False where it may run keyless (a local
    server, cloud credentials of another kind), so a missing key is no sure failure."""
    keyless_with_base_url: bool = False
    """Whether a base URL alone will do: OpenAI's SDK talks to a compatible server without a key."""


_OPENAI = ProviderEnv(("OPENAI_API_KEY",), base_url="OPENAI_BASE_URL", keyless_with_base_url=True)

# tests/test_providers_env.py checks against the installed pydantic-ai that each provider marked
# key_required refuses to build without its key and builds with it.
PROVIDER_ENV: dict[str, ProviderEnv] = {
    "alibaba": ProviderEnv(("ALIBABA_API_KEY", "DASHSCOPE_API_KEY")),
    "anthropic": ProviderEnv(("ANTHROPIC_API_KEY",), base_url="ANTHROPIC_BASE_URL"),
    "azure": ProviderEnv(("AZURE_OPENAI_API_KEY",), key_required=False),
    "cerebras": ProviderEnv(("CEREBRAS_API_KEY",)),
    "cohere": ProviderEnv(("CO_API_KEY",)),
    "deepseek": ProviderEnv(("DEEPSEEK_API_KEY",)),
    "fireworks": ProviderEnv(("FIREWORKS_API_KEY",)),
    "github": ProviderEnv(("GITHUB_API_KEY",)),
    "google": ProviderEnv(("GOOGLE_API_KEY", "GEMINI_API_KEY")),
    "google-cloud": ProviderEnv(("GOOGLE_API_KEY", "GEMINI_API_KEY"), key_required=False),
    "groq": ProviderEnv(("GROQ_API_KEY",)),
    "heroku": ProviderEnv(("HEROKU_INFERENCE_KEY",), base_url="HEROKU_INFERENCE_URL"),
    "huggingface": ProviderEnv(("HF_TOKEN",)),
    "meta": ProviderEnv(("META_API_KEY",)),
    "mistral": ProviderEnv(("MISTRAL_API_KEY",)),
    "moonshotai": ProviderEnv(("MOONSHOTAI_API_KEY",), base_url="MOONSHOTAI_BASE_URL"),
    "nebius": ProviderEnv(("NEBIUS_API_KEY",)),
    "ollama": ProviderEnv(("OLLAMA_API_KEY",), base_url="OLLAMA_BASE_URL", key_required=False),
    "openai": _OPENAI,
    "openai-chat": _OPENAI,
    "openai-responses": _OPENAI,
    "openrouter": ProviderEnv(("OPENROUTER_API_KEY",)),
    "ovhcloud": ProviderEnv(("OVHCLOUD_API_KEY",)),
    "sambanova": ProviderEnv(("SAMBANOVA_API_KEY",), base_url="SAMBANOVA_BASE_URL"),
    "together": ProviderEnv(("TOGETHER_API_KEY",)),
    "vercel": ProviderEnv(("VERCEL_AI_GATEWAY_API_KEY", "VERCEL_OIDC_TOKEN")),
    "vllm": ProviderEnv(("VLLM_API_KEY",), base_url="VLLM_BASE_URL", key_required=False),
    "xai": ProviderEnv(("XAI_API_KEY",)),
    "zai": ProviderEnv(("ZAI_API_KEY",)),
}
"""The key and base-URL variables of pydantic-ai's providers (`bedrock` and `litellm` read none of
their own: AWS credentials, explicit settings)."""

AGENT_CLI_ENV: tuple[str, ...] = ("ANTHROPIC_AUTH_TOKEN",)
"""Credentials the agent CLIs read besides the providers' keys (Claude Code's bearer token)."""


def provider_env_names() -> list[str]:
    """Every key and base-URL variable of `PROVIDER_ENV` and `AGENT_CLI_ENV`, each once, sorted."""
    names = {*AGENT_CLI_ENV}
    for entry in PROVIDER_ENV.values():
        names.update(entry.keys)
        if entry.base_url:
            names.add(entry.base_url)
    return sorted(names)


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


def endpoint_for(spec: ProviderSpec, endpoints: Mapping[str, EndpointConfig]) -> EndpointConfig | None:
    """The OpenAI-compatible endpoint a provider names (configured first, then built-in), else None."""
    return endpoints.get(spec.provider) or BUILTIN_ENDPOINTS.get(spec.provider)


def first_set(names: Iterable[str], environ: Mapping[str, str]) -> str | None:
    """The first of `names` with a non-empty value in `environ`."""
    return next((name for name in names if environ.get(name)), None)


def missing_key(
    spec: ProviderSpec, endpoints: Mapping[str, EndpointConfig], environ: Mapping[str, str]
) -> str | None:
    """The variable a provider needs and `environ` lacks, else None (also when we cannot tell).

    An endpoint needs its `api_key_env` (none: keyless). A pydantic-ai provider
    needs the first of its keys when `PROVIDER_ENV` says it refuses to start
    without one (OpenAI's not when a base URL names a compatible server of the
    user's, which may take none). `demo` needs nothing.
    """
    if spec.is_demo:
        return None
    endpoint = endpoint_for(spec, endpoints)
    if endpoint is not None:
        needed = endpoint.api_key_env
        return needed if needed and not environ.get(needed) else None
    entry = PROVIDER_ENV.get(spec.provider)
    if entry is None or not entry.key_required or first_set(entry.keys, environ):
        return None
    if entry.keyless_with_base_url and entry.base_url and environ.get(entry.base_url):
        return None
    return entry.keys[0]


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
