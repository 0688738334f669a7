"""Build case files from stored sessions (``agentledger cases export``).

The chain is verified first (:class:`ChainBrokenError` unless ``force=True``), then each
session becomes a pseudonymised case; the steps and ``subject_ref`` are described in
``docs/design/cases.md``.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentledger.cases._candidates import read_candidates
from agentledger.cases._forget import subject_ref_of
from agentledger.cases._lineage import Step, source_lineage
from agentledger.cases._model import (
    Case,
    ChainHeadRef,
    Expect,
    Limit,
    OutcomeCheck,
    Selection,
    StubCall,
    ToolCallCheck,
    ToolList,
    save_case,
)
from agentledger.cases._pseudonym import Pseudonymizer
from agentledger.cases._sample import (
    ALL_STRATUM,
    NONE_STRATUM,
    SampleResult,
    SampleSpec,
    draw_sample,
)
from agentledger.cases._setup import captured_with
from agentledger.client import Event, Ledger
from agentledger.client import vocabulary as v
from agentledger.protocol import LedgerError
from agentledger.protocol.redaction import redact

__all__ = ["ChainBrokenError", "ExportResult", "build_case", "export_cases", "selection_of"]

#: Most events read per session.
MAX_SESSION_EVENTS = 10_000

_SUBJECT_KEYS = ("user_id", "subject_id", "customer_id", "subject")
#: ``threshold`` of the ``similar_to`` check an exported case gets against its source answer,
#: set for the offline model (a paraphrase scores about 0.9, a shortened answer with the same
#: facts about 0.7, a refusal about 0.5, an unrelated answer near 0); a stronger embedder
#: separates wording from meaning better, and the threshold can be raised in the case file.
DEFAULT_SIMILARITY = 0.7

#: The marker the integrations end a cut string with (``…[cut, 5070 chars]``).
_CUT_MARK = re.compile(r"…\[cut, \d+ chars\]$")


class ChainBrokenError(LedgerError, RuntimeError):
    """The source agent's hash chain does not verify; exporting would launder tampered data.

    Attributes:
        agent: the agent; summary: the server's summary; problems: ``ChainProblem`` list.
    """

    def __init__(self, agent: str, summary: str, problems: Sequence[Any]) -> None:
        super().__init__(
            f"the hash chain of agent {agent!r} is broken ({summary}); refusing to export "
            "(use --force to export anyway)"
        )
        self.agent = agent
        self.summary = summary
        self.problems = list(problems)


@dataclass
class ExportResult:
    """What :func:`export_cases` wrote: ``files`` (paths), ``chain_intact``, ``skipped``
    (session id -> reason, e.g. no user message), the ``selected`` session ids; for a
    sampled export the draw (``sample``) and the sessions that were no candidates because
    they hold no user message (``without_input``)."""

    files: list[Path] = field(default_factory=list)
    chain_intact: bool = True
    chain_head: ChainHeadRef | None = None
    skipped: dict[str, str] = field(default_factory=dict)
    selected: list[str] = field(default_factory=list)
    sample: SampleResult | None = None
    without_input: list[str] = field(default_factory=list)


def selection_of(draw: SampleResult, stratum: str) -> Selection:
    """The :class:`Selection` recorded in a case drawn by ``draw`` from ``stratum``."""
    spec = draw.spec
    return Selection(
        method=spec.method,
        seed=spec.seed,
        stratum=stratum,
        stratify_by=spec.stratify_by,
        half_life_days=spec.half_life_days,
        since=None if spec.since is None else spec.since.isoformat(),
        until=None if spec.until is None else spec.until.isoformat(),
    )


def _case_id(agent: str, session: str) -> str:
    raw = re.sub(r"[^A-Za-z0-9._-]+", "-", f"{agent}-{session}").strip("-._")
    return (raw or "case")[:128]


def _text(value: Any) -> str:
    return value if isinstance(value, str) else "" if value is None else str(value)


def _subject_ref(agent: str, session: str, events: Sequence[Event]) -> str:
    subject = f"{agent}/{session}"
    for event in events:
        for source in (event.metadata or {}, event.data):
            found = next((source[k] for k in _SUBJECT_KEYS if source.get(k)), None)
            if found is not None:
                subject = str(found)
                break
        else:
            continue
        break
    return subject_ref_of(subject)


def _tool_steps(events: Sequence[Event]) -> list[Step]:
    """Each ``tool_call`` in order with the result or error answering it (its effect that
    closes it, else the one with the same ``call_id``)."""
    by_cause: dict[str, Event] = {}
    by_call_id: dict[str, Event] = {}
    for event in events:
        if event.event in (v.TOOL_RESULT, v.TOOL_ERROR):
            if event.parent_id:
                by_cause.setdefault(event.parent_id, event)
            call_id = event.data.get("call_id")
            if call_id:
                by_call_id.setdefault(str(call_id), event)
    return [
        (e, by_cause.get(e.event_id) or by_call_id.get(_text(e.data.get("call_id"))))
        for e in events
        if e.event == v.TOOL_CALL and not _erased(e)
    ]


def _erased(event: Event) -> bool:
    """A tombstone left by forget: its type and links are kept, its content is gone."""
    return bool(event.extra.get("erased"))


def _turns(events: Sequence[Event]) -> dict[str, int]:
    """Each event's turn: the index (among the user messages kept as inputs) of the latest
    user message logged before it; events before the first one belong to turn 0."""
    turn, out = -1, {}
    for event in events:
        if event.event == v.USER_MESSAGE and not _erased(event):
            turn += 1
        out[event.event_id] = max(turn, 0)
    return out


def _turn_answers(events: Sequence[Event], turns: Mapping[str, int], count: int) -> list[Any]:
    """The last answer of each of ``count`` turns (``None`` for a turn that gave none)."""
    answers: list[Any] = [None] * count
    for event in events:
        if event.event == v.ASSISTANT_RESPONSE and not _erased(event):
            answers[turns[event.event_id]] = _text(event.data.get("text"))
    return answers


def _stubs(steps: Sequence[Step], turns: Mapping[str, int] | None) -> dict[str, list[StubCall]]:
    stubs: dict[str, list[StubCall]] = {}
    for order, (call, answer) in enumerate(steps):
        tool = _text(call.data.get("tool")) or "tool"
        args = call.data.get("args")
        stub = StubCall(args=dict(args) if isinstance(args, Mapping) else {}, order=order)
        if turns is not None:
            stub.turn = turns[call.event_id]
        if answer is not None and _erased(answer):
            stub.error = "the result was erased by forget in the source session"
        elif answer is not None and answer.event == v.TOOL_ERROR:
            stub.error = _text(answer.data.get("error")) or "tool error"
        elif answer is not None:
            stub.result = answer.data.get("result")
        else:
            stub.error = "no result recorded in the source session"
        stubs.setdefault(tool, []).append(stub)
    return stubs


def _has_cut(value: Any) -> bool:
    """Whether a string in ``value`` ends with the integrations' cut marker."""
    if isinstance(value, str):
        return _CUT_MARK.search(value) is not None
    if isinstance(value, Mapping):
        return any(_has_cut(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_cut(v) for v in value)
    return False


def _usage(events: Sequence[Event]) -> tuple[int | None, int | None]:
    added = output = 0
    known = False
    for event in events:
        usage = event.data.get("token_usage") if event.event == v.LLM_END else None
        if isinstance(usage, Mapping) and usage.get("input_tokens") is not None:
            known = True
            added += int(usage["input_tokens"]) - int(usage.get("cache_read_tokens") or 0)
            output += int(usage.get("output_tokens") or 0)
    return (added, output) if known else (None, None)


def build_case(
    events: Sequence[Event],
    *,
    agent: str,
    session: str,
    chain_head: ChainHeadRef | None = None,
    order_ids: bool = False,
    cause_category: str | None = None,
    labels: Iterable[str] = (),
    headroom: float = 2.0,
    selection: Selection | None = None,
) -> Case:
    """Turn one session's events into a :class:`Case` (personal data replaced).

    Args:
        events: the session's events, oldest first (``Ledger.replay``).
        agent / session: where they came from.
        chain_head: the agent's verified chain head.
        order_ids: also replace order-like ids.
        cause_category: e.g. ``"failure"``, ``"escalation"``; default ``"failure"`` when the
            session holds an error event, else ``"normal"``.
        labels: free labels.
        headroom: token and tool-call ceilings are the source's values times this factor.
        selection: how a sampled export drew the session; its stratum is a label value
            from the session, so it is redacted and pseudonymised like the rest.

    Raises:
        ValueError: the session has no ``user_message`` (nothing to replay).
    """
    inputs = [
        _text(e.data.get("text")) for e in events if e.event == v.USER_MESSAGE and not _erased(e)
    ]
    if not inputs and any(e.event == v.USER_MESSAGE for e in events):
        raise ValueError(
            f"session {session!r} has no user_message left to replay: forget erased them"
        )
    if not inputs:
        kinds = ", ".join(dict.fromkeys(e.event for e in events)) or "none"
        raise ValueError(
            f"session {session!r} has no user_message event, so a case has no input to replay "
            f"(its {len(events)} events are of types: {kinds}); the integration that logged "
            "it must log the user's message as a user_message event"
        )
    context = [
        {"query": e.data.get("query"), "documents": e.data.get("documents") or []}
        for e in events
        if e.event == v.RETRIEVAL
    ]
    answers = [e for e in events if e.event == v.ASSISTANT_RESPONSE and not _erased(e)]
    steps = _tool_steps(events)
    turns = _turns(events) if len(inputs) > 1 else None  # a turn of its own needs two
    stubs = _stubs(steps, turns)
    order = [
        name
        for name, _ in sorted(
            ((n, min(c.order for c in cs)) for n, cs in stubs.items()), key=lambda p: p[1]
        )
    ]
    calls = sum(len(cs) for cs in stubs.values())
    added, output = _usage(events)
    expect = Expect(
        must_call=[ToolCallCheck(tool=name) for name in order],
        must_call_in_order=ToolList(tools=order) if len(order) > 1 else None,
        max_tool_calls=Limit(value=max(round(calls * headroom), calls + 2)),
        max_added_input_tokens=None if added is None else Limit(value=round(added * headroom)),
        max_output_tokens=None if output is None else Limit(value=round(output * headroom)),
    )
    if cause_category is None:
        cause_category = "failure" if any(e.event in v.ERROR_EVENTS for e in events) else "normal"
    times = [e.timestamp for e in events if e.timestamp]
    raw: dict[str, Any] = {
        "inputs": inputs,
        "context": context,
        "tool_stubs": {n: [c.model_dump(mode="json") for c in cs] for n, cs in stubs.items()},
        "source_answer": _text(answers[-1].data.get("text")) if answers else None,
        "captured_with": captured_with(events),
    }
    if turns is not None:
        raw["turn_answers"] = _turn_answers(events, turns, len(inputs))
    # the stratum is a label value: under its own key, it is redacted and replaced like the rest
    key = selection.stratify_by if selection is not None else None
    if selection is not None and key and selection.stratum not in (NONE_STRATUM, ALL_STRATUM):
        raw["stratum"] = {key: selection.stratum}
    raw = redact(raw)  # secret-named keys, the shared rule
    pseudo = Pseudonymizer(order_ids=order_ids)
    pseudo.learn(raw)
    clean = pseudo.apply(raw)
    if clean.get("source_answer"):  # the candidate must still answer like production did
        expect.outcome.append(
            OutcomeCheck(similar_to=clean["source_answer"], threshold=DEFAULT_SIMILARITY)
        )
    cut = [i for i, text in enumerate(clean["inputs"]) if _CUT_MARK.search(text)]
    extra_labels = ["erased-events"] if any(_erased(e) for e in events) else []
    if cut:  # logged cut by the integration: the replay would not be what the user sent
        extra_labels.append("inputs-cut")
    if any(_has_cut(c.get("result")) for cs in clean["tool_stubs"].values() for c in cs):
        extra_labels.append("results-cut")  # a stub would answer with less than production got
    if selection is not None and key and "stratum" in clean:
        stratum = _text(clean.pop("stratum")[key])
        selection = selection.model_copy(update={"stratum": stratum})
    return Case(
        case_id=_case_id(agent, session),
        source_session=session,
        source_agent=agent,
        captured_at=min(times) if times else dt.datetime.now(dt.UTC).isoformat(),
        cause_category=cause_category,
        labels=list(labels) + extra_labels,
        subject_ref=_subject_ref(agent, session, events),
        chain_head=chain_head,
        selection=selection,
        lineage=source_lineage(events, steps),
        expect=expect,
        **clean,
    )


def export_cases(
    ledger: Ledger,
    *,
    agent: str,
    sessions: Sequence[str] = (),
    search: str | None = None,
    limit: int = 10,
    out: str | Path,
    force: bool = False,
    order_ids: bool = False,
    cause_category: str | None = None,
    labels: Iterable[str] = (),
    sample: SampleSpec | None = None,
    dry_run: bool = False,
) -> ExportResult:
    """Export sessions of ``agent`` as case files ``<out>/<case_id>.json``.

    Args:
        ledger: a client with read access to ``agent``.
        agent: the source agent.
        sessions: session ids to export.
        search: also export the sessions of the top ``limit`` search hits for these words.
        out: target directory (created).
        force: export even when the chain does not verify (the case records the head).
        order_ids / cause_category / labels: see :func:`build_case`.
        sample: draw the sessions instead (:func:`~agentledger.cases.draw_sample` over every
            session of the agent holding a user message); not with ``sessions``/``search``.
            Each case records its :class:`Selection`.
        dry_run: select (and verify the chain) but write nothing; ``selected`` says what
            would be exported.

    Raises:
        ChainBrokenError: the chain is broken and ``force`` is false (nothing is written).
        agentledger.client.LedgerError: the server refused or could not be reached.
        ValueError: no session given or found, or ``sample`` with ``sessions``/``search``.
    """
    if sample is not None and (sessions or search):
        raise ValueError(
            "--sample, --per-stratum and --fraction draw the sessions themselves: "
            "leave out --session and --search"
        )
    report = ledger.verify_chain(agent=agent)
    head = (
        ChainHeadRef(
            sequence_no=report.chain_head.sequence_no, chain_hash=report.chain_head.chain_hash
        )
        if report.chain_head is not None
        else None
    )
    if not report.intact and not force:
        raise ChainBrokenError(agent, report.summary, report.problems)
    result = ExportResult(chain_intact=report.intact, chain_head=head)
    strata: dict[str, str] = {}
    if sample is not None:
        scan = read_candidates(
            ledger, agent=agent, stratify_by=sample.stratify_by, since=sample.since
        )
        result.sample = draw_sample(scan.candidates, sample)
        result.without_input = scan.without_input
        strata = result.sample.stratum_of()
        wanted = result.sample.picked
        if not wanted:
            raise ValueError(
                f"no session to draw: agent {agent!r} has {len(scan.candidates)} sessions with "
                f"a user message, {result.sample.outside_window} of them outside the window"
            )
    else:
        wanted = list(dict.fromkeys(sessions))
        if search:
            for hit in ledger.search(search, agent=agent, limit=limit).results:
                if hit.event.session_id and hit.event.session_id not in wanted:
                    wanted.append(hit.event.session_id)
        if not wanted:
            raise ValueError("no session to export: give --session or a --search with hits")
    result.selected = list(wanted)
    if dry_run:
        return result
    target = Path(out)
    for session in wanted:
        events = ledger.replay(session, agent=agent, limit=MAX_SESSION_EVENTS)
        if not events:
            result.skipped[session] = "no events"
            continue
        try:
            case = build_case(
                events,
                agent=agent,
                session=session,
                chain_head=head,
                order_ids=order_ids,
                cause_category=cause_category,
                labels=labels,
                selection=None
                if result.sample is None
                else selection_of(result.sample, strata[session]),
            )
        except ValueError as error:
            result.skipped[session] = str(error)
            continue
        result.files.append(save_case(case, target / f"{case.case_id}.json"))
    return result
