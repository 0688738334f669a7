"""HTTP delivery of event batches: POST with retries, per-event outcomes, the server's state.

The exporter turns one batch of event lines into an :class:`Answer` that says, for every
line, whether the server stored it, refused it for good (with the reason), or whether it must
be kept for later (server unavailable, key refused). It never loops tightly: retries follow
the jittered policy of ``_retry.py``; a server that stays away is marked *down* and probed at
doubling intervals. Used by the sender's worker thread only (docs/design/client-sender.md).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import orjson

from agentledger.client._guard import logger
from agentledger.client._models import DeliveryError
from agentledger.client._retry import (
    RetryableStatus,
    RetryPolicy,
    is_retryable_status,
    sync_retrying,
)
from agentledger.client._wire import batch_body, parse_batch_response

__all__ = ["BATCH_PATH", "Answer", "Exporter"]

BATCH_PATH = "/v1/events/batch"
#: RFC 7240: the sender needs the counts and what failed, not a receipt per stored event (a
#: server that does not know the preference answers in full; both forms are parsed).
_BATCH_HEADERS = {"Content-Type": "application/json", "Prefer": "return=minimal"}

#: Whole-request statuses after which the events are kept and the server treated as down:
#: an operator may fix the key, its scope or the URL, and the events must not be lost meanwhile.
_KEEP_STATUS = {401: "unauthorized", 403: "forbidden", 404: "not_found"}

#: Per-item statuses after which the event is kept (the key may not write that agent).
_KEEP_ITEM_STATUS = frozenset({401, 403})


@dataclass
class Answer:
    """The outcome of one batch, by line index.

    Attributes:
        stored: lines the server stored (``duplicate`` answers included).
        duplicates: of ``stored``, lines the server already had.
        rejected: ``(index, status, reason)`` of lines refused for good.
        kept: indexes of lines to keep and send again later.
        held: indexes of lines this key may not write (per-event 401/403): parked on disk for
            a client with another key, while the other events keep flowing.
        error: the problem to report (key refused, server unavailable), if any.
    """

    stored: int = 0
    duplicates: int = 0
    rejected: list[tuple[int, int | None, str]] = field(default_factory=list)
    kept: list[int] = field(default_factory=list)
    held: list[int] = field(default_factory=list)
    error: DeliveryError | None = None

    def shifted(self, offset: int) -> Answer:
        """The same answer with every index moved by ``offset`` (for a batch's second half)."""
        return Answer(
            stored=self.stored,
            duplicates=self.duplicates,
            rejected=[(i + offset, s, r) for i, s, r in self.rejected],
            kept=[i + offset for i in self.kept],
            held=[i + offset for i in self.held],
            error=self.error,
        )

    def merge(self, other: Answer) -> Answer:
        """Both halves of a split batch as one answer."""
        return Answer(
            stored=self.stored + other.stored,
            duplicates=self.duplicates + other.duplicates,
            rejected=self.rejected + other.rejected,
            kept=self.kept + other.kept,
            held=self.held + other.held,
            error=other.error or self.error,
        )


class Exporter:
    """POSTs batches of event lines to ``/v1/events/batch``.

    Args:
        url: server base URL.
        headers: request headers (``Authorization``...).
        transport: httpx transport (tests inject faults here).
        timeout: httpx timeout of one request.
        policy: retry policy of one batch.
        cancel: when set, retries stop (the sender is closing).
        on_retry: called with the number of events about to be sent again.
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
        cancel: threading.Event,
        on_retry: Callable[[int], None],
        max_probe_interval_s: float,
    ) -> None:
        self._url = url
        self._headers = headers
        self._transport = transport
        self._timeout = timeout
        self._policy = policy
        self._cancel = cancel
        self._on_retry = on_retry
        self._max_probe_s = max_probe_interval_s
        self._client: httpx.Client | None = None
        #: The server did not answer (or refused the key): probe before sending more.
        self.down = False
        #: Why the server is down (``DeliveryError.kind``), while :attr:`down`.
        self.down_kind: str | None = None
        #: Monotonic time of the next probe while :attr:`down`.
        self.next_probe = 0.0
        self._probe_wait_s = 0.5

    # -- server state ----------------------------------------------------------------------

    def mark_up(self) -> None:
        """The server took a batch: normal sending resumes."""
        if self.down:
            logger.info("agentledger: server %s answers again; resending", self._url)
        self.down = False
        self.down_kind = None
        self._probe_wait_s = 0.5

    def _mark_down(self, kind: str) -> None:
        self.down = True
        self.down_kind = kind
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

    def export(self, lines: list[bytes], deadline: float | None, *, single_attempt: bool) -> Answer:
        """POST one batch, retrying until ``deadline`` (monotonic seconds; ``None``: the
        policy's own deadline), and say what became of every line."""
        answer = self._export(lines, deadline, single_attempt=single_attempt)
        suspects = [r for r in answer.rejected if r[1] == 500]
        if suspects and answer.stored == 0:
            # No event of the batch could be written: the server's writes fail (a locked or
            # full database), not these events. Keep them all; the server counts as down.
            kept = sorted(answer.kept + [i for i, _, _ in suspects])
            rest = [r for r in answer.rejected if r[1] != 500]
            down = self._unavailable(len(kept), f"HTTP 500: {suspects[0][2][:200]}", 500)
            return Answer(rejected=rest, kept=kept, held=answer.held, error=down.error)
        return answer

    def _export(
        self,
        lines: list[bytes],
        deadline: float | None,
        *,
        single_attempt: bool,
        split_500: bool = True,
    ) -> Answer:
        remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
        policy_deadline = self._policy.deadline_s if remaining is None else remaining
        if single_attempt:
            policy_deadline = 0.0
        count = len(lines)
        retrying = sync_retrying(
            self._policy,
            deadline_s=policy_deadline,
            cancel=self._cancel if deadline is None else None,
            on_retry=lambda _: self._on_retry(count),
        )
        try:
            response = retrying(self._post, batch_body(lines))
        except httpx.HTTPError as error:
            return self._unavailable(count, f"{type(error).__name__}: {error}", None)
        except RetryableStatus as error:
            status = error.response.status_code
            if status == 500 and self.health():
                # The server is up but fails on these events: find the one that does.
                reason = f"HTTP 500: {error.response.text[:200]}"
                if not split_500:
                    return Answer(rejected=[(i, 500, reason) for i in range(count)])
                return self._bisect_500(lines, deadline, reason)
            return self._unavailable(count, f"HTTP {status}", status)
        status = response.status_code
        if status < 300:
            return self._item_outcomes(lines, _json(response))
        if status in _KEEP_STATUS:
            kind = _KEEP_STATUS[status]
            message = (
                f"server {self._url} refused the events with HTTP {status} "
                f"({response.text[:200]}); they are kept until the key or URL is fixed"
            )
            self._mark_down(kind)
            return Answer(
                kept=list(range(count)),
                error=DeliveryError(kind=kind, status=status, message=message, events=count),
            )
        return self._split(lines, deadline, f"HTTP {status}: {response.text[:300]}", status)

    def _unavailable(self, count: int, reason: str, status: int | None) -> Answer:
        self._mark_down("unavailable")
        message = f"server {self._url} unavailable ({reason}); events are kept until it answers"
        return Answer(
            kept=list(range(count)),
            error=DeliveryError(kind="unavailable", status=status, message=message, events=count),
        )

    def _split(
        self, lines: list[bytes], deadline: float | None, reason: str, status: int
    ) -> Answer:
        """A whole-batch 4xx refusal: halve the batch until the refused event stands alone."""
        if len(lines) == 1:
            return Answer(rejected=[(0, status, reason)])
        half = len(lines) // 2
        first = self._export(lines[:half], deadline, single_attempt=False)
        second = self._export(lines[half:], deadline, single_attempt=False)
        return first.merge(second.shifted(half))

    def _bisect_500(self, lines: list[bytes], deadline: float | None, reason: str) -> Answer:
        """A persistent 500 while ``/health`` answers: one attempt per half; a half that
        fails again is searched further only when the other half was stored (so a server
        whose every write fails costs two requests, and one bad event about 2·log2(n)).
        What is left are provisional 500 refusals that :meth:`export` turns into kept
        events unless something was stored."""
        if len(lines) == 1:
            return Answer(rejected=[(0, 500, reason)])
        half = len(lines) // 2
        parts = [(0, lines[:half]), (half, lines[half:])]
        answers = [
            self._export(part, deadline, single_attempt=True, split_500=False) for _, part in parts
        ]
        failed = [_all_500(a, len(p)) for a, (_, p) in zip(answers, parts, strict=True)]
        if all(failed):
            return answers[0].merge(answers[1].shifted(half))
        merged = Answer()
        for (offset, part), answer, bad in zip(parts, answers, failed, strict=True):
            if bad:
                answer = self._bisect_500(part, deadline, reason)
            merged = merged.merge(answer.shifted(offset))
        return merged

    def _post(self, body: bytes) -> httpx.Response:
        response = self._http().post(BATCH_PATH, content=body, headers=_BATCH_HEADERS)
        if is_retryable_status(response.status_code):
            raise RetryableStatus(response)
        return response

    def _item_outcomes(self, lines: list[bytes], body: Any) -> Answer:
        outcome = parse_batch_response(body, len(lines))
        if outcome is None:
            return self._unavailable(
                len(lines), "it answered 2xx without a batch result: a proxy or login page?", None
            )
        answer = Answer(stored=outcome.ok, duplicates=outcome.duplicates)
        for index, status, reason in outcome.failures:
            if status in _KEEP_ITEM_STATUS:
                answer.held.append(index)
                message = (
                    f"server {self._url} refused an event for this key ({reason}); it is "
                    "kept on disk for a client whose key may write it"
                )
                answer.error = DeliveryError(
                    kind="forbidden" if status == 403 else "unauthorized",
                    status=status,
                    message=message,
                    events=len(answer.held),
                )
            else:
                answer.rejected.append((index, status, reason))
        return answer


def _all_500(answer: Answer, count: int) -> bool:
    return len(answer.rejected) == count and all(r[1] == 500 for r in answer.rejected)


def _json(response: httpx.Response) -> Any:
    try:
        return orjson.loads(response.content)
    except orjson.JSONDecodeError:
        return None
