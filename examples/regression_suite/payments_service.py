"""A stand-in payments HTTP service for the regression-suite example (stdlib only).

``GET /orders/{id}``, ``GET /orders/{id}/charges/check``, ``POST /refunds``. It plays the
production system the agent's tools call; start it with :func:`serve` (a context manager
running it in a thread on a loopback port).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["ORDERS", "serve"]

ORDERS: dict[str, dict[str, Any]] = {
    "A1234": {
        "order_id": "A1234",
        "customer": "Dana Reyes",
        "email": "dana.reyes@example.org",
        "phone": "+49 170 1234567",
        "card_number": "4242 4242 4242 4242",
        "refund_iban": "DE89 3704 0044 0532 0130 00",
        "amount": 49.90,
        "currency": "EUR",
        "charges": [
            {"charge_id": "ch_3Pq1", "amount": 49.90, "at": "2026-11-28T10:02:11Z"},
            {"charge_id": "ch_3Pq2", "amount": 49.90, "at": "2026-11-28T10:02:13Z"},
        ],
    }
}


class _Handler(BaseHTTPRequestHandler):
    refunds: list[dict[str, Any]]

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return

    def _send(self, status: int, body: Any) -> None:
        raw = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def do_GET(self) -> None:
        parts = [p for p in self.path.split("/") if p]
        order = ORDERS.get(parts[1].upper()) if len(parts) >= 2 and parts[0] == "orders" else None
        if order is None:
            self._send(404, {"error": f"no order {self.path}"})
        elif len(parts) == 2:
            self._send(200, order)
        else:
            charges = order["charges"]
            duplicate = len(charges) > 1 and len({c["amount"] for c in charges}) == 1
            self._send(
                200,
                {
                    "order_id": order["order_id"],
                    "duplicate": duplicate,
                    "kept_charge": charges[0]["charge_id"],
                    "duplicate_charges": [c["charge_id"] for c in charges[1:]] if duplicate else [],
                    "amount": order["amount"],
                },
            )

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        refund = {"refund_id": f"re_{len(self.refunds) + 1:04d}", **body, "status": "succeeded"}
        self.refunds.append(refund)
        self._send(201, refund)


@contextmanager
def serve(port: int = 0) -> Iterator[str]:
    """Run the service on 127.0.0.1 (``port`` 0: a free one); yields its base URL."""
    handler = type("Handler", (_Handler,), {"refunds": []})
    server = ThreadingHTTPServer(("127.0.0.1", port), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
