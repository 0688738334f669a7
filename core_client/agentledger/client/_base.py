"""The non-I/O half shared by :class:`Ledger` and :class:`AsyncLedger`: configuration, the
background sender, the ``log()`` family (:mod:`._writes`) and the read descriptions
(:mod:`._calls`) that each twin sends with its own httpx client."""

from __future__ import annotations

import collections
import os
import threading
from collections.abc import Callable, Collection
from typing import Final

import httpx

from agentledger.client._batcher import BatchSender
from agentledger.client._calls import ReadCalls
from agentledger.client._config import (
    DEFAULT,
    Default,
    resolve_agent,
    resolve_api_key,
    resolve_spill_dir,
    resolve_url,
)
from agentledger.client._dead_letter import DeadLetterFile
from agentledger.client._errors import ConfigurationError
from agentledger.client._guard import logger
from agentledger.client._models import DeliveryError, Stats
from agentledger.client._process_hooks import register_process_hooks, unregister_exit_hook
from agentledger.client._queue import DEFAULT_MAX_QUEUE_BYTES, DEFAULT_MAX_QUEUE_EVENTS
from agentledger.client._redaction import ClientRedactor
from agentledger.client._retry import RetryPolicy
from agentledger.client._spill import DEFAULT_MAX_SPILL_BYTES, SpillStore, destination_dir
from agentledger.client._writes import EventWrites
from agentledger.client.sanitize import DEFAULT_MAX_STRING_CHARS

__all__ = ["DEFAULT_TIMEOUT_S", "BaseLedger", "RedactSetting"]

#: Default timeout of one HTTP request (seconds).
DEFAULT_TIMEOUT_S: Final = 10.0

#: ``redact=``: ``True`` (secret-named keys), ``False`` (off), or pattern names to add
#: (see ``agentledger.protocol.redaction.PATTERN_NAMES``: email, phone, card, iban, ipv4).
RedactSetting = bool | Collection[str]


class BaseLedger(EventWrites, ReadCalls):
    """Configuration, the sender and ``log()``; see :class:`agentledger.client.Ledger`."""

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
        sender_transport: httpx.BaseTransport | None = None,
        retry: RetryPolicy | None = None,
        max_spill_bytes: int = DEFAULT_MAX_SPILL_BYTES,
        max_string_chars: int = DEFAULT_MAX_STRING_CHARS,
        on_error: Callable[[DeliveryError], object] | None = None,
    ) -> None:
        self.url: str = resolve_url(url)
        self.agent = resolve_agent(agent)
        key = resolve_api_key(api_key)
        if not key:
            raise ConfigurationError(
                "an API key is required: pass api_key= or set AGENTLEDGER_API_KEY"
            )
        if not 1 <= max_batch_events <= 500:
            raise ConfigurationError("max_batch_events must be 1..500 (server batch limit)")
        if max_queue_events < max_batch_events:
            raise ConfigurationError("max_queue_events must be >= max_batch_events")
        if max_queue_bytes < 1024 * 1024:
            raise ConfigurationError("max_queue_bytes must be at least 1 MiB")
        if flush_interval_s <= 0 or flush_timeout_s < 0:
            raise ConfigurationError("flush_interval_s must be > 0 and flush_timeout_s >= 0")
        self.flush_timeout_s = float(flush_timeout_s)
        self.max_string_chars = max_string_chars
        self._calls_by_id = collections.OrderedDict()
        self._calls_lock = threading.Lock()
        self._headers = {
            "Authorization": f"Bearer {key}",
            "User-Agent": "agentledger-client/0.1",
        }
        self._timeout = timeout if isinstance(timeout, httpx.Timeout) else httpx.Timeout(timeout)
        self.spill_dir = resolve_spill_dir(spill_dir)
        spill = dead_letter = None
        if self.spill_dir is not None:
            destination = destination_dir(self.spill_dir, self.url)
            try:
                destination.mkdir(parents=True, exist_ok=True)
            except OSError as error:
                logger.warning(
                    "agentledger: spill_dir %s is unusable (%s); events wait in memory only",
                    self.spill_dir,
                    error,
                )
            else:
                spill = SpillStore(destination, max_bytes=max_spill_bytes)
                dead_letter = DeadLetterFile(destination / "dead-letter")
        #: The dead-letter file of events the server refused for good (``None``: no spill).
        self.dead_letter_path = dead_letter.path if dead_letter is not None else None
        self._sender = BatchSender(
            url=self.url,
            headers=self._headers,
            transport=sender_transport,
            timeout=self._timeout,
            policy=retry or RetryPolicy(),
            spill=spill,
            dead_letter=dead_letter,
            redactor=self._make_redactor(redact),
            flush_interval_s=flush_interval_s,
            max_batch_events=max_batch_events,
            max_queue_events=max_queue_events,
            max_queue_bytes=max_queue_bytes,
            on_error=on_error,
        )
        self._register_process_hooks()

    @staticmethod
    def _make_redactor(setting: RedactSetting) -> ClientRedactor | None:
        if setting is False:
            return None
        patterns: tuple[str, ...] = () if setting is True else tuple(setting)
        try:
            return ClientRedactor(patterns)
        except ValueError as error:
            raise ConfigurationError(str(error)) from error

    def _register_process_hooks(self) -> None:
        self._at_exit = register_process_hooks(
            self._sender, self.flush_timeout_s, self._after_fork_in_child
        )

    def _after_fork_in_child(self) -> None:
        """Twins drop their HTTP client here (its sockets belong to the parent)."""

    def _unregister_exit(self) -> None:
        unregister_exit_hook(self._at_exit)

    def stats(self) -> Stats:
        """Counters of the sender: enqueued, sent, duplicates, retried, spilled, unspilled,
        dropped, failed, queue depth and spill size (see :class:`Stats`)."""
        return self._sender.stats()
