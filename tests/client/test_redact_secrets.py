"""The client redacts every secret form of ``tests/_secrets.py`` before anything leaves the
process: in the wire value it builds and in the lines it spills to disk when the server is down.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from _secrets import ORDINARY, SECRET_CASES, SECRETS
from agentledger.client import Ledger
from agentledger.client._redaction import ClientRedactor


def _wire(value: Any, redactor: ClientRedactor) -> bytes:
    return orjson.dumps(redactor.value(orjson.dumps(value)))


@pytest.mark.parametrize(
    ("value", "expected"), [c[1:] for c in SECRET_CASES], ids=[c[0] for c in SECRET_CASES]
)
def test_wire_value_has_the_secret_replaced(value: Any, expected: Any) -> None:
    for redactor in (ClientRedactor(), ClientRedactor(["email", "phone"])):
        sent = _wire(value, redactor)
        assert orjson.loads(sent) == orjson.loads(orjson.dumps(expected))
        assert not [secret for secret in SECRETS if secret.encode() in sent]


@pytest.mark.parametrize("value", [c[1] for c in ORDINARY], ids=[c[0] for c in ORDINARY])
def test_wire_value_keeps_ordinary_values(value: Any) -> None:
    raw = orjson.dumps(value)
    assert _wire(value, ClientRedactor()) == raw


def test_a_plain_event_is_sent_without_a_walk() -> None:
    raw = orjson.dumps({"text": "hello", "n": 1})
    assert isinstance(ClientRedactor().value(raw), orjson.Fragment)


def test_nothing_secret_is_spilled(server_factory: Any, agent_name: str, tmp_path: Path) -> None:
    server = server_factory(start=False)  # its port is free: the server is down
    ledger = Ledger(server.url, server.api_key, agent_name, spill_dir=tmp_path)
    for case_id, value, _ in SECRET_CASES:
        ledger.log("tool_result", value, metadata={"case": case_id, "echo": value})
    ledger.close(1.0)
    raw = b"".join(p.read_bytes() for p in tmp_path.rglob("*.ndjson"))
    assert raw.count(b"tool_result") == len(SECRET_CASES)  # every event was spilled
    assert not [secret for secret in SECRETS if secret.encode() in raw]
