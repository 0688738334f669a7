# Generated from _async_client.py by core_client/generate_sync.py: do not edit.
# Change the asyncio source, then run `python core_client/generate_sync.py`.
"""The blocking client, :class:`Ledger`: constructor, flush and close, bulk export and
import; its other reads come from :class:`LedgerReads` and administration from
:class:`LedgerAdmin`."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from types import TracebackType
from typing import IO, Any

import httpx

from agentledger.client._admin import LedgerAdmin
from agentledger.client._base import DEFAULT_TIMEOUT_S, RedactSetting
from agentledger.client._calls import Call
from agentledger.client._config import DEFAULT, Default
from agentledger.client._errors import transport_error_from
from agentledger.client._models import DeliveryError, FlushResult, ImportResult
from agentledger.client._queue import DEFAULT_MAX_QUEUE_BYTES, DEFAULT_MAX_QUEUE_EVENTS
from agentledger.client._retry import RetryPolicy
from agentledger.client._spill import DEFAULT_MAX_SPILL_BYTES
from agentledger.client._transfer import (
    ImportChunks,
    ProgressArg,
    open_export_target,
    progress_reporter,
)
from agentledger.client.sanitize import DEFAULT_MAX_STRING_CHARS

__all__ = ["Ledger"]


class Ledger(LedgerAdmin):
    """Log agent events to an agentledger server and read them back (blocking reads).

    ``log()`` never blocks and never raises: it queues the event for a background sender that
    batches, retries and (when the server is gone) spills to disk. Reads raise the errors of
    :mod:`agentledger.client` (``NotFoundError``, ``TransportError``...).

    Args:
        url: server base URL (env ``AGENTLEDGER_URL``, default ``http://127.0.0.1:8765``).
        api_key: bearer key (env ``AGENTLEDGER_API_KEY``; required).
        agent: default agent name of ``log()`` and reads (env ``AGENTLEDGER_AGENT``).
        spill_dir: directory of the disk spill; ``DEFAULT`` = env ``AGENTLEDGER_SPILL_DIR`` or
            ``~/.cache/agentledger/spill``; ``None`` = no spill (oldest events dropped when the
            queue is full, and counted).
        flush_interval_s: longest delay before a partial batch is sent (seconds).
        max_batch_events: events per request, 1..500.
        max_queue_events: events held in memory before the oldest move to the spill.
        max_queue_bytes: memory budget of queued events (estimated bytes, default 64 MiB);
            past it the oldest queued events move to the spill (or are dropped without
            one). See "Delivery" in docs/pages/client.md.
        flush_timeout_s: time the exit hook may spend flushing (seconds).
        timeout: timeout of one HTTP request (seconds or ``httpx.Timeout``).
        redact: ``True`` (secret-named keys), ``False``, or extra pattern names
            (``"email"``, ``"phone"``, ``"card"``, ``"iban"``, ``"ipv4"``), applied before
            anything leaves the process.
        transport: httpx transport for reads and, unless ``sender_transport`` is given, for
            the background sender (tests inject faults here).
        sender_transport: httpx transport of the background sender only.
        retry: retry policy of the sender (:class:`RetryPolicy`).
        max_spill_bytes: size cap of the spill (bytes).
        max_string_chars: longest string kept whole in ``data`` (characters).
        on_error: called from the sender's thread with a :class:`DeliveryError` when the
            server refuses the key (401/403), the URL (404) or events for good, or is
            unavailable. Exceptions it raises are logged, never propagated.

    Raises:
        ConfigurationError: no API key, a bad URL, agent name or limit.
    """

    def __init__(
        self,
        url: str | None = None,
        api_key: str | None = None,
        agent: str | None = None,
        *,
        spill_dir: str | os.PathLike[str] | Default | None = DEFAULT,
        flush_interval_s: float = 0.2,
        max_batch_events: int = 500,
        max_queue_events: int = DEFAULT_MAX_QUEUE_EVENTS,
        max_queue_bytes: int = DEFAULT_MAX_QUEUE_BYTES,
        flush_timeout_s: float = 5.0,
        timeout: float | httpx.Timeout = DEFAULT_TIMEOUT_S,
        redact: RedactSetting = True,
        transport: httpx.BaseTransport | None = None,
        sender_transport: httpx.BaseTransport | None = None,
        retry: RetryPolicy | None = None,
        max_spill_bytes: int = DEFAULT_MAX_SPILL_BYTES,
        max_string_chars: int = DEFAULT_MAX_STRING_CHARS,
        on_error: Callable[[DeliveryError], object] | None = None,
    ) -> None:
        super().__init__(
            url,
            api_key,
            agent,
            spill_dir=spill_dir,
            flush_interval_s=flush_interval_s,
            max_batch_events=max_batch_events,
            max_queue_events=max_queue_events,
            max_queue_bytes=max_queue_bytes,
            flush_timeout_s=flush_timeout_s,
            timeout=timeout,
            redact=redact,
            sender_transport=sender_transport or transport,
            retry=retry,
            max_spill_bytes=max_spill_bytes,
            max_string_chars=max_string_chars,
            on_error=on_error,
        )
        self._transport = transport
        self._client = None

    # -- lifecycle -------------------------------------------------------------------------

    def flush(self, timeout_s: float | None = None) -> FlushResult:
        """Wait until every event logged before this call is sent, spilled or dropped.

        Args:
            timeout_s: longest wait (seconds; default ``flush_timeout_s``). Always honoured,
                even when the server hangs (field case H07).

        Returns:
            :class:`FlushResult` (``complete``, ``sent``, ``spilled``, ``dropped``,
            ``pending``).
        """
        timeout = self.flush_timeout_s if timeout_s is None else timeout_s
        return self._sender.sync_flush(timeout)

    def close(self, timeout_s: float | None = None) -> FlushResult:
        """Flush within ``timeout_s`` (default ``flush_timeout_s``), stop the sender, spill
        what is left, and close HTTP connections. Idempotent; later ``log()`` calls go to the
        spill (or are dropped and counted)."""
        timeout = self.flush_timeout_s if timeout_s is None else timeout_s
        result = self._sender.sync_close(timeout)
        client, self._client = self._client, None
        if client is not None:
            client.close()
        self._unregister_exit()
        return result

    def __enter__(self) -> Ledger:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _after_fork_in_child(self) -> None:
        self._client = None

    # -- bulk transfer ---------------------------------------------------------------------

    def export_events(
        self,
        file_or_path: str | os.PathLike[str] | IO[bytes],
        *,
        agent: str | None = None,
        progress: ProgressArg = None,
    ) -> int:
        """Stream an agent's events as NDJSON (oldest first) into a file; constant memory.

        Args:
            file_or_path: a path (created/overwritten) or a binary file object.
            agent: the agent (default: the client's).
            progress: ``None`` = a progress bar on stderr when it is a terminal, ``False`` =
                none, ``True`` = always, or a callback of the running count of lines written.

        Returns:
            the number of events written.
        """
        params = {"agent": self._agent_param(agent)}
        count = 0
        with (
            open_export_target(file_or_path) as out,
            progress_reporter(progress, "export") as report,
        ):
            try:
                with self._http().stream("GET", "/v1/events/export", params=params) as response:
                    if response.status_code >= 400:
                        response.read()
                        self._parse(Call("GET", "", lambda _: None), response)
                    for line in response.iter_lines():
                        if not line.strip():
                            continue
                        out.write(line.encode() + b"\n")
                        count += 1
                        if report is not None and count % 500 == 0:
                            report(count)
                if report is not None:
                    report(count)
            except httpx.TransportError as error:
                raise transport_error_from(error) from error
        return count

    def import_events(
        self,
        source: str | os.PathLike[str] | IO[bytes] | Iterable[dict[str, Any]],
        *,
        agent: str | None = None,
        chunk_size: int = 500,
        progress: ProgressArg = None,
    ) -> ImportResult:
        """Import exported NDJSON lines (``POST /v1/events/import``), streamed in chunks.

        Re-running an import returns duplicates, never copies (server rule).

        Args:
            source: an NDJSON path, a binary file, or an iterable of event dicts.
            agent: rename every event to this agent (``None`` keeps the original agents).
            chunk_size: events per request.
            progress: as for :meth:`export_events` (running count of events sent).
        """
        total = ImportResult()
        with progress_reporter(progress, "import") as report:
            for offset, chunk in ImportChunks(source, chunk_size):
                body: dict[str, Any] = {"events": chunk}
                if agent is not None:
                    body["agent"] = agent
                call = Call("POST", "/v1/events/import", lambda b: b, json=body)
                answer = self._request(call)
                total = total.plus(answer if isinstance(answer, dict) else {}, offset)
                if report is not None:
                    report(offset + len(chunk))
        return total
