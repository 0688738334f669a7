"""Run cases against a candidate agent and check each run from the ledger (``cases run``).

Stub tools answer from the case, the candidate is built by ``factory(stub_tools)``, each run is
logged with idempotency keys and read back; the steps are in ``docs/design/cases.md``.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import uuid_utils
from langchain_core.language_models import BaseLanguageModel
from langchain_core.tools import BaseTool

from agentledger.cases._checks import CheckResult, Embedder, EmbedOption, RunCheck, check, cosine
from agentledger.cases._factory import (
    SpecError,
    build_agent,
    check_overrides,
    declares,
    load_object,
)
from agentledger.cases._gate import GateOptions, SimilarityStats, evaluate_gates
from agentledger.cases._lineage import run_effects
from agentledger.cases._model import Case
from agentledger.cases._recorded_tools import recorded_tools
from agentledger.cases._report import CaseReport, SuiteReport
from agentledger.cases._stubs import StubRegistry, stub_tools
from agentledger.cases._target import RunTarget, ledger_target
from agentledger.client import EventRef, Ledger, resolve_ci_run_id
from agentledger.integrations.langchain import LedgerCallbackHandler

__all__ = ["RunTarget", "SpecError", "ledger_target", "load_object", "run_suite"]

#: Agent name the runs are logged under (``--agent``).

#: ``custom_event`` name logged when a run has finished (answered or crashed): a re-run with the
#: same run id reads such runs back instead of running them again.
RUN_COMPLETE = "case_run_complete"

#: Environment variables naming a CI pipeline run, in the order they are tried for the default
#: run id (a retried job keeps its pipeline's id).
CI_RUN_ID_VARIABLES = (
    "GITHUB_RUN_ID",
    "CI_PIPELINE_ID",
    "BUILDKITE_BUILD_ID",
    "CIRCLE_WORKFLOW_ID",
)

_RUN_ID_CHARS = re.compile(r"[^A-Za-z0-9._-]+")

Progress = Callable[[str, int], None]


class _KeyedLog:
    """The handler's ``log`` with idempotency keys ``<prefix>/<step>`` (step counted); causes
    (``caused_by``) and the enclosing step (``scope_id``) are passed on, so a run's causal
    edges reach the ledger as the integration gives them."""

    def __init__(self, ledger: Ledger, prefix: str) -> None:
        self._ledger = ledger
        self._prefix = prefix
        self._step = 0
        self._lock = threading.Lock()

    def log(
        self,
        event: str,
        data: dict[str, Any],
        *,
        session_id: str | None = None,
        parent_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        caused_by: Iterable[str | tuple[str, str]] = (),
        scope_id: str | None = None,
    ) -> EventRef:
        with self._lock:
            step = self._step
            self._step += 1
        return self._ledger.log(
            event,
            data,
            session_id=session_id,
            parent_id=parent_id,
            metadata=metadata,
            idempotency_key=f"{self._prefix}/{step}",
            caused_by=caused_by,
            scope_id=scope_id,
        )


def suite_run_id(run_id: str) -> str:
    """``run_id`` cleaned to the characters session ids and idempotency keys take
    (letters, digits, ``.``, ``_``, ``-``; at most 64).

    Raises:
        SpecError: nothing usable is left.
    """
    cleaned = _RUN_ID_CHARS.sub("-", run_id).strip("-")[:64]
    if not cleaned:
        raise SpecError(f"--run-id: {run_id!r} has no usable characters (letters, digits . _ -)")
    return cleaned


def default_run_id(*parts: str) -> str | None:
    """The CI's pipeline run id (``GITHUB_RUN_ID``, ``CI_PIPELINE_ID``...:
    :func:`agentledger.client.resolve_ci_run_id`) joined with a hash of ``parts`` (the factory
    and the agent name, so two jobs of one pipeline that run different candidates never share
    runs); ``None`` outside CI."""
    pipeline = resolve_ci_run_id()
    if pipeline is None:
        return None
    digest = hashlib.sha256("\0".join(parts).encode()).hexdigest()[:8]
    return f"{pipeline}-{digest}"


@dataclass
class _Run:
    """One run of one case: where it is logged and how it went."""

    session_id: str
    registry: StubRegistry | None
    duration_ms: float
    error: str | None
    reused: bool = False


def _stored_run(target: RunTarget, session_id: str) -> tuple[list[Any], dict[str, Any] | None]:
    """The stored events of a run (without its completion mark) and the mark's data, if any."""
    events = target.ledger.replay(session_id, limit=10_000)
    mark = next(
        (
            e
            for e in events
            if e.event == "custom_event" and (e.data or {}).get("name") == RUN_COMPLETE
        ),
        None,
    )
    kept = [e for e in events if e is not mark]
    return kept, (mark.data.get("data") or {}) if mark is not None else None


def run_once(
    case: Case,
    *,
    case_dir: Path,
    factory: Callable[..., Any],
    tools: Sequence[BaseTool],
    target: RunTarget,
    suite_id: str,
    run: int,
    attempt: int = 1,
    overrides: Mapping[str, Any] | None = None,
) -> tuple[str, StubRegistry, float, str | None]:
    """One run of one case; returns ``(session_id, registry, duration_ms, error)``.

    The run ends with a ``custom_event`` :data:`RUN_COMPLETE` (keyed like the run's events),
    so a later suite with the same run id knows the run finished."""
    overrides = overrides or {}
    session_id = _session_id(suite_id, case, run, attempt)
    registry = StubRegistry(case, case_dir, passthrough_urls=(target.url,))
    prefix = f"{suite_id}/{run}/{case.case_id}" + (f"/a{attempt}" if attempt > 1 else "")
    keyed = _KeyedLog(target.ledger, prefix)
    # on every event the handler logs and on the closing mark: the dashboard links a run to
    # the production session it replays through them
    run_metadata = {
        "case_id": case.case_id,
        "case_run": run,
        "suite_id": suite_id,
        "source_session": case.source_session,
        "source_agent": case.source_agent,
    }
    handler = LedgerCallbackHandler(keyed, session_id=session_id, metadata=run_metadata)
    error: str | None = None
    started = time.perf_counter()
    try:
        logging = {"ledger": keyed, "session_id": session_id}
        # without real tools, the definitions the source's model was offered stand in
        offered = list(tools) or recorded_tools(case.captured_with.get("tool_schemas"))
        agent = build_agent(factory, stub_tools(offered, registry), case, overrides, logging)
        own_log = declares(factory, "ledger")
        messages: list[Any] = []
        bare = isinstance(agent, BaseLanguageModel)  # a chat model takes the messages as such
        if bare or own_log:  # and has nowhere else to take its system prompt from
            prompt = overrides.get("system_prompt") or case.captured_with.get("system_prompt")
            if isinstance(prompt, str) and prompt:
                messages.append({"role": "system", "content": prompt})
        messages.extend(dict(m) for m in case.history)  # a turn replayed on its recorded prefix
        for text in case.inputs:
            messages.append({"role": "user", "content": text})
            config: Any = {"callbacks": [handler]}
            if bare:
                messages.append(agent.invoke(list(messages), config=config))
                continue
            if own_log or not hasattr(agent, "invoke"):  # a plain callable: messages in
                reply = agent(list(messages))
                if isinstance(reply, list):
                    messages = list(reply)
                elif reply is not None:
                    messages.append({"role": "assistant", "content": str(reply)})
                continue
            result = agent.invoke({"messages": messages}, config=config)
            if isinstance(result, dict) and isinstance(result.get("messages"), list):
                messages = list(result["messages"])
    except Exception as exc:  # the candidate crashed: a failed run, not a crashed suite
        error = f"{type(exc).__name__}: {exc}"
    duration_ms = (time.perf_counter() - started) * 1000.0
    target.ledger.log(
        "custom_event",
        {
            "name": RUN_COMPLETE,
            "data": {
                "error": error,
                "duration_ms": round(duration_ms, 3),
                "stub_failures": list(registry.failures),
            },
        },
        session_id=session_id,
        metadata=run_metadata,
        idempotency_key=f"{prefix}/complete",
    )
    return session_id, registry, duration_ms, error


def _session_id(suite_id: str, case: Case, run: int, attempt: int) -> str:
    suffix = f"-a{attempt}" if attempt > 1 else ""
    return f"cases-{suite_id}-{case.case_id}-r{run}{suffix}"[:255]


def _resume_or_run(
    case: Case,
    path: Path,
    *,
    factory: Callable[..., Any],
    tools: Sequence[BaseTool],
    target: RunTarget,
    suite_id: str,
    run: int,
    resume: bool,
    overrides: Mapping[str, Any],
) -> _Run:
    """Run ``case`` once, or, with ``resume``, read back a finished run of the same run id.

    A run of that id that never finished (the job died) is left as it is and the case runs
    again as the next attempt, in a session of its own."""
    attempt = 1
    while resume:
        session_id = _session_id(suite_id, case, run, attempt)
        events, mark = _stored_run(target, session_id)
        if mark is not None:
            duration = mark.get("duration_ms")
            return _Run(
                session_id,
                None,
                float(duration) if isinstance(duration, int | float) else 0.0,
                mark.get("error") if isinstance(mark.get("error"), str) else None,
                reused=True,
            )
        if not events:
            break
        attempt += 1
    session_id, registry, duration_ms, error = run_once(
        case,
        case_dir=path.parent,
        factory=factory,
        tools=tools,
        target=target,
        suite_id=suite_id,
        run=run,
        attempt=attempt,
        overrides=overrides,
    )
    return _Run(session_id, registry, duration_ms, error)


def _score(
    embed: Embedder, reference: str, answer: str, memo: dict[tuple[str, str], float]
) -> float:
    key = (reference, answer)
    if key not in memo:
        first, second = embed([reference, answer])
        memo[key] = cosine(first, second)
    return memo[key]


def run_suite(
    cases: Sequence[tuple[Path, Case]],
    *,
    factory: Callable[..., Any],
    tools: Sequence[BaseTool],
    target: RunTarget,
    runs: int = 1,
    default_min_pass_rate: float | None = None,
    embed: EmbedOption = "auto",
    progress: Progress | None = None,
    gates: GateOptions | None = None,
    run_id: str | None = None,
    overrides: Mapping[str, Any] | None = None,
    embedder_name: str = "custom",
) -> SuiteReport:
    """Run every case ``runs`` times and check each run from the stored events.

    Args:
        cases: ``(file, case)`` pairs (:func:`load_cases`).
        factory: ``factory(stub_tools) -> runnable`` (see the module docstring).
        tools: the real tools (their names and schemas are copied; never executed); empty:
            each case's recorded tool definitions (``captured_with.tool_schemas``) stand in.
        target: where runs are logged (:func:`ledger_target`).
        runs: runs per case (>= 1).
        default_min_pass_rate: rate required of non-safety checks that set none.
        embed: embeddings for ``similar_to`` checks and the similarity of each answer to the
            case's source answer: a function, ``"auto"`` (the configured endpoint, else the
            offline model; with neither, similarity checks and gates fail saying why) or
            ``None`` (similarity turned off).
        progress: called with ``(case_id, runs_done)`` after each run.
        gates: corpus-level gates (:class:`~agentledger.cases._gate.GateOptions`).
        run_id: names the suite's sessions and idempotency keys (``--run-id``, or
            :func:`default_run_id` in CI); runs of this id that already finished in the target
            ledger are read back, not re-run, so a retried CI job stores nothing twice.
            ``None``: a fresh id.
        overrides: keywords for the factory (:data:`OVERRIDES`: a new system prompt, model
            or temperature); each must be a parameter of the factory.
        embedder_name: what ``embed`` is, for the report (when it is a function).

    Raises:
        ValueError: ``runs < 1``.
    """
    if runs < 1:
        raise ValueError("runs must be >= 1")
    overrides = dict(overrides or {})
    check_overrides(factory, overrides)
    if run_id is not None:
        suite_id, resume = suite_run_id(run_id), True
        if overrides:  # another prompt or model is another candidate: never its runs
            text = json.dumps(overrides, sort_keys=True, default=str)
            suite_id += "-" + hashlib.sha256(text.encode()).hexdigest()[:8]
    else:
        suite_id, resume = str(uuid_utils.uuid7()).replace("-", "")[-12:], False
    # resolved once: ``embed_fn`` scores the answers, ``check_embed`` goes to check() (still
    # "auto" when nothing is available, so each similar_to check fails saying why)
    embed_fn: Embedder | None = None
    check_embed: EmbedOption = embed
    reason = ""
    if embed is None:
        embedder_name = "off"
    elif embed == "auto":
        from agentledger.cases._embed import default_choice

        choice = default_choice()
        embedder_name, embed_fn, reason = choice.name, choice.embed, choice.reason
        check_embed = embed_fn or "auto"
    else:
        embed_fn = embed
    # a temporary embedded ledger is gone when the suite ends: nothing to link to
    ledger_url = target.url if target.kept else None
    report = SuiteReport(suite_id, runs, ledger_url=ledger_url, agent=target.ledger.agent)
    similarity = SimilarityStats(embedder_name) if embed is not None else None
    memo: dict[tuple[str, str], float] = {}
    finish_reasons: list[str | None] = []
    refusals: list[bool | None] = []
    done = 0
    ran: list[tuple[Case, list[_Run], CaseReport]] = []
    for path, case in cases:
        case_report = CaseReport(
            case.case_id,
            str(path),
            source_answer=case.source_answer,
            source_session=case.source_session,
            source_agent=case.source_agent,
        )
        pending: list[_Run] = []
        ran.append((case, pending, case_report))
        for run in range(1, runs + 1):
            pending.append(
                _resume_or_run(
                    case,
                    path,
                    factory=factory,
                    tools=tools,
                    target=target,
                    suite_id=suite_id,
                    run=run,
                    resume=resume,
                    overrides=overrides,
                )
            )
            done += 1
            if progress is not None:
                progress(case.case_id, done)
    target.ledger.flush(timeout_s=30.0)  # once: the runs are read back after all have run
    for case, pending, case_report in ran:
        for number, item in enumerate(pending, start=1):
            events, mark = _stored_run(target, item.session_id)
            stub_failures = (
                list(item.registry.failures)
                if item.registry is not None
                else [str(f) for f in (mark or {}).get("stub_failures") or []]
            )
            result = check(
                case,
                events,
                stub_failures=stub_failures,
                duration_ms=item.duration_ms,
                embed=check_embed,
                default_min_pass_rate=default_min_pass_rate,
            )
            result.error = item.error
            result.checks.append(
                CheckResult(
                    "agent:completed",
                    item.error is None,
                    "the agent run finishes without an exception",
                    item.error or "finished",
                    1.0,
                    True,
                )
            )
            if result.divergence is not None and result.divergence.event_id is not None:
                effects = run_effects(target.ledger, events, result.divergence.event_id)
                result.divergence = replace(result.divergence, run_effects=effects)
            result.extra["session_id"] = item.session_id
            result.extra["events"] = len(events)
            result.extra["reused"] = item.reused
            finish_reasons.append(result.extra.get("finish_reason"))
            refusals.append(result.extra["refused"] if result.answer is not None else None)
            recorded = [m for m in case.captured_with.get("models") or [] if isinstance(m, str)]
            result.extra["model_changed"] = bool(
                recorded and result.extra["models"] and result.extra["models"] != recorded
            )
            if similarity is not None and case.source_answer:
                if embed_fn is None:
                    similarity.unscored.append((case.case_id, number, reason))
                elif result.answer is None:
                    similarity.unscored.append((case.case_id, number, "the run gave no answer"))
                else:
                    try:
                        score = _score(embed_fn, case.source_answer, result.answer, memo)
                    except Exception as error:  # the endpoint failed: unscored, never skipped
                        similarity.unscored.append(
                            (case.case_id, number, f"embeddings failed: {error}")
                        )
                    else:
                        similarity.scores.append((case.case_id, number, score))
                        result.extra["similarity"] = score
            case_report.add(result)
        report.cases.append(case_report)
    report.similarity = similarity
    report.gates = evaluate_gates(gates or GateOptions(), similarity, finish_reasons, refusals)
    return report


__all__ += [
    "RunCheck",
    "check_overrides",
    "default_run_id",
    "run_once",
    "suite_run_id",
]
