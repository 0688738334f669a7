"""HTTP delivery of event batches: POST with retries, the server's up/down state, health probes.

Used by the background sender's thread only (see docs/design/client-sender.md).
"""

from __future__ import annotations

import threading
import time
from typing import Any

import httpx

from agentledger.client._guard import logger
from agentledger.client._retry import (
    RetryableStatus,
    RetryPolicy,
    is_retryable_status,
    sync_retrying,
)
from agentledger.client._tally import Tally
from agentledger.client._wire import batch_body, parse_batch_response

__all__ = ["BATCH_PATH", "BatchPoster"]

BATCH_PATH = "/v1/events/batch"

# Statuses after which the batch is kept (spilled) and the server treated as unavailable:
# the key or route may be fixed by an operator, the events must not be lost meanwhile.
_KEEP_STATUS = frozenset({401, 403, 404})


class BatchPoster:
    """POSTs batches of event lines to ``/v1/events/batch`` and counts the answers.

    Args:
        url: server base URL.
        headers: request headers (``Authorization``...).
        transport: httpx transport (tests inject faults here).
        timeout: httpx timeout of one request.
        policy: retry policy of one batch.
        tally: where answers and retries are counted.
        cancel: when set, retries stop (the sender is closing).
        spill_on: whether unsent events go to a disk spill (only changes the log message).
        max_probe_interval_s: longest wait between probes of an unavailable server (seconds).
    """

    def __init__(
        self,
        *,
        url: str,
        headers: dict[str, str],
        transport: httpx.BaseTransport | None,
        timeout: httpx.Timeout,
        policy: RetryPolicy,
        tally: Tally,
        cancel: threading.Event,
        spill_on: bool,
        max_probe_interval_s: float,
    ) -> None:
        self._url = url
        self._headers = headers
        self._transport = transport
        self._timeout = timeout
        self._policy = policy
        self._tally = tally
        self._cancel = cancel
        self._spill_on = spill_on
        self._max_probe_s = max_probe_interval_s
        self._client: httpx.Client | None = None
        #: The server did not answer (or refused the key): probe before sending more.
        self.down = False
        #: Monotonic time of the next probe while :attr:`down`.
        self.next_probe = 0.0
        self._probe_wait_s = 0.5

    # -- server state ----------------------------------------------------------------------

    def mark_up(self) -> None:
        """The server answered: normal sending resumes."""
        if self.down:
            logger.info("agentledger: server %s answers again; resending", self._url)
        self.down = False
        self._probe_wait_s = 0.5

    def mark_down(self, reason: str) -> None:
        """The server is unavailable: stop retrying and probe at growing intervals."""
        if not self.down:
            logger.warning(
                "agentledger: server %s unavailable (%s); events are %s until it answers",
                self._url,
                reason,
                "spilled to disk" if self._spill_on else "held in memory",
            )
        self.down = True
        self.next_probe = time.monotonic() + self._probe_wait_s

    def probe_failed(self) -> None:
        """Schedule the next probe, doubling the wait up to ``max_probe_interval_s``."""
        self.next_probe = time.monotonic() + self._probe_wait_s
        self._probe_wait_s = min(self._probe_wait_s * 2, self._max_probe_s)

    def health(self) -> bool:
        """``GET /health`` answers 200."""
        try:
            return self._http().get("/health", timeout=2.0).status_code == 200
        except httpx.HTTPError:
            return False

    # -- delivery --------------------------------------------------------------------------

    def _http(self) -> httpx.Client:
        client = self._client
        if client is None:
            client = httpx.Client(
                base_url=self._url,
                headers=self._headers,
                transport=self._transport,
                timeout=self._timeout,
            )
            self._client = client
        return client

    def release(self, *, close: bool) -> None:
        """Forget the HTTP client; close its connections when ``close``."""
        client, self._client = self._client, None
        if client is not None and close:
            client.close()

    def deliver(
        self,
        lines: list[bytes],
        deadline: float | None,
        *,
        single_attempt: bool,
        from_spill: bool = False,
    ) -> bool:
        """POST one batch with retries until ``deadline`` (monotonic seconds; ``None``: the
        policy's own deadline). True when the server answered (the outcome is counted, events
        it rejected for good included); False when it is unavailable (keep the lines; the
        server is marked down)."""
        body = batch_body(lines)
        remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
        policy_deadline = self._policy.deadline_s if remaining is None else remaining
        if single_attempt:
            policy_deadline = 0.0

        def count_retry(_: Any) -> None:
            self._tally.retried(len(lines))

        retrying = sync_retrying(
            self._policy,
            deadline_s=policy_deadline,
            cancel=self._cancel if deadline is None else None,
            on_retry=count_retry,
        )
        try:
            response = retrying(self._post, body)
        except httpx.HTTPError as error:
            self.mark_down(f"{type(error).__name__}: {error}")
            return False
        except RetryableStatus as error:
            self.mark_down(f"HTTP {error.response.status_code}")
            return False
        status = response.status_code
        if status < 300:
            try:
                body_json = response.json()
            except ValueError:
                body_json = None
            self._count_outcome(lines, body_json, from_spill)
            return True
        if status in (413, 422) and len(lines) > 1:
            half = len(lines) // 2
            if not self.deliver(
                lines[:half], deadline, single_attempt=False, from_spill=from_spill
            ):
                return False
            return self.deliver(lines[half:], deadline, single_attempt=False, from_spill=from_spill)
        if status in _KEEP_STATUS:
            self.mark_down(f"HTTP {status}: {response.text[:200]}")
            return False
        # 4xx on a single event (or another client error): rejected for good.
        logger.warning(
            "agentledger: server rejected %d event(s) with HTTP %d: %s",
            len(lines),
            status,
            response.text[:500],
        )
        self._tally.answered(
            lines=len(lines), ok=0, duplicates=0, failed=len(lines), from_spill=from_spill
        )
        return True

    def _post(self, body: bytes) -> httpx.Response:
        response = self._http().post(
            BATCH_PATH, content=body, headers={"Content-Type": "application/json"}
        )
        if is_retryable_status(response.status_code):
            raise RetryableStatus(response)
        return response

    def _count_outcome(self, lines: list[bytes], body: Any, from_spill: bool) -> None:
        outcome = parse_batch_response(body, len(lines))
        for index, error in outcome.failures[:5]:
            logger.warning(
                "agentledger: event rejected by the server: %s (%s)",
                error,
                lines[index][:200] if index < len(lines) else b"",
            )
        self._tally.answered(
            lines=len(lines),
            ok=outcome.ok,
            duplicates=outcome.duplicates,
            failed=len(outcome.failures),
            from_spill=from_spill,
        )
