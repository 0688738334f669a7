"""What a session's model calls were made with, for a case's ``captured_with``: the models
asked for and served, the API, the system prompt and its hash, the first call's sampling
parameters, the final answer's ``finish_reason``, and the configuration the session named."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agentledger.client import Event
from agentledger.client import vocabulary as v

__all__ = ["captured_with"]

_CONFIG_KEYS = ("prompt_version", "config_version", "agent_version", "version", "release")


def captured_with(events: Sequence[Event]) -> dict[str, Any]:
    """A case's ``captured_with`` from its session's events (oldest first)."""
    models: list[str] = []
    framework: str | None = None
    config: dict[str, Any] = {}
    for event in events:
        if event.event == v.LLM_START:
            model = event.data.get("model")
            if isinstance(model, str) and model not in models:
                models.append(model)
        if event.event == v.SESSION_START:
            framework = framework or event.data.get("framework")
            for key, value in event.data.items():
                if key != "framework":
                    config.setdefault(key, value)
        for key in _CONFIG_KEYS:
            value = (event.metadata or {}).get(key)
            if value is not None:
                config.setdefault(key, value)
    out: dict[str, Any] = {"models": models}
    out.update(_model_setup(events))
    if framework:
        out["framework"] = framework
    if config:
        out["config"] = config
    return out


#: Parameters of the first model call kept in ``captured_with.parameters``.
_PARAMETER_KEYS = (
    "temperature",
    "top_p",
    "max_tokens",
    "max_completion_tokens",
    "max_output_tokens",
    "seed",
    "reasoning_effort",
)


def _model_setup(events: Sequence[Event]) -> dict[str, Any]:
    """What the model calls were made with: the API (``chat.completions``, ``responses``; of the
    first call that names one), the tool definitions offered (of the first call offering
    tools), the system prompt and its hash (of the first call that had one), the served
    models, the first call's sampling parameters and the final answer's ``finish_reason``."""
    out: dict[str, Any] = {}
    served: list[str] = []
    finish: Any = None
    for event in events:
        data = event.data
        if event.event == v.LLM_START:
            if "api" not in out and isinstance(data.get("api"), str):
                out["api"] = data["api"]
            if "tool_schemas" not in out and isinstance(data.get("tool_schemas"), list):
                out["tool_schemas"] = data["tool_schemas"]
            if "system_prompt" not in out and isinstance(data.get("system_prompt"), str):
                out["system_prompt"] = data["system_prompt"]
                out["prompt_hash"] = data.get("prompt_hash")
            params = data.get("invocation_params")
            if "parameters" not in out and isinstance(params, Mapping):
                kept = {k: params[k] for k in _PARAMETER_KEYS if params.get(k) is not None}
                if kept:
                    out["parameters"] = kept
        elif event.event == v.LLM_END:
            usage = data.get("token_usage")
            model = data.get("response_model") or (
                usage.get("model") if isinstance(usage, Mapping) else None
            )
            if isinstance(model, str) and model not in served:
                served.append(model)
            finish = data.get("finish_reason", finish)
    if served:
        out["served_models"] = served
    if finish is not None:
        out["finish_reason"] = finish
    return out
