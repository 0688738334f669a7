"""Never break the host application.

Every integration callback body runs inside :func:`capture_internal_exceptions` (or is wrapped
by :func:`guarded`). An exception raised by *our* code is logged to the ``agentledger`` logger
at ERROR level with its traceback and swallowed, so the agent's run and result are unchanged
(pattern from sentry-python's ``capture_internal_exceptions``; field cases H03, H14).

Tests attach a handler to the ``agentledger`` logger (``tests/conftest.py``) that fails the
test on any such record, so bugs the guard swallows are loud in CI and silent in production.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

__all__ = ["INTERNAL_ERROR_MESSAGE", "capture_internal_exceptions", "guarded", "logger"]

logger = logging.getLogger("agentledger")

#: Prefix of every log record written for a swallowed internal error.
INTERNAL_ERROR_MESSAGE = "agentledger internal error"

_P = ParamSpec("_P")
_R = TypeVar("_R")


@contextmanager
def capture_internal_exceptions(where: str) -> Iterator[None]:
    """Run a block whose exceptions must never reach the host application.

    Args:
        where: a short label of the call site (e.g. ``"langchain.on_tool_end"``), logged.

    ``KeyboardInterrupt`` and ``SystemExit`` are not caught.
    """
    try:
        yield
    except Exception:
        logger.error("%s in %s", INTERNAL_ERROR_MESSAGE, where, exc_info=True)


def guarded(
    where: str, default: _R | None = None
) -> Callable[[Callable[_P, _R]], Callable[_P, _R | None]]:
    """Decorator form of :func:`capture_internal_exceptions`.

    Args:
        where: label logged with the error.
        default: value returned when the wrapped function raised.
    """

    def decorate(fn: Callable[_P, _R]) -> Callable[_P, _R | None]:
        @functools.wraps(fn)
        def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R | None:
            try:
                return fn(*args, **kwargs)
            except Exception:
                logger.error("%s in %s", INTERNAL_ERROR_MESSAGE, where, exc_info=True)
                return default

        return wrapper

    return decorate
