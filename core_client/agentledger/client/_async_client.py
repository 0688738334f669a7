"""The asynchronous client, :class:`AsyncLedger` (twin of :class:`~agentledger.client.Ledger`).

Reads are coroutines on an ``httpx.AsyncClient`` (never the sync twin run in a thread).
``log()`` is the very same non-blocking call as in the sync twin: it only queues, and the one
background sender thread does the network I/O, so events logged from any thread or from
synchronous callbacks are sent even after the event loop has finished.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import AsyncIterator, Iterable
from types import TracebackType
from typing import IO, Any, TypeVar

import httpx

from agentledger.client._base import DEFAULT_TIMEOUT_S, BaseLedger, RedactSetting
from agentledger.client._calls import READ_RETRY, Call
from agentledger.client._config import DEFAULT, Default
from agentledger.client._errors import transport_error_from
from agentledger.client._models import (
    AgentInfo,
    ApiKey,
    BaselineReport,
    ChainReport,
    Event,
    FlushResult,
    ForgetResult,
    ImpactResult,
    ImportResult,
    MemoryContext,
    SearchResult,
    Session,
    SessionDiff,
    StateAt,
    WhyResult,
)
from agentledger.client._retry import (
    RetryableStatus,
    RetryPolicy,
    async_retrying,
    is_retryable_status,
)
from agentledger.client._sanitize import DEFAULT_MAX_STRING_CHARS
from agentledger.client._spill import DEFAULT_MAX_SPILL_BYTES
from agentledger.client._transfer import (
    ImportChunks,
    ProgressArg,
    open_export_target,
    progress_reporter,
)

__all__ = ["AsyncLedger"]

T = TypeVar("T")


class AsyncLedger(BaseLedger):
    """The asyncio twin of :class:`~agentledger.client.Ledger`: same constructor, same
    ``log()`` (non-blocking, never raises), ``async`` reads, ``await flush()`` and
    ``await aclose()``, ``async with``.

    Args:
        transport: an ``httpx.AsyncBaseTransport`` for the reads.
        sender_transport: an ``httpx.BaseTransport`` for the background sender thread.
        (every other argument as in :class:`~agentledger.client.Ledger`)

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
        max_queue_events: int = 10_000,
        flush_timeout_s: float = 5.0,
        timeout: float | httpx.Timeout = DEFAULT_TIMEOUT_S,
        redact: RedactSetting = True,
        transport: httpx.AsyncBaseTransport | None = None,
        sender_transport: httpx.BaseTransport | None = None,
        retry: RetryPolicy | None = None,
        max_spill_bytes: int = DEFAULT_MAX_SPILL_BYTES,
        max_string_chars: int = DEFAULT_MAX_STRING_CHARS,
    ) -> None:
        super().__init__(
            url,
            api_key,
            agent,
            spill_dir=spill_dir,
            flush_interval_s=flush_interval_s,
            max_batch_events=max_batch_events,
            max_queue_events=max_queue_events,
            flush_timeout_s=flush_timeout_s,
            timeout=timeout,
            redact=redact,
            sender_transport=sender_transport,
            retry=retry,
            max_spill_bytes=max_spill_bytes,
            max_string_chars=max_string_chars,
        )
        self._transport = transport
        self._client: httpx.AsyncClient | None = None

    # -- lifecycle -------------------------------------------------------------------------

    async def flush(self, timeout_s: float | None = None) -> FlushResult:
        """Wait (without blocking the event loop) until every event logged before this call
        is sent, spilled or dropped, or ``timeout_s`` (default ``flush_timeout_s``) passed.

        Returns:
            :class:`FlushResult`; ``complete`` is ``False`` on timeout (field case H07).
        """
        timeout = self.flush_timeout_s if timeout_s is None else timeout_s
        return await self._sender.async_flush(timeout)

    async def aclose(self, timeout_s: float | None = None) -> FlushResult:
        """Flush within ``timeout_s`` (default ``flush_timeout_s``), stop the sender, spill
        what is left and close HTTP connections. Idempotent."""
        timeout = self.flush_timeout_s if timeout_s is None else timeout_s
        result = await self._sender.async_close(timeout)
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()
        self._unregister_exit()
        return result

    async def __aenter__(self) -> AsyncLedger:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def _after_fork_in_child(self) -> None:
        self._client = None

    # -- transport -------------------------------------------------------------------------

    def _http(self) -> httpx.AsyncClient:
        client = self._client
        if client is None:
            client = httpx.AsyncClient(
                base_url=self.url,
                headers=self._headers,
                transport=self._transport,
                timeout=self._timeout,
            )
            self._client = client
        return client

    async def _send(self, call: Call[Any]) -> httpx.Response:
        async def attempt() -> httpx.Response:
            response = await self._http().request(
                call.method, call.path, params=call.params, json=call.json
            )
            if is_retryable_status(response.status_code):
                raise RetryableStatus(response)
            return response

        try:
            return await async_retrying(READ_RETRY)(attempt)
        except RetryableStatus as error:
            return error.response
        except httpx.TransportError as error:
            raise transport_error_from(error) from error

    async def _request(self, call: Call[T]) -> T:
        return self._parse(call, await self._send(call))

    # -- reads -----------------------------------------------------------------------------

    async def health(self) -> dict[str, Any]:
        """``GET /health``: ``{"status": "ok", "version": ...}``.

        Raises:
            TransportError: no answer; APIStatusError: an error status.
        """
        return await self._request(self._call_health())

    async def get_event(self, event_id: str) -> Event:
        """One stored event with its checksum and chain fields.

        Raises:
            NotFoundError: no such event (it may still be queued: call :meth:`flush` first).
        """
        return await self._request(self._call_get_event(str(event_id)))

    async def why(self, event_id: str, depth: int = 10) -> WhyResult:
        """The causal chain of an event, root first (``GET /v1/events/{id}/why``).

        Args:
            event_id: the event to explain.
            depth: most ancestors to walk (1..10,000).

        Raises:
            NotFoundError: no such event.
        """
        return await self._request(self._call_why(str(event_id), depth))

    async def impact(self, event_id: str, limit: int | None = None) -> ImpactResult:
        """Every descendant of an event (``GET /v1/events/{id}/impact``), the mirror of
        :meth:`why`. ``limit`` caps the events returned (``truncated`` says so)."""
        return await self._request(self._call_impact(str(event_id), limit))

    async def replay(
        self,
        session_id: str,
        *,
        agent: str | None = None,
        all_agents: bool = False,
        limit: int = 10_000,
    ) -> list[Event]:
        """The events of a session, oldest first (``GET /v1/sessions/{sid}/events``).

        Args:
            session_id: the session.
            agent: the agent whose events to return (default: the client's agent).
            all_agents: return every agent's events of the session instead.
            limit: most events returned (server maximum 100,000).
        """
        return await self._request(self._call_replay(session_id, agent, limit, all_agents))

    async def sessions(self, *, agent: str | None = None, limit: int = 50) -> list[Session]:
        """Session summaries of an agent (default: the client's), newest first."""
        return await self._request(self._call_sessions(agent, limit))

    async def list_events(
        self,
        *,
        agent: str | None = None,
        limit: int = 50,
        event_type: str | None = None,
        session_id: str | None = None,
        before: dt.datetime | str | None = None,
        after: dt.datetime | str | None = None,
        cursor: str | None = None,
    ) -> list[Event]:
        """One page of an agent's events, newest first (``GET /v1/events``, ``limit`` 1..1000)."""
        return await self._request(
            self._call_events_page(
                agent,
                limit=limit,
                event_type=event_type,
                session_id=session_id,
                before=before,
                after=after,
                cursor=cursor,
            )
        )

    async def iter_events(
        self,
        *,
        agent: str | None = None,
        event_type: str | None = None,
        session_id: str | None = None,
        before: dt.datetime | str | None = None,
        after: dt.datetime | str | None = None,
        page_size: int = 500,
    ) -> AsyncIterator[Event]:
        """Every matching event, newest first, paging with the stable ``cursor``
        (``"<timestamp>|<sequence_no>"`` of the last row) until a short page."""
        cursor: str | None = None
        while True:
            page = await self.list_events(
                agent=agent,
                limit=page_size,
                event_type=event_type,
                session_id=session_id,
                before=before,
                after=after,
                cursor=cursor,
            )
            for event in page:
                yield event
            if len(page) < page_size:
                return
            last = page[-1]
            cursor = f"{last.timestamp}|{last.sequence_no}"

    async def export_events(
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
                async with self._http().stream(
                    "GET", "/v1/events/export", params=params
                ) as response:
                    if response.status_code >= 400:
                        await response.aread()
                        self._parse(Call("GET", "", lambda _: None), response)
                    async for line in response.aiter_lines():
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

    async def import_events(
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
                answer = await self._request(call)
                total = total.plus(answer if isinstance(answer, dict) else {}, offset)
                if report is not None:
                    report(offset + len(chunk))
        return total

    async def verify_chain(
        self,
        *,
        agent: str | None = None,
        anchor: str | None = None,
        after_seq: int | None = None,
    ) -> ChainReport:
        """Verify the agent's hash chain (``GET /v1/events/chain``).

        Args:
            agent: the agent (default: the client's).
            anchor: a ``chain_hash`` saved earlier; it must still be on the chain.
            after_seq: verify only links after this sequence number.
        """
        return await self._request(self._call_verify(agent, anchor, after_seq))

    async def search(
        self,
        query: str,
        *,
        agent: str | None = None,
        limit: int = 10,
        mode: str = "auto",
        include_superseded: bool = False,
    ) -> SearchResult:
        """Search events (``POST /v1/search``; ``mode`` auto|keyword|semantic|hybrid)."""
        return await self._request(self._call_search(query, agent, limit, mode, include_superseded))

    async def baseline(
        self,
        agent: str | None = None,
        *,
        recent_window: str | int | None = None,
        window: str | None = None,
    ) -> BaselineReport:
        """Behaviour drift of an agent, recent vs baseline (``window`` 24h|7d|30d)."""
        return await self._request(self._call_baseline(agent, recent_window, window))

    async def behavior_change(
        self,
        agent: str | None = None,
        *,
        window: str | None = None,
        from_ts: dt.datetime | str | None = None,
        to_ts: dt.datetime | str | None = None,
    ) -> BaselineReport:
        """The drift comparison for a time window."""
        return await self._request(self._call_behavior_change(agent, window, from_ts, to_ts))

    async def at(self, timestamp: dt.datetime | str, *, agent: str | None = None) -> StateAt:
        """The agent's key/value state (``state_set``/``state_delete``) at ``timestamp``."""
        return await self._request(self._call_at(timestamp, agent))

    async def forget(
        self,
        filter_key: str,
        filter_value: str | int | float | bool,
        *,
        agent: str | None = None,
        dry_run: bool = False,
    ) -> ForgetResult:
        """Erase the agent's events whose ``data`` holds ``filter_key == filter_value`` at any
        depth (``DELETE /v1/memory/forget``). Tombstones keep the chain verifiable.

        Args:
            agent: the agent (default: the client's).
            dry_run: only count what would be erased.
        """
        return await self._request(self._call_forget(filter_key, filter_value, agent, dry_run))

    async def context_for(
        self,
        task: str,
        *,
        agent: str | None = None,
        max_tokens: int = 2000,
        session_id: str | None = None,
    ) -> MemoryContext:
        """A prompt-ready memory block for ``task`` (``POST /v1/memory/context``): the agent's
        recent events, then the ones relevant to ``task`` (search), deduplicated, superseded
        ones left out, packed under ``max_tokens`` tokens (16–128,000).

        Args:
            task: what the agent is about to do (the search text).
            agent: the agent (default: the client's).
            session_id: the current session, whose own events are left out.

        Raises:
            UnprocessableEntityError: a bad argument (the detail names it).
        """
        return await self._request(self._call_context_for(task, agent, max_tokens, session_id))

    async def memory_diff(self, session_id: str, *, agent: str | None = None) -> SessionDiff:
        """What ``session_id`` did next to the agent's usual sessions
        (``GET /v1/memory/diff/{sid}``): new event types and steps, usual steps it skipped,
        depth, errors, duration in seconds.

        Raises:
            NotFoundError: no such session.
        """
        return await self._request(self._call_memory_diff(session_id, agent))

    async def agents(self) -> list[AgentInfo]:
        """Every agent the key may read, with first/last seen and event count."""
        return await self._request(self._call_agents())

    async def create_key(
        self,
        name: str,
        *,
        agent: str | None = None,
        scope: str = "read_write",
        expires_in_days: int | None = None,
    ) -> ApiKey:
        """Create an API key (``scope`` read_write|read_only); its secret is in ``.key``,
        shown this once."""
        return await self._request(self._call_create_key(name, agent, scope, expires_in_days))

    async def list_keys(self) -> list[ApiKey]:
        """The server's keys (no secrets)."""
        return await self._request(self._call_list_keys())

    async def revoke_key(self, key_id: str) -> None:
        """Revoke a key.

        Raises:
            NotFoundError: no such key.
        """
        await self._request(self._call_revoke_key(key_id))
