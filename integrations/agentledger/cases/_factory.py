"""The candidate's factory: loading ``module:attribute`` specs and building the agent with what
the factory declares (``context``, ``case``) and the overrides ``cases run`` was given
(``--system-prompt``, ``--model``, ``--temperature``)."""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from collections.abc import Callable, Mapping
from typing import Any

from langchain_core.tools import BaseTool

from agentledger.cases._model import Case
from agentledger.protocol import LedgerError

__all__ = [
    "OVERRIDES",
    "SpecError",
    "build_agent",
    "check_overrides",
    "declares",
    "load_object",
]


class SpecError(LedgerError, ValueError):
    """A ``module:attribute`` spec that cannot be loaded (bad input: exit code 2)."""


def load_object(spec: str, what: str) -> Any:
    """Import ``module:attribute`` (the current directory is importable, as with pytest).

    Args:
        spec: ``"pkg.module:name"`` (``name`` may be dotted).
        what: the option it came from, for the error (``"--factory"``).

    Raises:
        SpecError: bad syntax, module not importable or attribute missing.
    """
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise SpecError(f"{what}: expected module:attribute, got {spec!r}")
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        target: Any = importlib.import_module(module_name)
    except Exception as error:
        raise SpecError(f"{what}: cannot import {module_name!r}: {error}") from error
    for part in attribute.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise SpecError(f"{what}: {module_name!r} has no attribute {attribute!r}") from None
    return target


#: Keywords ``cases run`` can hand the factory: ``--system-prompt``, ``--model``,
#: ``--temperature``, ``--base-url``.
OVERRIDES = ("system_prompt", "model", "temperature", "base_url")


def _parameters(factory: Callable[..., Any]) -> Mapping[str, inspect.Parameter]:
    try:
        return inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return {}


def declares(factory: Callable[..., Any], name: str) -> bool:
    """The factory has a parameter called ``name``."""
    return name in _parameters(factory)


def check_overrides(factory: Callable[..., Any], overrides: Mapping[str, Any]) -> None:
    """Refuse overrides the factory cannot take (better than a run that silently ignores a
    new prompt).

    Raises:
        SpecError: naming the option and the factory.
    """
    parameters = _parameters(factory)
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
    for name in overrides:
        if name not in parameters and not takes_any:
            option = "--" + name.replace("_", "-")
            raise SpecError(
                f"{option}: the factory {getattr(factory, '__name__', factory)!r} has no "
                f"{name!r} parameter to receive it"
            )


def build_agent(
    factory: Callable[..., Any],
    tools: list[BaseTool],
    case: Case,
    overrides: Mapping[str, Any],
    logging: Mapping[str, Any] | None = None,
) -> Any:
    """``factory(tools, [context=...], [case=...], [ledger=..., session_id=...], **overrides)``:
    ``context`` and ``case`` when the factory declares them (the case carries the recorded
    model, system prompt and parameters in ``captured_with``); ``ledger`` and ``session_id``
    (from ``logging``) when it declares them, for a candidate that logs through an
    integration of its own (``instrument_openai(client, ledger, session_id=session_id)``)."""
    parameters = _parameters(factory)
    keywords: dict[str, Any] = dict(overrides)
    for name, value in (logging or {}).items():
        if name in parameters:
            keywords[name] = value
    if "context" in parameters:
        keywords["context"] = case.context
    if "case" in parameters:
        keywords["case"] = case
    return factory(tools, **keywords)
