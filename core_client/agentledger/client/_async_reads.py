"""The reads of :class:`AsyncLedger`: each builds its :class:`Call` (``_calls.py``) and sends
it with retries on the client's ``httpx.AsyncClient``; errors map to the client's error tree."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator
from typing import Any, TypeVar

import httpx

from agentledger.client._base import BaseLedger
from agentledger.client._calls import READ_RETRY, Call
from agentledger.client._errors import transport_error_from
from agentledger.client._models import (
    AgentInfo,
    BaselineReport,
    ChainReport,
    DecisionView,
    Event,
    ForgetResult,
    ImpactResult,
    MemoryContext,
    SearchResult,
    Session,
    SessionDiff,
    SignedHead,
    SigningKey,
    StateAt,
    WhyResult,
)
from agentledger.client._retry import RetryableStatus, async_retrying, is_retryable_status
from agentledger.protocol import limits

__all__ = ["AsyncLedgerReads"]

T = TypeVar("T")


class AsyncLedgerReads(BaseLedger):
    """Every read of :class:`AsyncLedger` but the bulk export and import."""

    _transport: httpx.AsyncBaseTransport | None
    _client: httpx.AsyncClient | None

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

    async def why(
        self,
        event_id: str,
        depth: int = limits.WHY_DEPTH_DEFAULT,
        limit: int = limits.LINEAGE_LIMIT_DEFAULT,
    ) -> WhyResult:
        """Why this event happened: its causal ancestry as a DAG, root causes first
        (``GET /v1/events/{id}/why``). Follows ``parent_id`` and ``caused_by``, not
        ``scope_id``.

        Args:
            event_id: the event to explain (for an agent's answer, its
                ``assistant_response``).
            depth: most cause hops to follow (0..10,000; default 1,000).
            limit: most events in the answer (1..100,000; default 10,000).

        Returns:
            :class:`WhyResult`: ``chain`` (each ancestor once, causes first, the event last),
            ``edges``, ``roots``, and ``missing``/``cut_at`` when the answer is incomplete.

        Raises:
            NotFoundError: no such event.
        """
        return await self._request(self._call_why(str(event_id), depth, limit))

    async def decision(self, event_id: str) -> DecisionView:
        """The decision-time view of one event (``GET /v1/events/{id}/decision``): the agent's
        state at its time, the model call behind it (found by cause edges) with the exact
        messages, model and parameters it received, the inputs it read (tool results with
        their tool calls) and the human approvals (interrupt, resume value, who resumed) of its
        turn.

        Args:
            event_id: the step to look at (an answer, a tool call, a model call...).

        Returns:
            :class:`DecisionView`; its ``model_call`` is ``None`` when no model call is behind
            the event (a user message), with a note saying so.

        Raises:
            NotFoundError: no such event (or not readable with this key).
        """
        return await self._request(self._call_decision(str(event_id)))

    async def impact(
        self,
        event_id: str,
        limit: int = limits.LINEAGE_LIMIT_DEFAULT,
        *,
        depth: int = limits.IMPACT_DEPTH_DEFAULT,
    ) -> ImpactResult:
        """Everything this event affected: every causal descendant as a DAG, causes before
        their effects (``GET /v1/events/{id}/impact``), the mirror of :meth:`why`.

        Args:
            event_id: the event whose effects to list.
            limit: most events in the answer (1..100,000; default 10,000; ``truncated`` says
                when it was reached).
            depth: most effect hops to follow (0..10,000; default 1,000).

        Raises:
            NotFoundError: no such event.
        """
        return await self._request(self._call_impact(str(event_id), depth, limit))

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
        """Erase the agent's events whose ``data`` or ``metadata`` holds
        ``filter_key == filter_value`` at any depth, and rename sessions whose id names the
        value (``DELETE /v1/memory/forget``). Tombstones keep the chain verifiable.

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

    async def signing_keys(self) -> list[SigningKey]:
        """The server's public signing keys, oldest first, retired ones too
        (``GET /v1/signing-keys``, no key needed). Compare a ``fingerprint`` out of band
        before trusting a key."""
        return await self._request(self._call_signing_keys())

    async def sign_head(self, agent: str | None = None) -> SignedHead:
        """Sign the agent's current chain head now (``POST /v1/signed-heads``; a key bound to
        an agent signs only its own).

        Raises:
            NotFoundError: no events of the agent are stored.
            ServerError: the server's signing-key file cannot be used (503).
        """
        return await self._request(self._call_sign_head(agent))

    async def evidence_bundle(self, event_id: str) -> bytes:
        """``GET /v1/events/{event_id}/evidence``: the event's evidence bundle as zip bytes,
        to check offline with :func:`agentledger.evidence.verify_bundle`.

        Raises:
            NotFoundError: no such event; UnprocessableEntityError: a chain segment would
                hold more rows than the server's ``AGENTLEDGER_EVIDENCE_MAX_ROWS``;
                APIStatusError: signing unavailable (503) or refused (409).
        """
        return self._body(await self._send(self._call_evidence(str(event_id))))

    async def signed_heads(self, agent: str | None = None, limit: int = 100) -> list[SignedHead]:
        """The agent's signed heads, newest first (``GET /v1/signed-heads``, ``limit``
        1..1000).

        Raises:
            NotFoundError: no events of the agent are stored.
        """
        return await self._request(self._call_signed_heads(agent, limit))
