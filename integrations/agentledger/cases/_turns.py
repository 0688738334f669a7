"""Turn-level replay: one turn of a multi-turn case, run on the conversation recorded before it.

By default a multi-turn case regenerates every turn, so a candidate's first answer shapes what
its second turn sees. ``--turn`` replays a turn on the recorded prefix instead: the earlier
user messages, the tool calls the source made for them with their recorded results, and the
source's answers, as the candidate's message history. :func:`turn_case` turns a case into that
single-turn case; :func:`expand_turns` applies a ``--turn`` choice to a suite.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from agentledger.cases._model import Case, CaseError, Expect, Lineage, StepEffects, StubCall

__all__ = ["TurnChoice", "expand_turns", "history_before", "parse_turn", "turn_case"]

#: ``"all"`` (regenerate every turn, the default), ``"last"``, ``"each"`` or a 1-based turn.
TurnChoice = Literal["all", "last", "each"] | int


def parse_turn(text: str) -> TurnChoice:
    """``all``, ``last``, ``each`` or a turn number from 1.

    Raises:
        ValueError: anything else.
    """
    word = text.strip().lower()
    if word in ("all", "last", "each"):
        return word  # type: ignore[return-value]
    if word.isdigit() and int(word) >= 1:
        return int(word)
    raise ValueError(f"--turn: {text!r} is not all, last, each or a turn number from 1")


def _calls_of(case: Case, turn: int) -> list[tuple[str, StubCall]]:
    calls = [(name, c) for name, cs in case.tool_stubs.items() for c in cs if c.turn == turn]
    return sorted(calls, key=lambda item: item[1].order)


def _result_text(stub: StubCall) -> str:
    if stub.error is not None:
        return f"Error: {stub.error}"
    if isinstance(stub.result, str):
        return stub.result
    return json.dumps(stub.result, ensure_ascii=False, default=str)


def history_before(case: Case, turn: int) -> list[dict[str, Any]]:
    """The recorded conversation before input ``turn`` (0-based), in OpenAI chat format: each
    earlier user message, an assistant message requesting each recorded tool call, the
    call's recorded result as a ``tool`` message, then the source's answer."""
    messages = list(case.history)
    answers = case.turn_answers or []
    for index in range(turn):
        messages.append({"role": "user", "content": case.inputs[index]})
        for name, stub in _calls_of(case, index):
            call_id = f"call_{stub.order}"
            arguments = json.dumps(stub.args, ensure_ascii=False, default=str)
            function = {"name": name, "arguments": arguments}
            messages.append(
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [{"id": call_id, "type": "function", "function": function}],
                }
            )
            result = {"role": "tool", "tool_call_id": call_id, "content": _result_text(stub)}
            messages.append(result)
        answer = answers[index] if index < len(answers) else None
        if answer:
            messages.append({"role": "assistant", "content": answer})
    return messages


def _expect_for(case: Case, turn: int, answer: str | None, tools: set[str]) -> Expect:
    """The case's checks that concern ``turn``: tool checks on tools the source called only
    in other turns are dropped; the exported similarity to the session's answer becomes
    similarity to this turn's answer; other answer checks stay on the last turn only."""
    expect = case.expect
    elsewhere = {
        name
        for name, calls in case.tool_stubs.items()
        if name not in tools and any(c.turn is not None for c in calls)
    }
    last = turn == len(case.inputs) - 1
    outcome = []
    for check in expect.outcome:
        if check.similar_to is not None and check.similar_to == case.source_answer:
            if answer:
                outcome.append(check.model_copy(update={"similar_to": answer}))
        elif last:
            outcome.append(check)
    in_order = None
    if expect.must_call_in_order is not None:
        kept = [t for t in expect.must_call_in_order.tools if t not in elsewhere]
        if len(kept) > 1:
            in_order = expect.must_call_in_order.model_copy(update={"tools": kept})
    return expect.model_copy(
        update={
            "outcome": outcome,
            "must_call": [c for c in expect.must_call if c.tool not in elsewhere],
            "must_call_in_order": in_order,
        }
    )


def _lineage_for(case: Case, turn: int, renumber: dict[int, int]) -> Lineage | None:
    """The source lineage of the last turn's steps, renumbered; ``None`` for an earlier turn
    (the recorded lineage ends at the session's answer, not at that turn's)."""
    if case.lineage is None or turn != len(case.inputs) - 1:
        return None
    steps = [
        StepEffects(
            step=renumber[s.step],
            steps=[renumber[n] for n in s.steps if n in renumber],
            answer=s.answer,
        )
        for s in case.lineage.steps
        if s.step in renumber
    ]
    return Lineage(steps=steps, answer_from_input=case.lineage.answer_from_input)


def turn_case(case: Case, turn: int, source: str | None = None) -> Case:
    """Input ``turn`` (0-based) of ``case`` as a single-turn case on the recorded prefix.

    A single-input case is returned as it is. ``source`` names the case in errors (its file;
    default its id).

    Raises:
        CaseError: the case has no such turn, or was exported without its turns (a file
            written before case format 3: export it again).
    """
    count = len(case.inputs)
    where = source or case.case_id
    if not 0 <= turn < count:
        raise CaseError(where, "inputs", f"has {count} turn(s), no turn {turn + 1}")
    if count == 1:
        return case
    if case.turn_answers is None:
        raise CaseError(
            where,
            "turn_answers",
            "a multi-turn case needs its turns (case format 3) to replay one turn: export it again",
        )
    calls = _calls_of(case, turn)
    renumber = {stub.order: index for index, (_, stub) in enumerate(calls)}
    stubs: dict[str, list[StubCall]] = {}
    for name, stub in calls:
        stubs.setdefault(name, []).append(
            stub.model_copy(update={"order": renumber[stub.order], "turn": None})
        )
    answer = case.turn_answers[turn]
    suffix = f".t{turn + 1}"
    return case.model_copy(
        update={
            "case_id": case.case_id[: 128 - len(suffix)] + suffix,
            "labels": [*case.labels, f"turn-{turn + 1}-of-{count}"],
            "inputs": [case.inputs[turn]],
            "history": history_before(case, turn),
            "turn_answers": None,
            "tool_stubs": stubs,
            "source_answer": answer,
            "lineage": _lineage_for(case, turn, renumber),
            "expect": _expect_for(case, turn, answer, {name for name, _ in calls}),
        }
    )


def expand_turns(cases: Sequence[tuple[Path, Case]], choice: TurnChoice) -> list[tuple[Path, Case]]:
    """Apply a ``--turn`` choice to a suite: ``all`` leaves it as it is; ``last`` replays each
    case's last turn; ``each`` every turn as a case of its own; a number that turn (1-based).

    Raises:
        CaseError: a case has fewer turns than the number asked for, or no recorded turns.
    """
    if choice == "all":
        return list(cases)
    out: list[tuple[Path, Case]] = []
    for path, case in cases:
        count = len(case.inputs)
        if choice == "last":
            wanted = [count - 1]
        elif choice == "each":
            wanted = list(range(count))
        else:
            wanted = [int(choice) - 1]
        out.extend((path, turn_case(case, turn, str(path))) for turn in wanted)
    return out
