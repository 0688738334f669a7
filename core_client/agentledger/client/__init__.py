"""agentledger client: log agent events to a ledger server and ask it why().

``Ledger`` (blocking reads) and ``AsyncLedger`` (``async`` reads) share one non-blocking
``log()``: it returns the client-made event id at once, and a background sender batches,
retries and spills to disk. The public surface is listed in ``__all__``; everything else lives
in private ``_modules``.
"""

from __future__ import annotations

from agentledger.client import vocabulary
from agentledger.client._async_client import AsyncLedger
from agentledger.client._client import Ledger
from agentledger.client._config import DEFAULT, DEFAULT_URL, ENVIRONMENT, EnvVar
from agentledger.client._errors import (
    APIStatusError,
    AuthenticationError,
    ConfigurationError,
    ConflictError,
    LedgerError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    ServerError,
    TransportError,
    UnprocessableEntityError,
)
from agentledger.client._guard import capture_internal_exceptions, guarded
from agentledger.client._models import (
    AgentInfo,
    ApiKey,
    BaselineReport,
    ChainHead,
    ChainProblem,
    ChainReport,
    Event,
    EventRef,
    FlushResult,
    ForgetResult,
    ImpactResult,
    ImportResult,
    MemoryContext,
    SearchHit,
    SearchResult,
    Session,
    SessionDiff,
    StateAt,
    Stats,
    WhyResult,
)
from agentledger.client._retry import RetryPolicy

__all__ = [
    "DEFAULT",
    "DEFAULT_URL",
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
]
