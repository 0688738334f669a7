"""The refund agent's real tools: they call the payments service at ``PAYMENTS_URL``.

``TOOLS`` is what ``agentledger cases run --tools refund_tools:TOOLS`` reads: the stubs copy
these names and argument schemas; the functions themselves never run during a case run.
"""

from __future__ import annotations

import os

import httpx
from langchain_core.tools import BaseTool, tool

__all__ = ["TOOLS"]


def _base() -> str:
    return os.environ.get("PAYMENTS_URL", "http://127.0.0.1:8790")


@tool
def lookup_order(order_id: str) -> str:
    """Look up an order by id: customer, amount and the card charges made for it."""
    return httpx.get(f"{_base()}/orders/{order_id}", timeout=10).text


@tool
def verify_charge(order_id: str) -> str:
    """Check whether an order was charged more than once for the same amount."""
    return httpx.get(f"{_base()}/orders/{order_id}/charges/check", timeout=10).text


@tool
def issue_refund(order_id: str, charge_id: str, amount: float, reason: str) -> str:
    """Refund one card charge of an order. Only refund a verified duplicate."""
    body = {"order_id": order_id, "charge_id": charge_id, "amount": amount, "reason": reason}
    return httpx.post(f"{_base()}/refunds", json=body, timeout=10).text


TOOLS: list[BaseTool] = [lookup_order, verify_charge, issue_refund]
