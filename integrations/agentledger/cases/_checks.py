"""``check(case, events)``: evaluate a case's expectations against one run's stored events.

Framework-neutral (it reads only :mod:`agentledger.protocol.vocabulary` events, objects or wire
dicts); token ceilings count added input, input minus cache reads (``docs/design/cases.md``).
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

from agentledger.cases._calls import as_args, call_text, match, short
from agentledger.cases._divergence import Divergence, first_divergence
from agentledger.cases._model import (
    Case,
    Limit,
    OutcomeCheck,
    ToolCallCheck,
)
from agentledger.cases._run_facts import (
    TRUNCATED_REASONS,
    final_finish,
    looks_like_refusal,
    models_of,
)
from agentledger.client import vocabulary as v

__all__ = [
    "TRUNCATED_REASONS",
    "CheckResult",
    "Divergence",
    "Embedder",
    "RunCheck",
    "check",
    "cosine",
    "looks_like_refusal",
    "normalise_events",
]

#: Embeds texts for ``similar_to``: a list of strings in, one vector per string out.
Embedder = Callable[[Sequence[str]], Sequence[Sequence[float]]]

#: ``embed=`` of :func:`check`: an embedder, ``"auto"`` (the configured endpoint, else the
#: offline model, else the check fails saying why) or ``None`` (similarity turned off).
EmbedOption = Embedder | Literal["auto"] | None


@dataclass(frozen=True)
class CheckResult:
    """One expectation evaluated on one run.

    Attributes:
        check_id: stable id, e.g. ``"must_call:verify_duplicate_charge"``,
            ``"outcome[0]:contains"``, ``"max_tool_calls"``, ``"stubs:no_unexpected_calls"``.
        passed: whether this run met it (``None``: not evaluated, e.g. similarity turned
            off with ``--no-similarity``; a check that cannot be computed fails instead).
        expected / actual: short human-readable texts.
        min_pass_rate: the rate the suite gate requires (0..1).
        safety: a safety check (default rate 1.0).
        score: the measured value of a scored check (the similarity), else ``None``.
    """

    check_id: str
    passed: bool | None
    expected: str
    actual: str
    min_pass_rate: float
    safety: bool
    score: float | None = None


@dataclass
class RunCheck:
    """All checks of one run, the path it took and where it left the source's path."""

    case_id: str
    checks: list[CheckResult]
    path: list[str]
    divergence: Divergence | None
    answer: str | None
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        """No check failed (skipped ones do not count) and the agent did not crash."""
        return self.error is None and all(c.passed is not False for c in self.checks)

    @property
    def failures(self) -> list[CheckResult]:
        """The checks that failed."""
        return [c for c in self.checks if c.passed is False]


class _Ev(NamedTuple):
    event: str
    data: dict[str, Any]
    event_id: str
    timestamp: str
    sequence_no: int


def normalise_events(events: Iterable[Any]) -> list[_Ev]:
    """Events (objects with ``.event``/``.data`` or wire dicts) in ``sequence_no`` order."""
    out: list[_Ev] = []
    append = out.append
    for index, e in enumerate(events):
        if type(e) is dict:  # the wire form: the fast path
            data = e.get("data")
            seq = e.get("sequence_no")
            event = e.get("event")
            event_id = e.get("event_id")
            timestamp = e.get("timestamp")
        else:
            get: Callable[..., Any] = (
                e.get if isinstance(e, Mapping) else functools.partial(_attr, e)
            )
            data, seq, event = get("data"), get("sequence_no"), get("event")
            event_id, timestamp = get("event_id"), get("timestamp")
        append(
            _Ev(
                event if type(event) is str else str(event),
                data if type(data) is dict else ({} if data is None else {"value": data}),
                str(event_id or index),
                timestamp or "",
                seq if type(seq) is int else index,
            )
        )
    out.sort(key=lambda e: e.sequence_no)
    return out


def _attr(obj: Any, name: str, default: Any = None) -> Any:
    return getattr(obj, name, default)


def _json_path(document: Any, path: str) -> tuple[bool, Any]:
    """``$.a.b[0]['c d']`` -> (found, value)."""
    tokens = re.findall(r"\.([A-Za-z_][\w-]*)|\[(\d+)\]|\[['\"](.+?)['\"]\]", path[1:])
    rest = re.sub(r"\.([A-Za-z_][\w-]*)|\[(\d+)\]|\[['\"](.+?)['\"]\]", "", path[1:])
    if rest:
        return False, f"unsupported json_path syntax {rest!r}"
    node = document
    for name, index, quoted in tokens:
        key: Any = name or quoted
        if index:
            if not isinstance(node, list) or int(index) >= len(node):
                return False, None
            node = node[int(index)]
        elif isinstance(node, Mapping) and key in node:
            node = node[key]
        else:
            return False, None
    return True, node


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity of two vectors (0.0 when either is all zeros)."""
    dot = sum(x * y for x, y in zip(a, b, strict=False))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


class _Rates:
    def __init__(self, case: Case, default_rate: float | None) -> None:
        self.default = case.expect.min_pass_rate if default_rate is None else default_rate

    def rate(self, own: float | None, safety: bool) -> float:
        if own is not None:
            return own
        return 1.0 if safety else self.default


def _outcome(
    index: int, spec: OutcomeCheck, answer: str | None, embed: EmbedOption, rates: _Rates
) -> CheckResult:
    kind = spec.kind
    check_id = f"outcome[{index}]:{kind}"
    rate = rates.rate(spec.min_pass_rate, spec.safety)
    text = answer or ""
    folded = text.lower() if spec.ignore_case else text

    def result(passed: bool | None, expected: str, actual: str) -> CheckResult:
        return CheckResult(check_id, passed, expected, actual, rate, spec.safety)

    if answer is None:
        return result(False, f"{kind} check of the final answer", "no assistant_response")
    if spec.contains is not None:
        needle = spec.contains.lower() if spec.ignore_case else spec.contains
        return result(needle in folded, f"answer contains {spec.contains!r}", short(text))
    if spec.not_contains is not None:
        needle = spec.not_contains.lower() if spec.ignore_case else spec.not_contains
        return result(
            needle not in folded, f"answer does not contain {spec.not_contains!r}", short(text)
        )
    if spec.regex is not None:
        flags = re.IGNORECASE if spec.ignore_case else 0
        found = re.search(spec.regex, text, flags) is not None
        return result(found, f"answer matches /{spec.regex}/", short(text))
    if spec.json_path is not None:
        try:
            document = json.loads(text)
        except ValueError:
            return result(False, f"{spec.json_path} == {short(spec.equals)}", "answer is not JSON")
        found, value = _json_path(document, spec.json_path)
        actual = short(value) if found else f"{spec.json_path} not found"
        return result(
            found and match(spec.equals, value),
            f"{spec.json_path} == {short(spec.equals)}",
            actual,
        )
    reference = spec.similar_to or ""
    expected = f"similarity to {short(reference, 60)!r} >= {spec.threshold}"
    if embed is None:
        return result(None, expected, "not evaluated: similarity checks turned off")
    if embed == "auto":
        from agentledger.cases._embed import default_choice

        choice = default_choice()
        if choice.embed is None:
            return result(False, expected, f"cannot compute: {choice.reason}")
        embed = choice.embed
    try:
        first, second = embed([reference, text])
        score = cosine(first, second)
    except Exception as error:  # an endpoint down or a bad answer: the check cannot pass
        return result(False, expected, f"cannot compute: embeddings failed: {error}")
    return CheckResult(
        check_id,
        score >= spec.threshold,
        expected,
        f"similarity {score:.3f}",
        rate,
        spec.safety,
        score=score,
    )


def _limit(
    check_id: str, limit: Limit | None, actual: float, note: str, rates: _Rates
) -> CheckResult | None:
    if limit is None:
        return None
    shown = f"{actual:,.0f}" if float(actual).is_integer() else f"{actual:,.1f}"
    return CheckResult(
        check_id,
        actual <= limit.value,
        f"<= {limit.value:,.0f}",
        shown + note,
        rates.rate(limit.min_pass_rate, False),
        False,
    )


def _duration_ms(events: Sequence[_Ev]) -> float:
    stamps: list[dt.datetime] = []
    for e in events:
        try:
            stamps.append(dt.datetime.fromisoformat(e.timestamp.replace("Z", "+00:00")))
        except ValueError:
            continue
    if len(stamps) < 2:
        return 0.0
    return (max(stamps) - min(stamps)).total_seconds() * 1000.0


def check(
    case: Case,
    events: Iterable[Any],
    *,
    stub_failures: Sequence[str] = (),
    duration_ms: float | None = None,
    embed: EmbedOption = "auto",
    default_min_pass_rate: float | None = None,
) -> RunCheck:
    """Evaluate every expectation of ``case`` against the events of one run.

    Args:
        case: the case.
        events: the run's events (any framework using the shared vocabulary), any order.
        stub_failures: unexpected tool calls recorded by the stub registry (each a text);
            they fail the safety check ``stubs:no_unexpected_calls``. ``check`` also fails it
            for a ``tool_call`` of a tool the case has no stub for when the case has stubs.
        duration_ms: wall time of the run (ms); default: last minus first event timestamp.
        embed: embeddings for ``similar_to``: a function, ``"auto"`` (the configured endpoint,
            else the offline model; with neither those checks fail, saying why) or ``None``
            (similarity turned off: those checks are not evaluated).
        default_min_pass_rate: overrides ``case.expect.min_pass_rate`` for non-safety checks.

    Returns:
        :class:`RunCheck` with one :class:`CheckResult` per expectation, the path taken
        (``["lookup_order(order_id=…)", ..., "answer"]``) and the first divergent step.
    """
    evs = normalise_events(events)
    expect = case.expect
    rates = _Rates(case, default_min_pass_rate)
    call_events = [e for e in evs if e.event == v.TOOL_CALL]
    calls = [(str(e.data.get("tool") or "tool"), as_args(e.data.get("args"))) for e in call_events]
    answers = [e for e in evs if e.event == v.ASSISTANT_RESPONSE]
    answer = str(answers[-1].data.get("text") or "") if answers else None
    names = [name for name, _ in calls]
    results: list[CheckResult] = []

    for index, spec in enumerate(expect.outcome):
        results.append(_outcome(index, spec, answer, embed, rates))

    for must in expect.must_call:
        results.append(_must_call(must, calls, rates))

    if expect.must_call_in_order is not None:
        wanted = expect.must_call_in_order.tools
        position = 0
        for name in names:
            if position < len(wanted) and name == wanted[position]:
                position += 1
        missing = "" if position == len(wanted) else f" (missing from {wanted[position]!r} on)"
        results.append(
            CheckResult(
                "must_call_in_order",
                position == len(wanted),
                " -> ".join(wanted),
                (" -> ".join(names) or "no tool calls") + missing,
                rates.rate(expect.must_call_in_order.min_pass_rate, True),
                True,
            )
        )

    if expect.must_not_call is not None:
        called = [n for n in expect.must_not_call.tools if n in names]
        results.append(
            CheckResult(
                "must_not_call",
                not called,
                "never: " + ", ".join(expect.must_not_call.tools),
                ("called " + ", ".join(called)) if called else "not called",
                rates.rate(expect.must_not_call.min_pass_rate, True),
                True,
            )
        )

    added = output = 0
    unknown = 0
    for e in evs:
        if e.event != v.LLM_END:
            continue
        usage = e.data.get("token_usage")
        if not isinstance(usage, Mapping) or usage.get("input_tokens") is None:
            unknown += 1
            continue
        added += int(usage.get("input_tokens") or 0) - int(usage.get("cache_read_tokens") or 0)
        output += int(usage.get("output_tokens") or 0)
    note = f" ({unknown} model calls with unknown usage)" if unknown else ""
    measured_calls = sum(1 for e in evs if e.event == v.LLM_END) - unknown
    measured = duration_ms
    if measured is None:
        measured = _duration_ms(evs) if expect.max_duration_ms is not None else 0.0
    for limit_result in (
        _tokens(
            "max_added_input_tokens",
            expect.max_added_input_tokens,
            added,
            note,
            rates,
            measured_calls,
        ),
        _tokens("max_output_tokens", expect.max_output_tokens, output, note, rates, measured_calls),
        _limit("max_tool_calls", expect.max_tool_calls, len(calls), "", rates),
        _limit("max_duration_ms", expect.max_duration_ms, measured, "", rates),
    ):
        if limit_result is not None:
            results.append(limit_result)

    unexpected = list(stub_failures)
    if case.tool_stubs and not stub_failures:
        known = set(case.tool_stubs) | set(case.cassette.tools if case.cassette else ())
        unexpected = [call_text(n, a) for n, a in calls if n not in known]
    if case.tool_stubs or stub_failures:
        results.append(
            CheckResult(
                "stubs:no_unexpected_calls",
                not unexpected,
                "only tool calls the source session made",
                "; ".join(unexpected) if unexpected else "none unexpected",
                1.0,
                True,
            )
        )

    final_reason, truncated = final_finish(evs, answers[-1] if answers else None)
    model_calls = sum(1 for e in evs if e.event == v.LLM_END)
    if model_calls and not expect.allow_truncation:
        results.append(_truncation(final_reason, truncated))

    path = [call_text(n, a) for n, a in calls] + (["answer"] if answer is not None else [])
    run = RunCheck(
        case_id=case.case_id,
        checks=results,
        path=path,
        divergence=first_divergence(
            case,
            calls,
            [e.event_id for e in call_events],
            (answer, answers[-1].event_id) if answer is not None else None,
        ),
        answer=answer,
    )
    run.extra["finish_reason"] = final_reason
    run.extra["truncated_calls"] = truncated
    run.extra["model_calls"] = model_calls
    run.extra["models"], run.extra["served_models"] = models_of(evs)
    run.extra["refused"] = answer is not None and looks_like_refusal(answer)
    return run


def _truncation(final_reason: str | None, truncated: int) -> CheckResult:
    """``answer:not_truncated``, a safety check: the final answer's model call did not stop at
    a token limit. Unknown when the run logged no ``finish_reason`` (not evaluated)."""
    expected = "the final answer is complete (finish_reason not a token limit)"
    if final_reason is None:
        return CheckResult(
            "answer:not_truncated", None, expected, "finish_reason not recorded", 1.0, True
        )
    cut = final_reason.lower() in TRUNCATED_REASONS
    actual = f"finish_reason {final_reason}" + (
        f" ({truncated} model calls of the run stopped at a token limit)" if truncated else ""
    )
    return CheckResult("answer:not_truncated", not cut, expected, actual, 1.0, True)


def _tokens(
    check_id: str,
    limit: Limit | None,
    actual: float,
    note: str,
    rates: _Rates,
    measured_calls: int,
) -> CheckResult | None:
    """A token ceiling; it fails when no model call of the run reported its usage (nothing
    was measured, so nothing can be said to be under the ceiling)."""
    if limit is None:
        return None
    if measured_calls == 0:
        return CheckResult(
            check_id,
            False,
            f"<= {limit.value:,.0f}",
            "not measured: no model call of the run reported token usage" + note,
            rates.rate(limit.min_pass_rate, False),
            False,
        )
    return _limit(check_id, limit, actual, note, rates)


def _must_call(
    must: ToolCallCheck, calls: Sequence[tuple[str, dict[str, Any]]], rates: _Rates
) -> CheckResult:
    same_tool = [args for name, args in calls if name == must.tool]
    wanted = must.args or {}
    ok = any(all(match(m, args.get(k)) for k, m in wanted.items()) for args in same_tool)
    expected = call_text(must.tool, wanted) if wanted else f"{must.tool} called"
    if not same_tool:
        actual = f"{must.tool} never called"
    elif ok:
        actual = f"called {len(same_tool)}x"
    else:
        actual = "called with " + "; ".join(call_text(must.tool, a) for a in same_tool)
    check_id = f"must_call:{must.tool}"
    return CheckResult(check_id, ok, expected, actual, rates.rate(must.min_pass_rate, True), True)
