"""What one conversation's runs share to name their causes: links and the inputs not yet read.

A :class:`Conversation` is one LangGraph thread (``thread_id``; a resumed or continued run
reuses it) or, without a thread, one root run. It remembers:

* the links that cross the run tree: tool call id -> the ``llm_end`` that requested the call,
  tool call id -> its ``tool_result`` / ``tool_error``, AI message id -> its ``llm_end``;
* the inputs a model may read (the user's message, tool results and errors, retrievals) in the
  order they were logged, and which of them a model call already read: an input is *new* to a
  model call when it was logged after the inputs the last *completed* call had seen (a failed
  call reads nothing, so its retry or fallback reads the same inputs again);
* the last ``assistant_response`` (the cause of the next user turn) and the last
  ``interrupted`` event (the cause of the human's resume input).

:class:`Conversations` keeps the threads' conversations, least recently used dropped first.
"""

from __future__ import annotations

import threading
from collections import OrderedDict, deque
from collections.abc import Sequence
from dataclasses import dataclass

from langchain_core.messages import BaseMessage, ToolMessage

from agentledger.protocol import limits

__all__ = ["MAX_LINKS", "MAX_THREADS", "Conversation", "Conversations"]

#: Entries kept per link map, and inputs remembered, per conversation (oldest dropped first).
MAX_LINKS = 1_000
#: LangGraph threads whose conversation is remembered across runs (least recently used dropped).
MAX_THREADS = 1_000


@dataclass(frozen=True, slots=True)
class _Input:
    seq: int
    event_id: str
    #: the tool call id of a tool result / error (``None`` for other inputs)
    call_id: str | None


class Conversation:
    """Links and unread inputs of one conversation (see the module docstring). Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._call_parents: dict[str, str] = {}
        self._call_results: dict[str, str] = {}
        self._message_events: dict[str, str] = {}
        self._inputs: deque[_Input] = deque(maxlen=MAX_LINKS)
        self._seq_of: dict[str, int] = {}
        self._seq = 0
        self._read_upto = 0
        self.last_answer: str | None = None
        self.last_interrupt: str | None = None

    # ------------------------------------------------------------------ links

    def _link(self, links: dict[str, str], key: str, event_id: str) -> None:
        with self._lock:
            if len(links) >= MAX_LINKS and key not in links:
                del links[next(iter(links))]
            links[key] = event_id

    def model_output(self, llm_end: str, message_id: str | None, call_ids: Sequence[str]) -> None:
        """Remember the ``llm_end`` behind an AI message and the tool calls it requested."""
        if message_id:
            self._link(self._message_events, message_id, llm_end)
        for call_id in call_ids:
            self._link(self._call_parents, call_id, llm_end)

    def requested_by(self, call_id: str | None) -> str | None:
        """The ``llm_end`` whose message requested tool call ``call_id``, if seen."""
        return self._call_parents.get(call_id) if call_id else None

    def produced_by(self, message_id: str | None) -> str | None:
        """The ``llm_end`` that produced the AI message ``message_id``, if seen."""
        return self._message_events.get(message_id) if message_id else None

    # ------------------------------------------------------------------ inputs

    def add_input(self, event_id: str, call_id: str | None = None) -> None:
        """Record an input a later model call may read (a tool's output when ``call_id``)."""
        with self._lock:
            self._seq += 1
            if len(self._inputs) == self._inputs.maxlen:
                self._seq_of.pop(self._inputs[0].event_id, None)
            self._inputs.append(_Input(self._seq, event_id, call_id))
            self._seq_of[event_id] = self._seq
        if call_id:
            self._link(self._call_results, call_id, event_id)

    def tool_results_in(self, prompt: Sequence[BaseMessage]) -> list[str]:
        """Event ids of the tool outputs at the end of ``prompt`` (after its last AI turn)."""
        read: list[str] = []
        for message in reversed(prompt):
            if not isinstance(message, ToolMessage):
                break
            event_id = self._call_results.get(message.tool_call_id)
            if event_id:
                read.append(event_id)
        read.reverse()
        return read

    def reads(self, prompt: Sequence[BaseMessage]) -> tuple[list[str], int]:
        """(inputs a model call with ``prompt`` reads, oldest first; its read mark).

        The inputs are those new since the last completed model call, plus the tool outputs
        at the end of the prompt. A tool output is left out when the prompt holds tool
        messages but not this one (it belongs to another branch). At most
        ``limits.MAX_CAUSES`` are returned, the most recent ones. Pass the mark to
        :meth:`model_done` when the call succeeds.
        """
        in_prompt = {m.tool_call_id for m in prompt if isinstance(m, ToolMessage)}
        tail = self.tool_results_in(prompt)
        with self._lock:
            mark = self._seq
            chosen = {
                item.event_id: item.seq
                for item in self._inputs
                if item.seq > self._read_upto
                and (item.call_id is None or not in_prompt or item.call_id in in_prompt)
            }
            for event_id in tail:
                chosen.setdefault(event_id, self._seq_of.get(event_id, 0))
        ordered = sorted(chosen, key=chosen.__getitem__)
        return ordered[-limits.MAX_CAUSES :], mark

    def model_done(self, mark: int) -> None:
        """A model call that started at ``mark`` completed: what it read is read."""
        with self._lock:
            self._read_upto = max(self._read_upto, mark)

    def take_interrupt(self) -> str | None:
        """The last ``interrupted`` event, forgotten once a resume has named it."""
        with self._lock:
            event_id, self.last_interrupt = self.last_interrupt, None
        return event_id


class Conversations:
    """The conversations of LangGraph threads, by ``thread_id``; bounded and thread-safe."""

    def __init__(self, max_threads: int = MAX_THREADS) -> None:
        self._max = max_threads
        self._threads: OrderedDict[str, Conversation] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._threads)

    def get(self, thread_id: str | None) -> Conversation:
        """The conversation of ``thread_id`` (created on first use); a new one for ``None``."""
        if thread_id is None:
            return Conversation()
        with self._lock:
            conversation = self._threads.get(thread_id)
            if conversation is None:
                conversation = self._threads[thread_id] = Conversation()
                if len(self._threads) > self._max:
                    self._threads.popitem(last=False)
            else:
                self._threads.move_to_end(thread_id)
            return conversation
