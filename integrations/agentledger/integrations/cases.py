"""Regression cases from production sessions (issue 8): the library API.

A *case* is one JSON file built from a stored session: its inputs, the context it retrieved,
what every tool returned, and what a candidate must do (``expect``). The loop:

1. ``agentledger cases export --agent A --session S --out cases/`` (chain verified first,
   personal data replaced by synthetic stand-ins, secrets never written);
2. ``agentledger cases run cases/ --agent mod:factory --tools mod:TOOLS --runs 3`` (stub
   tools answer from the case; runs logged to a throwaway ledger; checks read the events
   back; exit 0/1/2);
3. the same in pytest: ``pytest --agentledger-cases cases/ --agentledger-agent mod:factory
   --agentledger-tools mod:TOOLS`` (:mod:`agentledger.integrations.pytest_plugin`).

Frameworks other than LangChain (CrewAI, LiveKit: same event vocabulary) use
:func:`check` on a session's events directly. The case model, checks and reports import no
framework; :class:`StubRegistry`, :func:`stub_tools` and :func:`run_suite` need LangChain and
are imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentledger.integrations._cases._checks import (
    CheckResult,
    Divergence,
    Embedder,
    RunCheck,
    check,
)
from agentledger.integrations._cases._model import (
    SCHEMA_VERSION,
    Case,
    CaseError,
    Cassette,
    Expect,
    OutcomeCheck,
    StubCall,
    ToolCallCheck,
    case_json_schema,
    load_case,
    load_cases,
    save_case,
)
from agentledger.integrations._cases._report import (
    CaseReport,
    SuiteReport,
    load_baseline,
    print_summary,
    write_junit,
)

if TYPE_CHECKING:
    from agentledger.integrations._cases._embed import http_embedder
    from agentledger.integrations._cases._export import (
        ChainBrokenError,
        ExportResult,
        build_case,
        export_cases,
    )
    from agentledger.integrations._cases._pseudonym import Pseudonymizer
    from agentledger.integrations._cases._runner import (
        RunTarget,
        SpecError,
        ledger_target,
        load_object,
        run_suite,
    )
    from agentledger.integrations._cases._stubs import (
        StubRegistry,
        UnexpectedToolCall,
        stub_tools,
    )
    from agentledger.integrations._cases._vcr import record_cassette

__all__ = [
    "SCHEMA_VERSION",
    "Case",
    "CaseError",
    "CaseReport",
    "Cassette",
    "ChainBrokenError",
    "CheckResult",
    "Divergence",
    "Embedder",
    "Expect",
    "ExportResult",
    "OutcomeCheck",
    "Pseudonymizer",
    "RunCheck",
    "RunTarget",
    "SpecError",
    "StubCall",
    "StubRegistry",
    "SuiteReport",
    "ToolCallCheck",
    "UnexpectedToolCall",
    "build_case",
    "case_json_schema",
    "check",
    "export_cases",
    "http_embedder",
    "ledger_target",
    "load_baseline",
    "load_case",
    "load_cases",
    "load_object",
    "print_summary",
    "record_cassette",
    "run_suite",
    "save_case",
    "stub_tools",
    "write_junit",
]

_LAZY = {
    "ChainBrokenError": "_export",
    "ExportResult": "_export",
    "build_case": "_export",
    "export_cases": "_export",
    "Pseudonymizer": "_pseudonym",
    "RunTarget": "_runner",
    "SpecError": "_runner",
    "ledger_target": "_runner",
    "load_object": "_runner",
    "run_suite": "_runner",
    "StubRegistry": "_stubs",
    "UnexpectedToolCall": "_stubs",
    "stub_tools": "_stubs",
    "record_cassette": "_vcr",
    "http_embedder": "_embed",
}


def __getattr__(name: str) -> Any:
    """Import the LangChain-dependent parts on first use (PEP 562)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"agentledger.integrations._cases.{module}"), name)
    globals()[name] = value
    return value
