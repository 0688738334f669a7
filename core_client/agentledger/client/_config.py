"""Client configuration: the table of environment variables (:data:`ENVIRONMENT`) and the
``resolve_*`` functions that apply it, argument first, then environment, then default. The
client side's only reader of the environment; see docs/design/client-configuration.md.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from agentledger.client._errors import ConfigurationError
from agentledger.protocol.limits import AGENT_PATTERN

__all__ = [
    "AGENT_NAME_RE",
    "DEFAULT",
    "DEFAULT_EMBEDDINGS_MODEL",
    "DEFAULT_OPENAI_MODEL",
    "DEFAULT_URL",
    "ENVIRONMENT",
    "Default",
    "EnvVar",
    "child_environment",
    "default_spill_dir",
    "resolve_agent",
    "resolve_api_key",
    "resolve_embeddings_api_key",
    "resolve_embeddings_model",
    "resolve_embeddings_url",
    "resolve_openai_model",
    "resolve_spill_dir",
    "resolve_url",
]

DEFAULT_URL: Final = "http://127.0.0.1:8765"
DEFAULT_EMBEDDINGS_MODEL: Final = "text-embedding-3-small"
DEFAULT_OPENAI_MODEL: Final = "gpt-4o-mini"

#: Agent names accepted by the server (wire contract, "Event object").
AGENT_NAME_RE: Final = re.compile(AGENT_PATTERN)


class Default:
    """Sentinel type of :data:`DEFAULT`: "use the environment or the built-in default"."""

    def __repr__(self) -> str:
        return "DEFAULT"


#: Pass as ``spill_dir`` (the default) to take ``AGENTLEDGER_SPILL_DIR`` or the cache directory.
DEFAULT: Final = Default()


@dataclass(frozen=True)
class EnvVar:
    """One documented environment variable."""

    name: str
    default: str
    unit: str
    meaning: str


ENVIRONMENT: Final[tuple[EnvVar, ...]] = (
    EnvVar("AGENTLEDGER_URL", DEFAULT_URL, "URL", "base URL of the ledger server"),
    EnvVar("AGENTLEDGER_API_KEY", "", "string", "bearer API key (required)"),
    EnvVar("AGENTLEDGER_AGENT", "", "agent name", "agent events are logged under"),
    EnvVar(
        "AGENTLEDGER_EMBEDDINGS_URL",
        "",
        "URL",
        "OpenAI-compatible embeddings endpoint for answer similarity in regression cases",
    ),
    EnvVar(
        "AGENTLEDGER_EMBEDDINGS_MODEL",
        DEFAULT_EMBEDDINGS_MODEL,
        "model name",
        "embeddings model for answer similarity",
    ),
    EnvVar("AGENTLEDGER_EMBEDDINGS_API_KEY", "", "string", "bearer key of the embeddings URL"),
    EnvVar(
        "OPENAI_BASE_URL",
        "",
        "URL",
        "when set, the demo's support agent calls this OpenAI-compatible endpoint",
    ),
    EnvVar("OPENAI_MODEL", DEFAULT_OPENAI_MODEL, "model name", "model the demo agent calls"),
    EnvVar(
        "AGENTLEDGER_SPILL_DIR",
        "$XDG_CACHE_HOME/agentledger/spill",
        "directory",
        "disk spill for unsent events; 'off' disables spill",
    ),
)


def _env(name: str, environ: Mapping[str, str] | None) -> str | None:
    value = (environ if environ is not None else os.environ).get(name)
    return value if value else None


def resolve_url(url: str | None, environ: Mapping[str, str] | None = None) -> str:
    """``url`` or ``AGENTLEDGER_URL`` or :data:`DEFAULT_URL`, without a trailing slash.

    Raises:
        ConfigurationError: the URL is not ``http://`` or ``https://``.
    """
    value = url or _env("AGENTLEDGER_URL", environ) or DEFAULT_URL
    if not value.startswith(("http://", "https://")):
        raise ConfigurationError(f"url must start with http:// or https://, got {value!r}")
    return value.rstrip("/")


def resolve_api_key(api_key: str | None, environ: Mapping[str, str] | None = None) -> str | None:
    """``api_key`` or ``AGENTLEDGER_API_KEY`` (``None`` when neither is set)."""
    return api_key or _env("AGENTLEDGER_API_KEY", environ)


def resolve_agent(agent: str | None, environ: Mapping[str, str] | None = None) -> str | None:
    """``agent`` or ``AGENTLEDGER_AGENT``, validated against the wire contract's pattern.

    Raises:
        ConfigurationError: the name does not match ``^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$``.
    """
    value = agent or _env("AGENTLEDGER_AGENT", environ)
    if value is not None and not AGENT_NAME_RE.match(value):
        raise ConfigurationError(
            f"agent must match {AGENT_NAME_RE.pattern} (wire contract), got {value!r}"
        )
    return value


def default_spill_dir(environ: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CACHE_HOME/agentledger/spill``, or ``~/.cache/agentledger/spill``."""
    cache = _env("XDG_CACHE_HOME", environ)
    base = Path(cache) if cache else Path.home() / ".cache"
    return base / "agentledger" / "spill"


def resolve_spill_dir(
    spill_dir: str | os.PathLike[str] | Default | None,
    environ: Mapping[str, str] | None = None,
) -> Path | None:
    """The spill directory, or ``None`` when spill is off.

    ``spill_dir=None`` (or ``AGENTLEDGER_SPILL_DIR=off``) switches spill off; :data:`DEFAULT`
    takes ``AGENTLEDGER_SPILL_DIR`` or :func:`default_spill_dir`.
    """
    if spill_dir is None:
        return None
    if isinstance(spill_dir, Default):
        value = _env("AGENTLEDGER_SPILL_DIR", environ)
        if value is None:
            return default_spill_dir(environ)
        if value.strip().lower() in {"off", "none", "0", "false"}:
            return None
        return Path(value).expanduser()
    return Path(spill_dir).expanduser()


def resolve_embeddings_url(url: str | None, environ: Mapping[str, str] | None = None) -> str | None:
    """``url`` or ``AGENTLEDGER_EMBEDDINGS_URL`` (``None``: no embeddings endpoint)."""
    return url or _env("AGENTLEDGER_EMBEDDINGS_URL", environ)


def resolve_embeddings_model(model: str | None, environ: Mapping[str, str] | None = None) -> str:
    """``model`` or ``AGENTLEDGER_EMBEDDINGS_MODEL`` or :data:`DEFAULT_EMBEDDINGS_MODEL`."""
    return model or _env("AGENTLEDGER_EMBEDDINGS_MODEL", environ) or DEFAULT_EMBEDDINGS_MODEL


#: Environment variables naming a CI pipeline run, tried in this order by
#: :func:`resolve_ci_run_id` (a retried job keeps its pipeline's id).
CI_RUN_ID_VARIABLES = (
    "GITHUB_RUN_ID",
    "CI_PIPELINE_ID",
    "BUILDKITE_BUILD_ID",
    "CIRCLE_WORKFLOW_ID",
)


def resolve_ci_run_id(environ: Mapping[str, str] | None = None) -> str | None:
    """The CI's pipeline run id (:data:`CI_RUN_ID_VARIABLES`), ``None`` outside CI."""
    for name in CI_RUN_ID_VARIABLES:
        value = _env(name, environ)
        if value:
            return value
    return None


def resolve_embeddings_api_key(environ: Mapping[str, str] | None = None) -> str | None:
    """``AGENTLEDGER_EMBEDDINGS_API_KEY`` (``None`` when unset)."""
    return _env("AGENTLEDGER_EMBEDDINGS_API_KEY", environ)


def resolve_openai_model(model: str | None, environ: Mapping[str, str] | None = None) -> str | None:
    """``model``; else, when ``OPENAI_BASE_URL`` is set, ``OPENAI_MODEL`` or the default model.

    ``None`` means "no model endpoint configured" (the demo then uses its scripted model).
    """
    if model is not None:
        return model
    if _env("OPENAI_BASE_URL", environ) is None:
        return None
    return _env("OPENAI_MODEL", environ) or DEFAULT_OPENAI_MODEL


def child_environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment plus ``extra``, for a child process (an embedded server)."""
    return {**os.environ, **(extra or {})}
