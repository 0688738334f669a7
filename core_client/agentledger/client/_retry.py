"""The one retry policy of the client, built on tenacity.

Retried: transport errors and the statuses of :func:`is_retryable_status` (408, 429, 5xx except
501). Backoff is full-jitter exponential, capped at ``max_backoff_s``; a server ``Retry-After``
(RFC 9110 section 10.2.3) replaces it, capped at ``max_retry_after_s``. One overall deadline
bounds all attempts and waits. Callers resend the same body, so a retried event keeps its
``event_id`` and ``idempotency_key``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import httpx
import tenacity

from agentledger.client._errors import parse_retry_after

__all__ = [
    "RETRYABLE_STATUS",
    "RetryPolicy",
    "RetryableStatus",
    "async_retrying",
    "is_retryable_status",
    "sync_retrying",
]

#: Statuses worth another attempt: request timeout, rate limit, server errors.
RETRYABLE_STATUS: Final = frozenset({408, 429, 500, 502, 503, 504})


def is_retryable_status(status: int) -> bool:
    """408, 429 and every 5xx except 501 (not implemented will not change on retry)."""
    return status in RETRYABLE_STATUS or (status >= 500 and status != 501)


class RetryableStatus(Exception):
    """Raised inside a retry loop for a response whose status is worth retrying."""

    def __init__(self, response: httpx.Response) -> None:
        super().__init__(f"HTTP {response.status_code}")
        self.response = response
        self.retry_after_s = parse_retry_after(response.headers.get("retry-after"))


@dataclass(frozen=True)
class RetryPolicy:
    """Retry settings (all times in seconds).

    Attributes:
        deadline_s: total time for all attempts and waits of one request.
        max_attempts: attempts at most (1 = no retry).
        initial_backoff_s: first backoff before jitter.
        max_backoff_s: cap of one exponential backoff.
        max_retry_after_s: cap applied to a server's ``Retry-After``.
    """

    deadline_s: float = 10.0
    max_attempts: int = 8
    initial_backoff_s: float = 0.1
    max_backoff_s: float = 2.0
    max_retry_after_s: float = 5.0


def _should_retry(exc: BaseException) -> bool:
    return isinstance(exc, httpx.TransportError | RetryableStatus)


class _Wait(tenacity.wait.wait_base):
    """Jittered exponential backoff, or the server's capped ``Retry-After``."""

    def __init__(self, policy: RetryPolicy) -> None:
        self._policy = policy
        self._jitter = tenacity.wait_random_exponential(
            multiplier=policy.initial_backoff_s, max=policy.max_backoff_s
        )

    def __call__(self, retry_state: tenacity.RetryCallState) -> float:
        outcome = retry_state.outcome
        exc = outcome.exception() if outcome is not None else None
        if isinstance(exc, RetryableStatus) and exc.retry_after_s is not None:
            return min(exc.retry_after_s, self._policy.max_retry_after_s)
        return float(self._jitter(retry_state))


def _stop(
    policy: RetryPolicy, deadline_s: float | None, cancelled: Callable[[], bool] | None
) -> tenacity.stop.stop_base:
    stop: tenacity.stop.stop_base = tenacity.stop_after_attempt(policy.max_attempts)
    stop = stop | tenacity.stop_before_delay(
        policy.deadline_s if deadline_s is None else deadline_s
    )
    if cancelled is not None:
        flag = cancelled
        stop = stop | tenacity.stop_when_event_set(_CallableEvent(flag))  # type: ignore[arg-type]
    return stop


class _CallableEvent:
    """Adapter giving a ``() -> bool`` callable the ``is_set()`` shape tenacity expects."""

    def __init__(self, fn: Callable[[], bool]) -> None:
        self._fn = fn

    def is_set(self) -> bool:
        return self._fn()


def sync_retrying(
    policy: RetryPolicy,
    *,
    deadline_s: float | None = None,
    cancel: threading.Event | None = None,
    on_retry: Callable[[tenacity.RetryCallState], None] | None = None,
) -> tenacity.Retrying:
    """A tenacity ``Retrying`` for blocking calls.

    Args:
        policy: the settings.
        deadline_s: overrides ``policy.deadline_s`` (e.g. the time left of a flush).
        cancel: when set, no further attempt is made and a pending wait ends at once.
        on_retry: called before each wait (used to count retries).

    The last exception is re-raised when the policy gives up.
    """

    def sleep(seconds: float) -> None:
        if cancel is None:
            time.sleep(seconds)
        else:
            cancel.wait(seconds)

    return tenacity.Retrying(
        retry=tenacity.retry_if_exception(_should_retry),
        stop=_stop(policy, deadline_s, cancel.is_set if cancel is not None else None),
        wait=_Wait(policy),
        sleep=sleep,
        before_sleep=on_retry,
        reraise=True,
    )


def async_retrying(
    policy: RetryPolicy,
    *,
    deadline_s: float | None = None,
    on_retry: Callable[[tenacity.RetryCallState], Any] | None = None,
) -> tenacity.AsyncRetrying:
    """The ``AsyncRetrying`` twin of :func:`sync_retrying` (waits with ``asyncio.sleep``)."""
    return tenacity.AsyncRetrying(
        retry=tenacity.retry_if_exception(_should_retry),
        stop=_stop(policy, deadline_s, None),
        wait=_Wait(policy),
        before_sleep=on_retry,
        reraise=True,
    )
