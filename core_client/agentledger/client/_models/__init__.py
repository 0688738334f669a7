"""Typed results of the client: frozen dataclasses built from the server's JSON, one module per
area. ``from_wire`` ignores members it does not know (a newer server still parses) and requires
none the client can do without; timestamps stay the ISO-8601 strings the server sent."""

from __future__ import annotations

from agentledger.client._models.admin import ApiKey, ImportResult
from agentledger.client._models.chain import ChainHead, ChainProblem, ChainReport
from agentledger.client._models.decision import Approval, DecisionView, ModelCall, ModelInput
from agentledger.client._models.delivery import DeliveryError, FlushResult, Stats
from agentledger.client._models.events import (
    AgentInfo,
    Cause,
    Edge,
    Event,
    EventRef,
    ImpactResult,
    SearchHit,
    SearchResult,
    Session,
    WhyResult,
)
from agentledger.client._models.memory import (
    BaselineReport,
    ForgetResult,
    MemoryContext,
    SessionDiff,
    StateAt,
)
from agentledger.client._models.retention import (
    RetentionEntry,
    RetentionPolicies,
    RetentionPolicy,
    RetentionRun,
)
from agentledger.client._models.signing import KeyRotation, SignedHead, SigningKey

__all__ = [
    "AgentInfo",
    "ApiKey",
    "Approval",
    "BaselineReport",
    "Cause",
    "ChainHead",
    "ChainProblem",
    "ChainReport",
    "DecisionView",
    "DeliveryError",
    "Edge",
    "Event",
    "EventRef",
    "FlushResult",
    "ForgetResult",
    "ImpactResult",
    "ImportResult",
    "KeyRotation",
    "MemoryContext",
    "ModelCall",
    "ModelInput",
    "RetentionEntry",
    "RetentionPolicies",
    "RetentionPolicy",
    "RetentionRun",
    "SearchHit",
    "SearchResult",
    "Session",
    "SessionDiff",
    "SignedHead",
    "SigningKey",
    "StateAt",
    "Stats",
    "WhyResult",
]
