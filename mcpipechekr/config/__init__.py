"""config.yaml: how to reach the server under test, which models run each phase, and the knobs.

Loading (`load_config`) happens in this order, and the result is the *effective*
configuration, the one later recorded in a run's manifest:

1. read the YAML with the line of every key (`_util.yamlsrc`), so each problem
   is reported as `config.yaml:LINE: field 'a.b': message`;
2. substitute `${NAME}` / `${NAME:-default}` from the process environment and
   a `.env` file beside config.yaml (the process environment wins);
3. apply command-line overrides (server-selection flags, `--phaseN-provider`,
   `--tasks`): flags beat the file. A provider flag's string goes into the
   data like the file's own, so it is parsed by the same validator and a bad
   one is reported under the flag's name;
4. validate with the models below and resolve relative paths against
   config.yaml's folder.

Secrets: every value substituted from the environment, and every header and
server environment value, is a secret. `Config.redacted_dump()` and
`Config.config_hash` never contain them, and `Config.redactor` scrubs them from
any text or JSON a later step is about to write.

Provider keys: the `.env` read in step 2 also serves the models. `.env` is
never loaded into `os.environ`, because the server under test inherits our
environment and must not be handed secrets it did not ask for; instead
`Config.environ` is the merged view (`.env` overlaid by the process
environment) that `llm.build_model`, the agent-CLI runners and the fix agents
take keys from, and `Config.provider_env()` the provider variables they pass
on. Every `.env` value, and every provider key in use, is a secret too.

The package is split by what each module holds: `server` (the server section),
`sections` and `fix` (the other sections), `effective` (`Config`, its secrets
and environment), `loading` (`load_config`), `flags` (`PROVIDER_FLAGS`) and
`secret_names`. Callers import from `mcpipechekr.config`, which names them all.
"""

from __future__ import annotations

from mcpipechekr._util.fields import MAX_SECONDS
from mcpipechekr._util.redact import Redactor
from mcpipechekr._util.yamlsrc import ConfigFileError
from mcpipechekr.config.effective import Config
from mcpipechekr.config.fix import (
    FIX_PLACEHOLDERS,
    TEST_PLACEHOLDERS,
    FixAgentName,
    FixConfig,
    template_fields,
)
from mcpipechekr.config.flags import PHASES, PROVIDER_FLAGS, ProviderFlag, provider_flag
from mcpipechekr.config.loading import (
    DEFAULT_CONFIG_FILE,
    ConfigOverrides,
    ServerOverride,
    load_config,
)
from mcpipechekr.config.secret_names import MASK, secret_name
from mcpipechekr.config.sections import (
    CheckConfig,
    KpiConfig,
    LoopConfig,
    LoopStop,
    PathsConfig,
    ProvidersConfig,
    ReviewConfig,
    ThresholdsConfig,
    TimeoutsConfig,
)
from mcpipechekr.config.server import HealthConfig, LaunchSpec, ServerConfig

__all__ = [
    "DEFAULT_CONFIG_FILE",
    "FIX_PLACEHOLDERS",
    "MASK",
    "MAX_SECONDS",
    "PHASES",
    "PROVIDER_FLAGS",
    "TEST_PLACEHOLDERS",
    "CheckConfig",
    "Config",
    "ConfigFileError",
    "ConfigOverrides",
    "FixAgentName",
    "FixConfig",
    "HealthConfig",
    "KpiConfig",
    "LaunchSpec",
    "LoopConfig",
    "LoopStop",
    "PathsConfig",
    "ProviderFlag",
    "ProvidersConfig",
    "Redactor",
    "ReviewConfig",
    "ServerConfig",
    "ServerOverride",
    "ThresholdsConfig",
    "TimeoutsConfig",
    "load_config",
    "provider_flag",
    "secret_name",
    "template_fields",
]
