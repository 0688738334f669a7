"""Client errors told in plain language, with the fix, and the exit status each one gets.

Status 2 is a usage or configuration mistake (no key, no agent, a bad option value the server
refused with 422); status 1 is everything else (no server, a refused key, nothing found, a
server failure). The command line never shows a Python argument name or a raw validation
list: ``explain`` turns each kind of :class:`LedgerError` into one sentence naming the option
or environment variable to change.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

from agentledger.client import (
    APIStatusError,
    AuthenticationError,
    ConfigurationError,
    LedgerError,
    NotFoundError,
    PermissionDeniedError,
    TransportError,
    UnprocessableEntityError,
)

__all__ = ["NO_AGENT", "NO_KEY", "exit_status", "explain"]

NO_KEY = (
    "no API key: pass --api-key KEY or set AGENTLEDGER_API_KEY (a server started with "
    "`agentledger serve --dev-key KEY` accepts KEY from this machine)"
)
NO_AGENT = "no agent: pass --agent NAME or set AGENTLEDGER_AGENT (`agentledger agents` lists them)"


def _field_names(detail: Any, options: Mapping[str, str]) -> str:
    """A 422 detail (a string or FastAPI's list of ``{loc, msg}``) as ``bad --opt: why``."""
    if isinstance(detail, list):
        parts = []
        for item in detail:
            if not isinstance(item, dict):
                parts.append(str(item))
                continue
            loc = [str(x) for x in item.get("loc", []) if x not in ("body", "query", "path")]
            name = loc[-1] if loc else ""
            option = options.get(name, f"--{name.replace('_', '-')}" if name else "a value")
            message = str(item.get("msg", "")).removeprefix("Value error, ")
            parts.append(f"bad {option}: {message}")
        return "; ".join(parts) or "the server refused the request"
    text = str(detail)
    field, sep, rest = text.partition(": ")
    if sep and field in options:
        return f"bad {options[field]}: {rest}"
    return text


def explain(error: LedgerError, url: str, options: Mapping[str, str] | None = None) -> str:
    """One sentence saying what went wrong and how to fix it.

    Args:
        error: what the client raised.
        url: the server the command talked to (named in the message).
        options: wire field name -> the command's option (``{"timestamp": "--time"}``), for
            naming the option a 422 is about.
    """
    options = options or {}
    if isinstance(error, ConfigurationError):
        text = str(error)
        if "API key is required" in text:
            return NO_KEY
        if "needs an agent" in text or text.startswith("no agent"):
            return NO_AGENT
        if text.startswith("agent must match"):
            got = text.rsplit("got ", 1)[-1]
            return (
                f"--agent {got} is not an agent name: use letters, digits, '.', '_' and '-', "
                "starting with a letter or digit (or fix AGENTLEDGER_AGENT)"
            )
        if text.startswith("url must start"):
            return f"{text}: pass --url http://HOST:PORT or fix AGENTLEDGER_URL"
        return text
    if isinstance(error, TransportError):
        cause = error.__cause__
        if isinstance(cause, httpx.TimeoutException):
            return f"the server at {url} did not answer in time: is it overloaded or stuck?"
        if isinstance(cause, httpx.ConnectError):
            return (
                f"no server at {url}: start one with `agentledger serve`, or pass --url "
                "(or set AGENTLEDGER_URL) to the server you use"
            )
        return f"cannot talk to the server at {url}: {error}"
    if isinstance(error, APIStatusError):
        detail = error.detail
        if isinstance(error, AuthenticationError):
            return (
                f"the server at {url} refused the API key ({detail}): pass a valid key with "
                "--api-key or set AGENTLEDGER_API_KEY"
            )
        if isinstance(error, PermissionDeniedError):
            return f"the API key may not do this ({detail}): use a key with that scope or agent"
        if isinstance(error, NotFoundError):
            field, sep, rest = str(detail).partition(": ")
            return rest if sep and field.isidentifier() else str(detail)
        if isinstance(error, UnprocessableEntityError):
            return _field_names(detail, options)
        if error.status_code >= 500:
            where = f" (request id {error.request_id})" if error.request_id else ""
            return f"the server at {url} failed{where}: {detail}; see its log"
        return f"the server at {url} refused the request ({error.status_code}): {detail}"
    return str(error)


def exit_status(error: LedgerError) -> int:
    """2 for a usage or configuration mistake, 1 otherwise."""
    if isinstance(error, ConfigurationError | UnprocessableEntityError):
        return 2
    return 1
