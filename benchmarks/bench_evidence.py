"""Evidence-bundle benchmark: building and verifying the bundle of an event with a 1,000-event
causal ancestry, side by side with references over the same bytes.

On a real ``agentledger serve`` (SQLite file; ``--postgres URL`` for PostgreSQL):

* build: ``GET /v1/events/{id}/evidence`` (why + impact, the chain segment, the head stored
  by the first call, summary, graph, signed manifest, zip), next to ``GET /v1/events/{id}/why``
  of the same event (the lineage answer alone);
* verify: :func:`agentledger.evidence.verify_bundle` on the zip's bytes, next to a bare pass:
  unzip, SHA-256 of every file and of every record, and one Ed25519 verify.

Medians over rounds. Usage: ``python benchmarks/bench_evidence.py [--quick] [--postgres URL]``.
The machine is shared and noisy: compare the columns of one run, not runs of different days.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import statistics
import tempfile
import time
import uuid
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import orjson
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from doc_tables import doc_table  # the script's directory is on sys.path

from agentledger.evidence import verify_bundle
from agentledger.protocol.signed_heads import head_payload
from agentledger.testing import EmbeddedServer

BATCH = 500


def write_chain(client: httpx.Client, agent: str, n: int) -> str:
    """``n`` events of ``agent``, each caused by the one before; the last one's id."""
    ids = [str(uuid.uuid4()) for _ in range(n)]
    events = [
        {
            "event_id": ids[i],
            "agent": agent,
            "event": "llm_call" if i % 2 else "tool_call",
            "parent_id": ids[i - 1] if i else None,
            "session_id": "bench",
            "data": {"step": i, "prompt": f"step {i} of the plan", "tokens": 120 + i % 50},
        }
        for i in range(n)
    ]
    for start in range(0, n, BATCH):
        answer = client.post("/v1/events/batch", json={"events": events[start : start + BATCH]})
        assert answer.status_code == 200 and answer.json()["failed"] == 0, answer.text
    return ids[-1]


def timed(call: Callable[[], Any], rounds: int) -> tuple[float, Any]:
    """Median milliseconds of ``call`` over ``rounds``, and its last result."""
    times = []
    result = None
    for _ in range(rounds):
        start = time.perf_counter()
        result = call()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), result


def bare_pass(bundle: bytes, public: Ed25519PublicKey) -> None:
    """The reference: unzip, hash every file and every record, verify one signature."""
    with zipfile.ZipFile(io.BytesIO(bundle)) as archive:
        files = {name: archive.read(name) for name in archive.namelist()}
    for data in files.values():
        hashlib.sha256(data).hexdigest()
    segment = orjson.loads(files["segments/0.json"])
    for row in segment["rows"]:
        if row["record"] is not None:
            hashlib.sha256(row["record"].encode()).hexdigest()
    head = segment["head"]
    public.verify(base64.b64decode(head["signature"]), head_payload(head))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke test)")
    parser.add_argument("--postgres", help="a postgresql:// URL of an empty database")
    args = parser.parse_args()
    n, rounds = (200, 3) if args.quick else (1_000, 7)
    with tempfile.TemporaryDirectory() as tmp:
        db = args.postgres or str(Path(tmp) / "evidence.db")
        with EmbeddedServer(db) as server:
            headers = {"Authorization": f"Bearer {server.api_key}"}
            with httpx.Client(base_url=server.url, headers=headers, timeout=300) as client:
                event = write_chain(client, f"bench-evidence-{uuid.uuid4().hex[:6]}", n)
                keys = client.get("/v1/signing-keys").json()["keys"]
                raw = base64.b64decode(next(k for k in keys if k["active"])["public_key"])

                def build() -> bytes:
                    answer = client.get(f"/v1/events/{event}/evidence")
                    assert answer.status_code == 200, answer.text
                    return answer.content

                def why() -> None:
                    answer = client.get(f"/v1/events/{event}/why")
                    assert answer.status_code == 200 and answer.json()["chain_length"] == n

                first_ms, bundle = timed(build, 1)  # signs and stores the head
                build_ms, bundle = timed(build, rounds)
                why_ms, _ = timed(why, rounds)
    public = Ed25519PublicKey.from_public_bytes(raw)
    report = verify_bundle(bundle, public_key=raw)
    assert report.ok and report.records == n, [str(p) for p in report.problems]
    verify_ms, _ = timed(lambda: verify_bundle(bundle, public_key=raw), rounds)
    bare_ms, _ = timed(lambda: bare_pass(bundle, public), rounds)
    store = "PostgreSQL" if args.postgres else "SQLite"
    print(f"evidence benchmark ({store}; {n:,}-event ancestry, {len(bundle):,} bytes zipped;")
    print(f"{rounds} rounds, medians; shared noisy machine)")
    rows = [
        (
            f"{store}: build, {n:,}-event ancestry (reference: why over HTTP)",
            f"{build_ms:,.1f} ms",
            f"{why_ms:,.1f} ms",
            f"{build_ms / why_ms:.1f}×",
        ),
        (f"{store}: first build, signs and stores a head", f"{first_ms:,.1f} ms", "", ""),
        (
            f"`verify_bundle`, {n:,} records (reference: SHA-256 pass + one Ed25519 verify)",
            f"{verify_ms:,.1f} ms",
            f"{bare_ms:,.1f} ms",
            f"{verify_ms / bare_ms:.1f}×",
        ),
    ]
    print(doc_table("evidence", ("measure", "evidence", "reference", "ratio"), rows))


if __name__ == "__main__":
    main()
