"""Every public name a user could import before the packages were rearranged still imports.

The table below is the public surface (each public module's ``__all__``) as it stood before the
layout of one package per framework and product, plus the integration packages added since.
Old paths that moved are kept as deprecated aliases of the new ones; this test holds them to
that. A framework that is not installed in this
environment must fail with an ``ImportError`` that names the extra to install.
"""

from __future__ import annotations

import importlib

import pytest

PUBLIC_BEFORE: dict[str, tuple[str, ...]] = {
    "agentledger.client": (
        "DEFAULT",
        "ENVIRONMENT",
        "APIStatusError",
        "AgentInfo",
        "ApiKey",
        "AsyncLedger",
        "AuthenticationError",
        "BaselineReport",
        "ChainHead",
        "ChainProblem",
        "ChainReport",
        "ConfigurationError",
        "ConflictError",
        "EnvVar",
        "Event",
        "EventRef",
        "FlushResult",
        "ForgetResult",
        "ImpactResult",
        "ImportResult",
        "Ledger",
        "LedgerError",
        "MemoryContext",
        "NotFoundError",
        "PermissionDeniedError",
        "RateLimitError",
        "RetryPolicy",
        "SearchHit",
        "SearchResult",
        "ServerError",
        "Session",
        "SessionDiff",
        "StateAt",
        "Stats",
        "TransportError",
        "UnprocessableEntityError",
        "WhyResult",
        "capture_internal_exceptions",
        "guarded",
        "vocabulary",
    ),
    "agentledger.server": ("Settings", "StartupRefused", "create_app"),
    "agentledger.integrations.cases": (
        "SCHEMA_VERSION",
        "TRUNCATED_REASONS",
        "Case",
        "CaseError",
        "CaseReport",
        "Cassette",
        "ChainBrokenError",
        "CheckResult",
        "Divergence",
        "Embedder",
        "EmbedderChoice",
        "Expect",
        "ExportResult",
        "GateOptions",
        "GateResult",
        "OutcomeCheck",
        "Pseudonymizer",
        "RunCheck",
        "RunTarget",
        "SimilarityStats",
        "SpecError",
        "StubCall",
        "StubRegistry",
        "SuiteReport",
        "ToolCallCheck",
        "UnexpectedToolCall",
        "baseline_scores",
        "build_case",
        "case_json_schema",
        "check",
        "default_run_id",
        "export_cases",
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
        "print_summary",
        "record_cassette",
        "resolve_embedder",
        "run_suite",
        "save_case",
        "stub_tools",
        "suite_run_id",
        "write_histogram",
        "write_junit",
        "write_markdown",
    ),
    "agentledger.integrations.crewai": (
        "EVENT_ID_NAMESPACE",
        "LedgerCrewListener",
        "SupportsLedger",
        "instrument_crew",
        "ledger_event_id",
    ),
    "agentledger.integrations.langchain": ("CUSTOM_EVENT", "LedgerCallbackHandler", "SupportsLog"),
    "agentledger.integrations.livekit": ("LEVELS", "LedgerSessionObserver", "Level", "SupportsLog"),
    # added after the rearrangement, held to the same rule
    "agentledger.integrations.openai": (
        "SessionOption",
        "SupportsLog",
        "instrument",
        "instrument_openai",
    ),
    "agentledger.integrations.openai_agents": (
        "LedgerTracingProcessor",
        "SessionOption",
        "instrument",
        "instrument_agents",
    ),
    "agentledger.integrations.pydantic_ai": ("LedgerCapability", "SessionOption", "instrument"),
    "agentledger.integrations.mcp": (
        "SERVER_NAME",
        "TOOL_NAMES",
        "ChildStartError",
        "LedgerTools",
        "McpProxy",
        "McpProxyError",
        "ProxyStats",
        "create_server",
        "run_proxy",
        "serve_stdio",
    ),
    "agentledger.integrations.pytest_plugin": (
        "LIBRARY_NAMES",
        "CaseFailed",
        "CaseItem",
        "pytest_addoption",
        "pytest_collection_modifyitems",
        "pytest_unconfigure",
    ),
}

EXTRA_OF = {
    "agentledger.integrations.crewai": "crewai",
    "agentledger.integrations.livekit": "livekit",
    "agentledger.integrations.langchain": "langchain",
    "agentledger.integrations.openai": "openai",
    "agentledger.integrations.openai_agents": "openai-agents",
    "agentledger.integrations.pydantic_ai": "pydantic-ai",
    "agentledger.integrations.mcp": "mcp",
}


@pytest.mark.parametrize("module_name", sorted(PUBLIC_BEFORE))
def test_public_names_of_before_still_import(module_name: str) -> None:
    """Layout: every public name users imported before still works (or names its extra)."""
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        extra = EXTRA_OF.get(module_name)
        if extra is None:
            raise
        assert f"agentledger[{extra}]" in str(error), str(error)
        pytest.skip(f"{module_name}: extra {extra!r} not installed here")
    missing = [name for name in PUBLIC_BEFORE[module_name] if not hasattr(module, name)]
    assert not missing, f"{module_name} lost {missing}"


def test_client_vocabulary_is_importable_as_a_module() -> None:
    module = importlib.import_module("agentledger.client.vocabulary")
    assert module.USER_MESSAGE == "user_message"
