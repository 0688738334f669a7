"""What the framework integrations share: the ledger they write to, their errors, tool names.

Nothing here imports a framework, so each of ``langchain``, ``crewai`` and ``livekit`` can use it
and stay independent of the others.
"""

from __future__ import annotations

import datetime as dt
import inspect
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

from agentledger.protocol import LedgerError

__all__ = [
    "DEFAULT_MAX_SCOPES",
    "AlreadyAttachedError",
    "CausalLedgerLike",
    "HasEventId",
    "IntegrationError",
    "InvalidOptionError",
    "LedgerLike",
    "MissingExtraError",
    "TimedLedgerLike",
    "UnsupportedTargetError",
    "accepts_causes",
    "accepts_keywords",
    "max_scopes_option",
    "missing_extra",
    "tool_names",
]

#: Default of every integration's ``max_scopes=`` (open runs / scopes tracked at most).
DEFAULT_MAX_SCOPES = 10_000


class HasEventId(Protocol):
    """What ``log()`` returns: something naming the new event's id."""

    @property
    def event_id(self) -> str: ...


class LedgerLike(Protocol):
    """Something with ``log()``: what every integration needs from a ledger.

    :class:`agentledger.client.Ledger` is one; so is any adapter with this ``log`` (e.g. one
    adding idempotency keys). ``log`` must not block (integrations call it from framework
    callbacks, some on an event loop) and must return at once with the new event's id.
    """

    def log(
        self,
        event: str,
        data: dict[str, Any],
        *,
        session_id: str | None = ...,
        parent_id: str | None = ...,
        metadata: dict[str, Any] | None = ...,
    ) -> HasEventId: ...


class CausalLedgerLike(LedgerLike, Protocol):
    """A :class:`LedgerLike` whose ``log`` also takes further causes and the enclosing step.

    ``caused_by`` items are event ids or ``(event id, edge kind)`` pairs; ``scope_id`` is the
    step the event ran inside (see ``docs/pages/causal-edges.md``).
    """

    def log(
        self,
        event: str,
        data: dict[str, Any],
        *,
        session_id: str | None = ...,
        parent_id: str | None = ...,
        metadata: dict[str, Any] | None = ...,
        caused_by: Iterable[str | tuple[str, str]] = ...,
        scope_id: str | None = ...,
    ) -> HasEventId: ...


def accepts_causes(ledger: LedgerLike) -> bool:
    """Whether ``ledger.log`` takes ``caused_by`` and ``scope_id`` (a
    :class:`CausalLedgerLike`); a hand-written ledger with the older ``log`` gets parents only.
    """
    return accepts_keywords(ledger.log, "caused_by", "scope_id")


class TimedLedgerLike(LedgerLike, Protocol):
    """A :class:`LedgerLike` whose ``log`` also takes the event's time (``timestamp=``).

    For integrations that stamp events with the framework's own clock (CrewAI, LiveKit).
    """

    def log(
        self,
        event: str,
        data: dict[str, Any],
        *,
        session_id: str | None = ...,
        parent_id: str | None = ...,
        metadata: dict[str, Any] | None = ...,
        timestamp: dt.datetime | None = ...,
    ) -> HasEventId: ...


class IntegrationError(LedgerError):
    """Base class of the errors the framework integrations raise."""


class InvalidOptionError(IntegrationError, ValueError):
    """An integration option is out of range or contradicts another (also a ``ValueError``)."""


class UnsupportedTargetError(IntegrationError, TypeError):
    """``instrument()`` was given an object it cannot instrument (also a ``TypeError``)."""


class AlreadyAttachedError(IntegrationError, RuntimeError):
    """An integration object is attached already (also a ``RuntimeError``)."""


class MissingExtraError(IntegrationError, ImportError):
    """The framework of an integration is not installed (also an ``ImportError``)."""


def missing_extra(name: str, extra: str) -> MissingExtraError:
    """The error to raise when importing integration ``name`` finds its framework missing.

    Args:
        name: the integration's module name (``agentledger.integrations.crewai``).
        extra: the agentledger extra that installs the framework (``crewai``).

    Returns:
        An ``ImportError`` (and :class:`~agentledger.protocol.LedgerError`) whose message says
        ``pip install 'agentledger[<extra>]'``; raise it ``from`` the original ImportError.
    """
    return MissingExtraError(
        f"{name} needs the {extra!r} extra: pip install 'agentledger[{extra}]'", name=name
    )


def max_scopes_option(
    max_scopes: int | None,
    max_runs: int | None = None,
    *,
    default: int = DEFAULT_MAX_SCOPES,
    stacklevel: int = 3,
) -> int:
    """The effective ``max_scopes``, accepting the deprecated ``max_runs`` spelling.

    Args:
        max_scopes: the value given as ``max_scopes=``, or ``None``.
        max_runs: the value given as the deprecated ``max_runs=``, or ``None``.
        default: the integration's default when neither is given.
        stacklevel: passed to :func:`warnings.warn` so the warning points at the user's call.

    Raises:
        InvalidOptionError: both were given, or the value is below 1.
    """
    if max_runs is not None:
        if max_scopes is not None:
            raise InvalidOptionError("pass max_scopes only (max_runs is its deprecated name)")
        warnings.warn(
            "max_runs is deprecated; use max_scopes", DeprecationWarning, stacklevel=stacklevel
        )
        max_scopes = max_runs
    value = default if max_scopes is None else max_scopes
    if value < 1:
        raise InvalidOptionError("max_scopes must be >= 1")
    return value


def tool_names(tools: Any) -> list[str] | None:
    """The names of a list of tools, or ``None`` when ``tools`` is not a list.

    A tool is a provider schema (``{"type": "function", "function": {"name": ...}}`` or
    ``{"name": ...}``) or an object with a ``name`` attribute (a LangChain or CrewAI tool).
    Tools without a string name are skipped.
    """
    if not isinstance(tools, Sequence) or isinstance(tools, str | bytes):
        return None
    names: list[str] = []
    for tool in tools:
        if isinstance(tool, Mapping):
            function = tool.get("function")
            name = function.get("name") if isinstance(function, Mapping) else tool.get("name")
        else:
            name = getattr(tool, "name", None)
        if isinstance(name, str):
            names.append(name)
    return names


def accepts_keywords(log: Callable[..., Any], *names: str) -> bool:
    """Whether a ``log`` callable takes every one of ``names`` as a keyword argument.

    Integrations pass the newer ``log()`` arguments (``event_id=``, ``caused_by=``,
    ``scope_id=``) only to a ledger that takes them, so an adapter with the older signature
    keeps working (its events then lack those links).
    """
    try:
        parameters = inspect.signature(log).parameters
    except (TypeError, ValueError):
        return False
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return True
    by_keyword = (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return all(name in parameters and parameters[name].kind in by_keyword for name in names)
