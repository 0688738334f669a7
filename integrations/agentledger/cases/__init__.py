"""Regression cases from production sessions: export a stored session as a case file, run it
against a candidate agent with stubbed tools, gate a release on the checks.

The loop, the case file and the checks are described in ``docs/design/cases.md``. Every name
is imported on first use; the case model, checks and reports import no framework, the stubs,
runner and cassettes import LangChain.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentledger.cases._checks import (
        TRUNCATED_REASONS,
        CheckResult,
        Embedder,
        RunCheck,
        check,
        looks_like_refusal,
    )
    from agentledger.cases._divergence import Divergence, Effect
    from agentledger.cases._embed import (
        EmbedderChoice,
        http_embedder,
        local_embedder,
        resolve_embedder,
    )
    from agentledger.cases._export import (
        ChainBrokenError,
        ExportResult,
        build_case,
        export_cases,
    )
    from agentledger.cases._forget import (
        CaseErasure,
        ErasedCase,
        forget_cases,
        forget_sessions,
        subject_ref_of,
    )
    from agentledger.cases._gate import GateOptions, GateResult, SimilarityStats
    from agentledger.cases._histogram import baseline_scores, write_histogram
    from agentledger.cases._markdown import markdown_summary, write_markdown
    from agentledger.cases._model import (
        SCHEMA_VERSION,
        Case,
        CaseError,
        Cassette,
        Expect,
        Lineage,
        OutcomeCheck,
        Selection,
        StepEffects,
        StubCall,
        ToolCallCheck,
        case_json_schema,
        load_case,
        load_cases,
        save_case,
    )
    from agentledger.cases._openai_candidate import openai_candidate
    from agentledger.cases._pseudonym import Pseudonymizer
    from agentledger.cases._report import (
        CaseReport,
        SuiteReport,
        load_baseline,
        print_summary,
        write_junit,
    )
    from agentledger.cases._runner import (
        SpecError,
        default_run_id,
        load_object,
        run_suite,
        suite_run_id,
    )
    from agentledger.cases._sample import (
        Candidate,
        SampleResult,
        SampleSpec,
        StratumPick,
        allocate_strata,
        draw_sample,
        parse_when,
        strata_table,
    )
    from agentledger.cases._stubs import (
        StubRegistry,
        UnexpectedToolCall,
        stub_tools,
    )
    from agentledger.cases._target import RunTarget, ledger_target
    from agentledger.cases._turns import TurnChoice, expand_turns, parse_turn, turn_case
    from agentledger.cases._vcr import record_cassette
    from agentledger.testing import EmbeddedServerError

__all__ = [
    "SCHEMA_VERSION",
    "TRUNCATED_REASONS",
    "Candidate",
    "Case",
    "CaseErasure",
    "CaseError",
    "CaseReport",
    "Cassette",
    "ChainBrokenError",
    "CheckResult",
    "Divergence",
    "Effect",
    "EmbeddedServerError",
    "Embedder",
    "EmbedderChoice",
    "ErasedCase",
    "Expect",
    "ExportResult",
    "GateOptions",
    "GateResult",
    "Lineage",
    "OutcomeCheck",
    "Pseudonymizer",
    "RunCheck",
    "RunTarget",
    "SampleResult",
    "SampleSpec",
    "Selection",
    "SimilarityStats",
    "SpecError",
    "StepEffects",
    "StratumPick",
    "StubCall",
    "StubRegistry",
    "SuiteReport",
    "ToolCallCheck",
    "TurnChoice",
    "UnexpectedToolCall",
    "allocate_strata",
    "baseline_scores",
    "build_case",
    "case_json_schema",
    "check",
    "default_run_id",
    "draw_sample",
    "expand_turns",
    "export_cases",
    "forget_cases",
    "forget_sessions",
    "http_embedder",
    "ledger_target",
    "load_baseline",
    "load_case",
    "load_cases",
    "load_object",
    "local_embedder",
    "looks_like_refusal",
    "markdown_summary",
    "openai_candidate",
    "parse_turn",
    "parse_when",
    "print_summary",
    "record_cassette",
    "resolve_embedder",
    "run_suite",
    "save_case",
    "strata_table",
    "stub_tools",
    "subject_ref_of",
    "suite_run_id",
    "turn_case",
    "write_histogram",
    "write_junit",
    "write_markdown",
]

#: public name -> the module it lives in (relative to this package, or absolute)
_LAZY = {
    "CheckResult": "._checks",
    "Divergence": "._divergence",
    "Effect": "._divergence",
    "Embedder": "._checks",
    "RunCheck": "._checks",
    "check": "._checks",
    "SCHEMA_VERSION": "._model",
    "Case": "._model",
    "CaseError": "._model",
    "Cassette": "._model",
    "Expect": "._model",
    "Lineage": "._model",
    "Selection": "._model",
    "StepEffects": "._model",
    "OutcomeCheck": "._model",
    "StubCall": "._model",
    "ToolCallCheck": "._model",
    "case_json_schema": "._model",
    "load_case": "._model",
    "load_cases": "._model",
    "save_case": "._model",
    "CaseReport": "._report",
    "SuiteReport": "._report",
    "load_baseline": "._report",
    "print_summary": "._report",
    "write_junit": "._report",
    "CaseErasure": "._forget",
    "ErasedCase": "._forget",
    "forget_cases": "._forget",
    "forget_sessions": "._forget",
    "subject_ref_of": "._forget",
    "ChainBrokenError": "._export",
    "ExportResult": "._export",
    "build_case": "._export",
    "export_cases": "._export",
    "Pseudonymizer": "._pseudonym",
    "Candidate": "._sample",
    "SampleResult": "._sample",
    "SampleSpec": "._sample",
    "StratumPick": "._sample",
    "allocate_strata": "._sample",
    "draw_sample": "._sample",
    "parse_when": "._sample",
    "strata_table": "._sample",
    "RunTarget": "._target",
    "SpecError": "._runner",
    "ledger_target": "._target",
    "load_object": "._runner",
    "run_suite": "._runner",
    "StubRegistry": "._stubs",
    "UnexpectedToolCall": "._stubs",
    "stub_tools": "._stubs",
    "record_cassette": "._vcr",
    "http_embedder": "._embed",
    "GateOptions": "._gate",
    "GateResult": "._gate",
    "SimilarityStats": "._gate",
    "TRUNCATED_REASONS": "._checks",
    "EmbedderChoice": "._embed",
    "resolve_embedder": "._embed",
    "local_embedder": "._embed",
    "default_run_id": "._runner",
    "suite_run_id": "._runner",
    "markdown_summary": "._markdown",
    "write_markdown": "._markdown",
    "openai_candidate": "._openai_candidate",
    "looks_like_refusal": "._checks",
    "baseline_scores": "._histogram",
    "write_histogram": "._histogram",
    "TurnChoice": "._turns",
    "expand_turns": "._turns",
    "parse_turn": "._turns",
    "turn_case": "._turns",
    "EmbeddedServerError": "agentledger.testing",
}


def __getattr__(name: str) -> Any:
    """Every name is imported on first use (PEP 562): the pytest plugin below this package
    is loaded in every pytest run and must stay light."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value
