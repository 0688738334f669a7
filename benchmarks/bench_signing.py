"""What signing a chain head costs, next to the bare Ed25519 signature of the same bytes.

A SQLite ledger gets agents with a few events each; then, per head, four ways on the same
heads: the bare ``Ed25519PrivateKey.sign`` of the head's signed bytes (``head_payload``), the
keyring's sign (the key file's modification time is checked first), ``HeadSigner.sign``
(reads the agent's head and last row, signs, inserts the ``signed_heads`` row), and the same
with a publish directory (one JSON file per head, written and renamed). Each operation is
timed alone; the table gives the median in µs and the ratio to the bare signature. The machine
is shared and noisy: compare the ratios, not the absolute numbers.

Usage: ``python benchmarks/bench_signing.py [--quick]``
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from fastapi.testclient import TestClient

from agentledger.protocol.signed_heads import head_payload
from agentledger.server import Settings, create_app
from agentledger.server._auth import new_key
from agentledger.server._signing._heads import HeadSigner
from agentledger.server._signing._keyring import Keyring
from agentledger.server._signing._publish import HeadPublisher


def _fill(app: Any, agents: int, events: int) -> list[str]:
    names = [f"bench-agent-{i}" for i in range(agents)]
    raw, record = new_key(name="bench", agent=None, scope="read_write", expires_in_days=None)
    app.state.store.create_key(record)
    with TestClient(app) as client:
        for name in names:
            batch = [{"agent": name, "event": "note", "data": {"i": i}} for i in range(events)]
            answer = client.post(
                "/v1/events/batch",
                json={"events": batch},
                headers={"Authorization": f"Bearer {raw}"},
            )
            assert answer.status_code == 200, answer.text
    return names


def _median_us(op: Callable[[str], Any], names: list[str], rounds: int) -> float:
    timings = []
    for _ in range(rounds):
        for name in names:
            start = time.perf_counter_ns()
            op(name)
            timings.append(time.perf_counter_ns() - start)
    return statistics.median(timings) / 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke test)")
    args = parser.parse_args()
    agents, rounds = (20, 2) if args.quick else (200, 5)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        app = create_app(Settings(db=str(folder / "bench.db"), sign_interval_s=0))
        store = app.state.store
        names = _fill(app, agents, 5)
        ring = Keyring(str(folder / "keys.json"))
        private = Ed25519PrivateKey.generate()
        stored = HeadSigner(store, ring, HeadPublisher(None, None))
        published = HeadSigner(store, ring, HeadPublisher(str(folder / "published"), None))
        payloads = {name: head_payload(stored.sign(name)) for name in names}

        rows = [
            ("bare Ed25519 sign of the head's bytes", _median_us(
                lambda n: private.sign(payloads[n]), names, rounds)),
            ("keyring sign (key file mtime checked)", _median_us(
                lambda n: ring.sign(payloads[n]), names, rounds)),
            ("HeadSigner.sign: read head, sign, store", _median_us(stored.sign, names, rounds)),
            ("HeadSigner.sign + publish to a directory", _median_us(
                published.sign, names, rounds)),
        ]  # fmt: skip
        store.close()
    bare = rows[0][1]
    print(f"signing a chain head: {agents} agents x {rounds} rounds, median per head, SQLite")
    print(f"| {'operation':<44} | {'median µs':>10} | {'× bare':>7} |")
    print(f"|{'-' * 46}|{'-' * 12}|{'-' * 9}|")
    for label, value in rows:
        print(f"| {label:<44} | {value:>10.1f} | {value / bare:>6.1f}× |")


if __name__ == "__main__":
    main()
