"""Run cases against a candidate agent and check each run from the ledger (``cases run``).

Stub tools answer from the case, the candidate is built by ``factory(stub_tools)``, each run is
logged with idempotency keys and read back; the steps are in ``docs/design/cases.md``.
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import uuid_utils
from langchain_core.tools import BaseTool

from agentledger.cases._checks import CheckResult, Embedder, RunCheck, check
from agentledger.cases._lineage import run_effects
from agentledger.cases._model import Case
from agentledger.cases._report import CaseReport, SuiteReport
from agentledger.cases._stubs import StubRegistry, stub_tools
from agentledger.client import EventRef, Ledger, resolve_api_key
from agentledger.integrations.langchain import LedgerCallbackHandler
from agentledger.protocol import LedgerError
from agentledger.testing import EmbeddedServer

__all__ = ["RunTarget", "SpecError", "ledger_target", "load_object", "run_suite"]

#: Agent name the runs are logged under (``--agent``).
DEFAULT_RUN_AGENT = "agentledger-cases"

Progress = Callable[[str, int], None]


class SpecError(LedgerError, ValueError):
    """A ``module:attribute`` spec that cannot be loaded (bad input: exit code 2)."""


def load_object(spec: str, what: str) -> Any:
    """Import ``module:attribute`` (the current directory is importable, as with pytest).

    Args:
        spec: ``"pkg.module:name"`` (``name`` may be dotted).
        what: the option it came from, for the error (``"--factory"``).

    Raises:
        SpecError: bad syntax, module not importable or attribute missing.
    """
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise SpecError(f"{what}: expected module:attribute, got {spec!r}")
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        target: Any = importlib.import_module(module_name)
    except Exception as error:
        raise SpecError(f"{what}: cannot import {module_name!r}: {error}") from error
    for part in attribute.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise SpecError(f"{what}: {module_name!r} has no attribute {attribute!r}") from None
    return target


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


@dataclass
class RunTarget:
    """Where runs are logged: a ledger client and its URL."""

    ledger: Ledger
    url: str


@contextmanager
def ledger_target(
    url: str | None = None, api_key: str | None = None, agent: str = DEFAULT_RUN_AGENT
) -> Iterator[RunTarget]:
    """A ledger for the runs: the server at ``url``, or an embedded throwaway one.

    Raises:
        SpecError: ``url`` without an API key (argument or ``AGENTLEDGER_API_KEY``).
        EmbeddedServerError: the embedded server did not start (``agentledger.testing``,
            re-exported by ``agentledger.cases``).
    """
    if url is not None:
        key = resolve_api_key(api_key)
        if not key:
            raise SpecError("--url needs --api-key (or AGENTLEDGER_API_KEY)")
        ledger = Ledger(url=url, api_key=key, agent=agent, spill_dir=None, redact=False)
        try:
            yield RunTarget(ledger, url)
        finally:
            ledger.close(timeout_s=10.0)
        return
    with (
        tempfile.TemporaryDirectory(prefix="agentledger-cases-") as tmp,
        EmbeddedServer(Path(tmp) / "ledger.db") as server,
    ):
        ledger = Ledger(
            url=server.url, api_key=server.api_key, agent=agent, spill_dir=None, redact=False
        )
        try:
            yield RunTarget(ledger, server.url)
        finally:
            ledger.close(timeout_s=10.0)


def _build(factory: Callable[..., Any], tools: list[BaseTool], case: Case) -> Any:
    try:
        parameters = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        parameters = {}  # type: ignore[assignment]
    if "context" in parameters:
        return factory(tools, context=case.context)
    return factory(tools)


def run_once(
    case: Case,
    *,
    case_dir: Path,
    factory: Callable[..., Any],
    tools: Sequence[BaseTool],
    target: RunTarget,
    suite_id: str,
    run: int,
) -> tuple[str, StubRegistry, float, str | None]:
    """One run of one case; returns ``(session_id, registry, duration_ms, error)``."""
    session_id = f"cases-{suite_id}-{case.case_id}-r{run}"[:255]
    registry = StubRegistry(case, case_dir, passthrough_urls=(target.url,))
    keyed = _KeyedLog(target.ledger, f"{suite_id}/{run}/{case.case_id}")
    handler = LedgerCallbackHandler(
        keyed,
        session_id=session_id,
        metadata={"case_id": case.case_id, "case_run": run, "suite_id": suite_id},
    )
    error: str | None = None
    started = time.perf_counter()
    try:
        agent = _build(factory, stub_tools(tools, registry), case)
        messages: list[Any] = []
        for text in case.inputs:
            messages.append({"role": "user", "content": text})
            result = agent.invoke({"messages": messages}, config={"callbacks": [handler]})
            if isinstance(result, dict) and isinstance(result.get("messages"), list):
                messages = list(result["messages"])
    except Exception as exc:  # the candidate crashed: a failed run, not a crashed suite
        error = f"{type(exc).__name__}: {exc}"
    return session_id, registry, (time.perf_counter() - started) * 1000.0, error


def run_suite(
    cases: Sequence[tuple[Path, Case]],
    *,
    factory: Callable[..., Any],
    tools: Sequence[BaseTool],
    target: RunTarget,
    runs: int = 1,
    default_min_pass_rate: float | None = None,
    embed: Embedder | None = None,
    progress: Progress | None = None,
) -> SuiteReport:
    """Run every case ``runs`` times and check each run from the stored events.

    Args:
        cases: ``(file, case)`` pairs (:func:`load_cases`).
        factory: ``factory(stub_tools) -> runnable`` (see the module docstring).
        tools: the real tools (their names and schemas are copied; never executed).
        target: where runs are logged (:func:`ledger_target`).
        runs: runs per case (>= 1).
        default_min_pass_rate: rate required of non-safety checks that set none.
        embed: embeddings for ``similar_to`` checks.
        progress: called with ``(case_id, runs_done)`` after each run.

    Raises:
        ValueError: ``runs < 1``.
    """
    if runs < 1:
        raise ValueError("runs must be >= 1")
    suite_id = str(uuid_utils.uuid7()).replace("-", "")[-12:]
    report = SuiteReport(suite_id, runs, ledger_url=target.url, agent=target.ledger.agent)
    done = 0
    for path, case in cases:
        case_report = CaseReport(case.case_id, str(path))
        pending: list[tuple[str, StubRegistry, float, str | None]] = []
        for run in range(1, runs + 1):
            pending.append(
                run_once(
                    case,
                    case_dir=path.parent,
                    factory=factory,
                    tools=tools,
                    target=target,
                    suite_id=suite_id,
                    run=run,
                )
            )
            done += 1
            if progress is not None:
                progress(case.case_id, done)
        target.ledger.flush(timeout_s=30.0)
        for session_id, registry, duration_ms, error in pending:
            events = target.ledger.replay(session_id, limit=10_000)
            result = check(
                case,
                events,
                stub_failures=registry.failures,
                duration_ms=duration_ms,
                embed=embed,
                default_min_pass_rate=default_min_pass_rate,
            )
            result.error = error
            result.checks.append(
                CheckResult(
                    "agent:completed",
                    error is None,
                    "the agent run finishes without an exception",
                    error or "finished",
                    1.0,
                    True,
                )
            )
            if result.divergence is not None and result.divergence.event_id is not None:
                effects = run_effects(target.ledger, events, result.divergence.event_id)
                result.divergence = replace(result.divergence, run_effects=effects)
            result.extra["session_id"] = session_id
            result.extra["events"] = len(events)
            case_report.add(result)
        report.cases.append(case_report)
    return report


__all__ += ["RunCheck", "run_once"]
