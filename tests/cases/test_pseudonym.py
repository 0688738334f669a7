"""Pseudonymisation: consistent stand-ins that keep their shape; secrets dropped."""

from __future__ import annotations

import json
import re

import pytest

from agentledger.cases import Pseudonymizer
from agentledger.protocol.redaction import redact

pytestmark = pytest.mark.langchain


def clean(value: object, **options: bool) -> object:
    pseudo = Pseudonymizer(**options)
    pseudo.learn(value)
    return pseudo.apply(value)


def test_same_original_same_stand_in_across_strings_and_json_strings() -> None:
    value = {
        "inputs": ["My name is Ana Ruiz, ana.ruiz@mail.test, +44 20 7946 0958, order ORD-99812"],
        "stub": json.dumps(
            {
                "customer": "Ana Ruiz",
                "email": "ANA.RUIZ@mail.test",
                "tel": "+44 20 7946 0958",
                "order": "ORD-99812",
            }
        ),
        "answer": "Thanks Ana, refund sent to you.",
    }
    out = clean(value)
    assert isinstance(out, dict)
    stub = json.loads(out["stub"])
    assert stub["customer"] == "Alex Morgan" and "Alex Morgan" in out["inputs"][0]
    assert out["answer"] == "Thanks Alex, refund sent to you."
    assert stub["email"] == "user1@example.com" and "user1@example.com" in out["inputs"][0]
    assert re.fullmatch(r"\+44 \d\d \d{4} \d{4}", stub["tel"]) and stub["tel"] in out["inputs"][0]
    assert stub["tel"] != "+44 20 7946 0958"
    assert stub["order"] == "ORD-99812"  # order ids only when asked
    again = clean(value, order_ids=True)
    assert isinstance(again, dict)
    new_order = json.loads(again["stub"])["order"]
    assert re.fullmatch(r"ORD-\d{5}", new_order) and new_order != "ORD-99812"
    assert new_order in again["inputs"][0]


def test_cards_and_ibans_stay_valid_and_non_matches_stay() -> None:
    out = clean(
        [
            "card 4111-1111-1111-1111",
            "IBAN GB82 WEST 1234 5698 7654 32",
            "ref 1234 5678 9012 3456",
            "on 2026-11-28 for 49.90 EUR",
        ]
    )
    assert isinstance(out, list)
    card = out[0].split()[1]
    assert re.fullmatch(r"4000-\d{4}-\d{4}-\d{4}", card)
    assert redact(card, patterns=["card"]) == "[REDACTED:card]"  # still Luhn-valid
    iban = out[1].removeprefix("IBAN ")
    assert iban.startswith("GB") and len(iban) == len("GB82 WEST 1234 5698 7654 32")
    assert iban != "GB82 WEST 1234 5698 7654 32"
    assert redact(iban, patterns=["iban"]) == "[REDACTED:iban]"  # mod-97 still holds
    assert out[2] == "ref 1234 5678 9012 3456"  # not Luhn-valid: not a card
    assert out[3] == "on 2026-11-28 for 49.90 EUR"


def test_secrets_by_key_and_by_shape() -> None:
    out = clean(
        {
            "headers": {"Authorization": "Bearer abc"},
            "clientSecret": "x",
            "note": "use sk-proj-ABCDEFGHIJKLMNOPQRST and AKIAABCDEFGHIJKLMNOP",
            "token_usage": {"input_tokens": 5},
        }
    )
    assert out == {
        "headers": {"Authorization": "[REDACTED]"},
        "clientSecret": "[REDACTED]",
        "note": "use [REDACTED] and [REDACTED]",
        "token_usage": {"input_tokens": 5},
    }
