"""What one conversation's runs share to name their causes: links and the inputs not yet read.

A :class:`Conversation` is one LangGraph thread (``thread_id``; a resumed or continued run
reuses it) or, without a thread, one root run. It remembers:

* the links that cross the run tree: tool call id -> the ``llm_end`` that requested the call,
  tool call id -> its ``tool_result`` / ``tool_error``, AI message id -> its ``llm_end``;
* the inputs a model may read (the user's message, tool results and errors, retrievals) in the
  order they were logged, and what each completed model call had read: an input is *new* to a
  model call when no call before it read it (see :meth:`Conversation.reads`);
* the last ``assistant_response`` (the cause of the next user turn) and the last
  ``interrupted`` event (the cause of the human's resume input).

:class:`Conversations` keeps the threads' conversations, least recently used dropped first.
"""

from __future__ import annotations

import threading
from collections import OrderedDict, deque
from collections.abc import Sequence
from dataclasses import dataclass

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

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
        #: (clock at completion, the highest read mark of the calls completed so far)
        self._completions: deque[tuple[int, int]] = deque(maxlen=MAX_LINKS)
        self._completions_floor = 0
        #: AI message id -> read mark of the model call that produced it
        self._read_by_message: dict[str, int] = {}
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

    def now(self) -> int:
        """The conversation's clock: it advances with every input and every completed call."""
        return self._seq

    def reads(self, prompt: Sequence[BaseMessage], since: int) -> tuple[list[str], int]:
        """(inputs a model call with ``prompt`` reads, oldest first; its read mark).

        It reads the inputs that are new to it, plus the tool outputs its prompt ends with.
        What its previous model calls read is not new: those are the calls whose AI messages
        its prompt holds; for a prompt that holds none (a node's fresh prompt, a model called
        alone), every call completed before ``since`` (when its enclosing step started). So
        calls side by side (``RunnableParallel``, parallel branches) read the same inputs, and
        a failed call reads nothing, leaving its inputs to the retry or fallback. A tool output
        is left out when the prompt holds tool messages but not this one (it belongs to another
        branch). At most ``limits.MAX_CAUSES`` are returned, the most recent ones. Pass the
        mark to :meth:`model_done` when the call succeeds.
        """
        in_prompt = {m.tool_call_id for m in prompt if isinstance(m, ToolMessage)}
        produced = [m.id for m in prompt if isinstance(m, AIMessage) and m.id]
        tail = self.tool_results_in(prompt)
        with self._lock:
            known = [self._read_by_message[i] for i in produced if i in self._read_by_message]
            upto = max(known) if known else self._read_before(since)
            mark = self._seq
            chosen = {
                item.event_id: item.seq
                for item in self._inputs
                if item.seq > upto
                and (item.call_id is None or not in_prompt or item.call_id in in_prompt)
            }
            for event_id in tail:
                chosen.setdefault(event_id, self._seq_of.get(event_id, 0))
        ordered = sorted(chosen, key=chosen.__getitem__)
        return ordered[-limits.MAX_CAUSES :], mark

    def _read_before(self, since: int) -> int:
        """The read mark of the model calls completed before ``since`` (lock held)."""
        for tick, upto in reversed(self._completions):
            if tick < since:
                return upto
        return self._completions_floor

    def model_done(self, mark: int, message_id: str | None) -> None:
        """A model call that started at ``mark`` completed with the AI message
        ``message_id``: what it read is read, for the calls after it."""
        with self._lock:
            self._seq += 1
            upto = max(self._completions[-1][1] if self._completions else 0, mark)
            if len(self._completions) == self._completions.maxlen:
                self._completions_floor = self._completions[0][1]
            self._completions.append((self._seq, upto))
            if message_id:
                if len(self._read_by_message) >= MAX_LINKS:
                    del self._read_by_message[next(iter(self._read_by_message))]
                self._read_by_message[message_id] = mark

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
