"""The CrewAI event-bus listener: maps each CrewAI event and hands it to the ledger writer.

Event mapping, ids, ordering and roll-ups: ``docs/design/integrations-crewai.md``.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import logging
import pkgutil
import threading
import time
from collections.abc import Mapping
from types import TracebackType
from typing import Any

from crewai.events import BaseEventListener, crewai_event_bus
from crewai.events.base_events import BaseEvent
from crewai.events.event_bus import CrewAIEventsBus, is_replaying

from agentledger.client import capture_internal_exceptions
from agentledger.integrations._shared import InvalidOptionError, max_scopes_option
from agentledger.integrations.crewai._causes import (
    Links,
    asked_for_tools,
    end_key,
    end_links,
    model_call_ready,
    note_model_call,
    read_links,
    start_links,
)
from agentledger.integrations.crewai._events import RULES
from agentledger.integrations.crewai._order import Sequencer
from agentledger.integrations.crewai._scopes import Scope, ScopeTable
from agentledger.integrations.crewai._targets import Target
from agentledger.integrations.crewai._usage import Rollup
from agentledger.integrations.crewai._values import Out, Role, Rule
from agentledger.integrations.crewai._waits import Waits
from agentledger.integrations.crewai._writer import LedgerWriter, SupportsLedger
from agentledger.protocol import vocabulary as v

__all__ = ["LedgerCrewListener"]

logger = logging.getLogger("agentledger")


def _event_classes(types: frozenset[str]) -> list[type[BaseEvent]]:
    """Every concrete CrewAI event class whose ``type`` is in ``types``.

    The bus dispatches by exact class (subscribing to ``BaseEvent`` catches nothing), so each
    class of ``crewai.events.types.*`` (and any other loaded subclass) is found by its
    ``type`` field's default.
    """
    import crewai.events.types as event_types

    for module_info in pkgutil.iter_modules(event_types.__path__):
        importlib.import_module(f"{event_types.__name__}.{module_info.name}")
    found: dict[str, type[BaseEvent]] = {}
    stack: list[type[BaseEvent]] = list(BaseEvent.__subclasses__())
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        fields: Mapping[str, Any] = getattr(cls, "model_fields", {})
        field = fields.get("type")
        default = field.default if field is not None else None
        if isinstance(default, str) and default in types:
            found[f"{cls.__module__}.{cls.__qualname__}"] = cls
    return sorted(found.values(), key=lambda cls: cls.__qualname__)


class LedgerCrewListener(BaseEventListener):  # type: ignore[misc, unused-ignore]
    """Log CrewAI crews, tasks, agents, model calls and tool use to an agentledger ledger.

    Constructing it registers its handlers on CrewAI's global event bus
    (``crewai_event_bus``, crewai 1.15): it then sees every crew run in the process, or only
    the runs of ``crew`` (and of the copies CrewAI makes of it: ``kickoff_for_each`` and its
    async variants) when one is given. :meth:`close` (or leaving the ``with`` block) removes
    the handlers again.

    Args:
        ledger: an :class:`agentledger.client.Ledger` (see :class:`SupportsLedger`).
        session_id: put every event into this session; default: one session per root (each
            crew kickoff), its id derived from the kickoff's CrewAI event id.
        crew: only log runs of this ``crewai.Crew`` or ``Flow`` (what ``instrument`` passes),
            or ``None`` for every crew and flow of the process.
        metadata: a JSON object attached as ``metadata`` to every event.
        max_field_chars: strings longer than this (characters) are cut with a marker naming
            the original size.
        max_scopes: open CrewAI scopes tracked at most (bounded memory); the oldest is evicted
            beyond it.
        flush_timeout_s: default wait (seconds) of :meth:`flush`, :meth:`close` and the exit
            hook.
        max_wait_s: longest time (seconds) an event waits for its cause (a start the listener
            has not seen) before it is mapped anyway.

    Raises:
        ValueError: ``max_field_chars``, ``max_scopes``, ``flush_timeout_s`` or
            ``max_wait_s`` out of range.
        TypeError: ``crew`` is neither a ``Crew``, a ``Flow`` nor ``None``.
    """

    def __init__(
        self,
        ledger: SupportsLedger,
        *,
        session_id: str | None = None,
        crew: Any = None,
        metadata: Mapping[str, Any] | None = None,
        max_field_chars: int = 4_000,
        max_scopes: int | None = None,
        flush_timeout_s: float = 10.0,
        max_wait_s: float = 2.0,
    ) -> None:
        if max_field_chars < 1:
            raise InvalidOptionError("max_field_chars must be >= 1")
        if flush_timeout_s <= 0:
            raise InvalidOptionError("flush_timeout_s must be > 0")
        max_scopes = max_scopes_option(max_scopes)
        self._ledger = ledger
        self._writer = LedgerWriter(
            ledger,
            session_id=session_id,
            metadata=metadata,
            max_known=max_scopes,
            max_pending=max_scopes,
            on_error=lambda: self._internal_error("crewai.log"),
        )
        self._target = Target(crew)
        self._max_chars = max_field_chars
        self._flush_timeout_s = flush_timeout_s
        self._scopes = ScopeTable(max_scopes)
        self._sequencer = Sequencer(
            self._process, max_seen=max_scopes, max_held=max_scopes, max_wait_s=max_wait_s
        )
        self._lock = threading.Lock()
        self._internal_errors = 0
        self._late_usage = 0
        self._refused = 0
        self._waits = Waits()  # writes waiting for what they were computed from
        self._registered: list[type[BaseEvent]] = []
        self._bus: CrewAIEventsBus | None = None
        super().__init__()  # calls setup_listeners(crewai_event_bus)
        atexit.register(self._at_exit)

    # ----------------------------------------------------------------- bus plumbing

    def setup_listeners(self, crewai_event_bus: CrewAIEventsBus) -> None:
        """Register the handler for every mapped CrewAI event class (called by CrewAI)."""
        self._bus = crewai_event_bus
        for cls in _event_classes(frozenset(RULES)):
            crewai_event_bus.on(cls)(self._on_event)
            self._registered.append(cls)

    def _on_event(self, source: Any, event: BaseEvent) -> None:
        # Sync on purpose: CrewAI adds it to the handler set it already runs on its thread pool
        # for each event (no extra hop); the Sequencer puts causes first.
        if not is_replaying():  # checkpoint replays re-dispatch events already logged
            self.handle(source, event)

    def _unregister(self) -> None:
        bus, self._bus = self._bus, None
        if bus is None:
            return
        for cls in self._registered:
            bus.off(cls, self._on_event)
        self._registered = []

    # ----------------------------------------------------------------- public surface

    @property
    def internal_errors(self) -> int:
        """Exceptions raised by the listener's own code and swallowed (each logged at ERROR on
        the ``agentledger`` logger)."""
        return self._internal_errors

    @property
    def open_scopes(self) -> int:
        """CrewAI scopes started and not yet ended (0 after a finished run)."""
        return len(self._scopes)

    @property
    def late_usage_events(self) -> int:
        """Model-call ends handled after the task or crew around them had closed, so missing
        from that step's roll-up (0 in normal runs: CrewAI's pool starts handlers in
        emission order, and a task ends milliseconds after its last model call)."""
        return self._late_usage

    @property
    def refused_kickoffs(self) -> int:
        """Kickoffs not logged although they look like the instrumented crew (same agents and
        tasks) or flow (same class): each was also warned about on the ``agentledger``
        logger. A crew built again from the same definition is such a kickoff; instrument it
        too, or instrument its flow."""
        return self._refused

    @property
    def reordered_events(self) -> int:
        """Events that arrived before their cause (start or enclosing start) and were held
        back until it was handled."""
        return self._sequencer.reordered

    @property
    def derived_ids(self) -> bool:
        """True when ledger ids are derived from CrewAI's event ids (UUIDv5; the ledger's
        ``log()`` takes ``event_id=``, as :class:`agentledger.client.Ledger` does)."""
        return self._writer.derived_ids

    @property
    def orphaned_events(self) -> int:
        """Events logged as roots because their CrewAI parent was never seen."""
        return self._writer.orphans

    @property
    def evicted_scopes(self) -> int:
        """Open scopes dropped because ``max_scopes`` was reached."""
        return self._scopes.evicted

    def handle(self, source: Any, event: BaseEvent) -> None:
        """Take one CrewAI event; what the bus handler calls, from any thread, in any order.

        The event is mapped and handed to the ledger once its cause (the start it closes, or
        the start of its enclosing scope) has been. Never raises: an exception of the
        listener's own is logged and counted, and the crew goes on.

        Args:
            source: the object that emitted the event (crew, task, agent, LLM, tool usage).
            event: the CrewAI event (``crewai.events.base_events.BaseEvent``).
        """
        try:
            self._sequencer.arrive(source, event)
        except Exception:
            self._internal_error("crewai.handle")

    def _process(self, source: Any, event: BaseEvent) -> None:
        """Map one event, causes first (called by the Sequencer; never raises)."""
        try:
            self._handle(source, event)
        except Exception:
            self._internal_error(f"crewai.{getattr(event, 'type', '?')}")

    def _internal_error(self, where: str) -> None:
        """Count and log the exception being handled (call from an ``except`` block)."""
        with self._lock:
            self._internal_errors += 1
        with capture_internal_exceptions(where):
            raise

    def flush(self, timeout_s: float | None = None) -> object:
        """Wait for CrewAI's pending event handlers, then for the ledger to send everything.

        Events still waiting for a parent that never came are logged as roots first.

        Args:
            timeout_s: overall wait in seconds (default: ``flush_timeout_s``).

        Returns:
            What the ledger's ``flush`` returned.
        """
        budget = self._flush_timeout_s if timeout_s is None else timeout_s
        deadline = time.monotonic() + budget
        crewai_event_bus.flush(timeout=budget)
        self._sequencer.release()
        with self._sequencer.lock:
            self._waits.release_all()
        self._writer.release_orphans()
        return self._ledger.flush(timeout_s=max(0.0, deadline - time.monotonic()))

    def close(self, timeout_s: float | None = None) -> object:
        """Unregister the handlers, let already-dispatched events finish, flush the ledger.

        Idempotent. Does not close the ledger (it belongs to the caller).

        Args:
            timeout_s: overall wait in seconds (default: ``flush_timeout_s``).

        Returns:
            What the ledger's ``flush`` returned.
        """
        self._unregister()
        atexit.unregister(self._at_exit)
        return self.flush(timeout_s)

    def __enter__(self) -> LedgerCrewListener:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _at_exit(self) -> None:
        # Registered after CrewAI's own shutdown hook and (usually) after the ledger's, so it
        # runs before both (atexit is LIFO): handlers still pending reach the ledger.
        with capture_internal_exceptions("crewai.at_exit"):
            self.flush()

    # ----------------------------------------------------------------- mapping

    def _refuse(self, source: Any, event: BaseEvent) -> None:
        """Count and warn about a kickoff that looks like the target but is not logged."""
        with self._lock:
            self._refused += 1
        logger.warning(
            "agentledger: a %s like the instrumented one (%s %r, CrewAI id %s) was kicked off "
            "but is neither it nor a copy of it, so it is not logged; pass it to instrument() "
            "too, or instrument the flow that runs it",
            self._target.kind,
            type(source).__name__,
            getattr(source, "name", None) or getattr(event, "flow_name", None),
            getattr(source, "id", None),
        )

    def _handle(self, source: Any, event: BaseEvent) -> None:
        rule = RULES.get(event.type)
        if rule is None:
            return
        if rule.role is Role.START:
            self._handle_start(rule, source, event)
        elif rule.role is Role.END:
            self._handle_end(rule, source, event)
        else:
            self._handle_point(rule, source, event)

    def _handle_start(self, rule: Rule, source: Any, event: BaseEvent) -> None:
        parent_key = event.parent_event_id
        if self._target.runs(source, event.type):
            # the watched crew (or flow, or a copy of the crew) is a root of its own, even
            # when it runs inside a flow the listener does not log
            parent_key, parent, included = None, None, True
        else:
            parent = self._scopes.get(parent_key)
            included = parent.included if parent is not None else self._target.everything
            if not included and self._target.resembles(source, event.type):
                self._refuse(source, event)
        outs = rule.build(source, event, self._max_chars) if included else []
        main = outs[-1].data if outs else {}
        name = main.get("name") or main.get("tool") or main.get("model") or rule.kind
        scope = Scope(
            crewai_id=event.event_id,
            kind=rule.kind,
            name=str(name),
            parent=parent,
            started_at=event.timestamp,
            rollup=Rollup() if rule.rollup else None,
            included=included,
            call_id=getattr(event, "call_id", None) if rule.kind == "llm" else None,
            task_id=main.get("task_id") if rule.kind == "task" else None,
        )
        self._scopes.open(scope)
        if not included:
            return
        if rule.kind == "llm" and parent is not None:
            self._model_call(outs, event, parent_key, parent)
            return
        links = start_links(rule.kind, event, parent_key, parent)
        self._emit(outs, event, links, None, key=event.event_id)

    def _model_call(
        self, outs: list[Out], event: BaseEvent, parent_key: str | None, parent: Scope
    ) -> None:
        """Write a model call's start once what it read is known (:func:`model_call_ready`)."""
        previous = note_model_call(event, parent)

        def emit() -> None:
            links = read_links(parent_key, parent, previous)
            self._emit(outs, event, links, None, key=event.event_id)

        self._waits.run_or_hold(parent, lambda: model_call_ready(parent, previous), emit)

    def _handle_end(self, rule: Rule, source: Any, event: BaseEvent) -> None:
        call_id = getattr(event, "call_id", None) if rule.kind == "llm" else None
        start_id = event.started_event_id or self._scopes.start_id_for_call(call_id)
        scope = self._scopes.close(start_id, call_id)
        if scope is not None:
            if not scope.included:
                return
        else:
            enclosing = self._scopes.get(event.parent_event_id)
            if enclosing is not None and not enclosing.included:
                return
            if enclosing is None and not self._target.everything:
                return  # cannot tell whether it belongs to the watched crew
        outs = rule.build(source, event, self._max_chars)
        main = outs[-1]
        if scope is not None:
            self._finish_data(scope, main, event)
        parent_crewai = start_id or event.parent_event_id
        asked = main.event == v.LLM_END and asked_for_tools(main.data)

        def finish() -> None:
            links = end_links(scope, parent_crewai, asked=asked)
            key = end_key(start_id) if start_id else None
            self._emit(outs, event, links, parent_crewai, key=key)
            if scope is not None:
                self._waits.pump(scope.parent)  # what waited for this end

        if scope is None:
            finish()
        else:  # an end names what produced it: wait for the agent or task inside to end
            self._waits.run_or_hold(scope, lambda: not scope.open_children, finish)

    def _finish_data(self, scope: Scope, main: Out, event: BaseEvent) -> None:
        """Add what needs the start: duration, the start's tool name, usage roll-ups."""
        data = main.data
        if scope.started_at is not None and "duration_ms" not in data:
            with contextlib.suppress(TypeError):  # naive vs aware timestamps: no duration
                elapsed = (event.timestamp - scope.started_at).total_seconds()
                data["duration_ms"] = round(elapsed * 1000.0, 3)
        if scope.kind == "tool" and "tool" in data:
            data["tool"] = scope.name  # CrewAI may respell it on the end event
        if main.event == v.LLM_END:
            usage = data.get("token_usage")
            for ancestor in scope.ancestors():
                if ancestor.rollup is not None and not ancestor.rollup.add(usage):
                    with self._lock:
                        self._late_usage += 1
        if scope.rollup is not None:
            data["rollup"] = scope.rollup.close()

    def _handle_point(self, rule: Rule, source: Any, event: BaseEvent) -> None:
        enclosing = self._scopes.get(event.parent_event_id)
        if enclosing is not None and not enclosing.included:
            return
        if enclosing is None and not self._target.everything:
            return
        outs = rule.build(source, event, self._max_chars)
        self._emit(outs, event, Links(event.parent_event_id), event.parent_event_id)

    def _emit(
        self,
        outs: list[Out],
        event: BaseEvent,
        links: Links,
        extra_parent_crewai_id: str | None,
        *,
        key: str | None = None,
    ) -> None:
        """Write ``outs``: the main event (no suffix) with ``links`` (and known to children as
        ``key``); extra events under ``extra_parent_crewai_id`` (the scope's start), else
        under the main event."""
        for out in outs:
            if out.suffix:
                main_links, own_key = Links(extra_parent_crewai_id or key), None
            else:
                main_links, own_key = links, key
            self._writer.write(
                out.event,
                out.data,
                timestamp=event.timestamp,
                key=own_key,
                crewai_id=event.event_id,
                suffix=out.suffix,
                parent_key=main_links.parent_key,
                causes=main_links.causes,
                scope_key=main_links.scope_key,
            )
