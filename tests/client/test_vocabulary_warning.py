"""An event type outside the vocabulary is logged as given and warned about once per type and
process on the ``agentledger`` logger; a namespaced type (``livekit.metrics``) is not
(``docs/pages/event-vocabulary.md``)."""

from __future__ import annotations

import logging
import uuid
from typing import Any

import pytest

from agentledger.client import Ledger
from agentledger.client.vocabulary import EVENT_TYPES

from .conftest import stored_events


def test_a_custom_type_is_stored_and_warned_about_once(
    ledger_server: Any, agent_name: str, caplog: pytest.LogCaptureFixture
) -> None:
    custom = f"my_step_{uuid.uuid4().hex[:8]}"
    other = f"{custom}_other"
    caplog.set_level(logging.WARNING, logger="agentledger")
    with Ledger(ledger_server.url, ledger_server.api_key, agent_name, spill_dir=None) as ledger:
        for _ in range(3):
            ledger.log(custom, {"n": 1})
        ledger.log(other, {"n": 2})
        ledger.log(f"myframework.{custom}", {"n": 3})  # namespaced: an integration's own
        for name in EVENT_TYPES:
            ledger.log(name, {})
        assert ledger.flush(10).complete
    warned = [
        r.getMessage() for r in caplog.records if "not in the event vocabulary" in r.getMessage()
    ]
    assert warned == [
        f"agentledger: event type {name!r} is not in the event vocabulary "
        "(agentledger.client.vocabulary.EVENT_TYPES); it is logged as a custom type. "
        "Shown once per type."
        for name in (custom, other)
    ]
    stored = [
        e["event"] for e in stored_events(ledger_server.url, ledger_server.api_key, agent_name)
    ]
    assert stored.count(custom) == 3 and other in stored
