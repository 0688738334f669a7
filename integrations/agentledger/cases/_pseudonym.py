"""Personal data out, synthetic stand-ins in: consistent within a case, same shape.

What is replaced and how (secrets, e-mails, phones, cards, IBANs, names, order ids):
``docs/design/cases.md``. Detection reuses the checks of :mod:`agentledger.protocol.redaction`.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable
from typing import Any

from agentledger.protocol.redaction import (
    PATTERN_REGEXES,
    REDACTED,
    is_secret_key,
)
from agentledger.protocol.redaction import iban_ok as _iban_ok
from agentledger.protocol.redaction import luhn_ok as _luhn_ok

__all__ = ["Pseudonymizer"]

_STAND_IN_NAMES = (
    ("Alex", "Morgan"),
    ("Sam", "Taylor"),
    ("Jordan", "Lee"),
    ("Casey", "Brooks"),
    ("Robin", "Hayes"),
    ("Jamie", "Quinn"),
    ("Avery", "Stone"),
    ("Riley", "Parker"),
)

_NAME_KEYS = frozenset(
    {
        "name",
        "full_name",
        "fullname",
        "first_name",
        "firstname",
        "last_name",
        "lastname",
        "surname",
        "given_name",
        "family_name",
        "customer",
        "customer_name",
        "contact",
        "contact_name",
        "holder",
        "cardholder",
        "card_holder",
        "account_holder",
        "recipient",
        "recipient_name",
        "user_name",
        "display_name",
    }
)

_CAPWORD = r"[A-Z][a-z]+(?:[-'][A-Z][a-z]+)?"
_PERSON = rf"{_CAPWORD}(?: {_CAPWORD}){{0,2}}"
_INTRO_NAME = re.compile(
    rf"\b(?:[Mm]y name is|[Nn]ame:|I am|I'm|[Tt]his is|Dear|Mr\.?|Mrs\.?|Ms\.?|Dr\.?)\s+({_PERSON})"
)
_NOT_NAMES = frozenset(
    {"The", "A", "An", "I", "Sorry", "Happy", "Here", "Not", "So", "Just", "Customer", "Support"}
    | {"Team", "Sir", "Madam", "There", "All", "Everyone", "Agent", "Order", "Your", "Our"}
)

_SECRET_STRINGS = re.compile(
    r"\bBearer\s+[A-Za-z0-9._~+/=-]{8,}"
    r"|\b(?:sk|pk|rk)[-_](?:live[-_]|test[-_]|proj[-_])?[A-Za-z0-9]{16,}"
    r"|\bAKIA[0-9A-Z]{16}\b"
    r"|\bgh[pousr]_[A-Za-z0-9]{30,}"
    r"|\bxox[abpr]-[A-Za-z0-9-]{10,}"
)
# The same shapes as the client's redaction (one table, agentledger.protocol.redaction).
_CARD = PATTERN_REGEXES["card"]
_IBAN = PATTERN_REGEXES["iban"]
_EMAIL = PATTERN_REGEXES["email"]
_PHONE = PATTERN_REGEXES["phone"]
_ORDER_ID = re.compile(r"\b(?:[A-Z]{1,4}-?\d{4,12}|[A-Z]{2,4}_[A-Za-z0-9]{4,})\b")


def _digits(text: str) -> str:
    return re.sub(r"\D", "", text)


class Pseudonymizer:
    """Replaces personal data in JSON-like values with consistent synthetic stand-ins.

    Args:
        order_ids: also replace order-like ids (letters + 4..12 digits, ``ORD-123456``).
        seed: seed of the stand-in digits (the same seed and input give the same output).

    Use :meth:`learn` on every value of a case first (it collects names), then
    :meth:`apply` on each value.
    """

    def __init__(self, *, order_ids: bool = False, seed: int = 0) -> None:
        self._order_ids = order_ids
        self._seed = seed
        self._maps: dict[str, dict[str, str]] = {}
        self._names: dict[str, str] = {}
        self._people = 0

    # -- names ------------------------------------------------------------------------------

    def _add_name(self, name: str) -> None:
        words = name.split()
        if not words or words[0] in _NOT_NAMES or name in self._names:
            return
        index = self._people
        self._people += 1
        first, last = _STAND_IN_NAMES[index % len(_STAND_IN_NAMES)]
        suffix = "" if index < len(_STAND_IN_NAMES) else str(index // len(_STAND_IN_NAMES) + 1)
        stand = [first + suffix, last][: len(words)] + ["Lane"] * (len(words) - 2)
        self._names[name] = " ".join(stand)
        for word, replacement in zip(words, stand, strict=False):
            if len(word) >= 3 and word not in self._names:
                self._names[word] = replacement

    def learn(self, value: Any) -> None:
        """Collect names from ``value`` (name-like keys, introducing phrases)."""
        self._walk(value, None, self._learn_string)

    def _learn_string(self, text: str, key: str | None) -> str:
        if key is not None and key.lower() in _NAME_KEYS:
            candidate = text.strip()
            if re.fullmatch(_PERSON, candidate):
                self._add_name(candidate)
        for match in _INTRO_NAME.finditer(text):
            self._add_name(match.group(1))
        return text

    # -- replacement ------------------------------------------------------------------------

    def apply(self, value: Any) -> Any:
        """A copy of ``value`` with secrets redacted and personal data replaced."""
        return self._walk(value, None, self._replace_string)

    def _stand_in(self, kind: str, original: str, make: Callable[[random.Random], str]) -> str:
        table = self._maps.setdefault(kind, {})
        found = table.get(original)
        if found is None:
            rng = random.Random(f"{self._seed}:{kind}:{len(table)}")
            found = make(rng)
            table[original] = found
        return found

    def _card(self, match: re.Match[str]) -> str:
        text = match.group(0)
        digits = _digits(text)
        if not (13 <= len(digits) <= 19 and _luhn_ok(digits)):
            return text

        def make(rng: random.Random) -> str:
            body = "4000" + "".join(str(rng.randrange(10)) for _ in range(len(digits) - 5))
            check = next(str(d) for d in range(10) if _luhn_ok(body + str(d)))
            return _regroup(text, body + check)

        return self._stand_in("card", digits, make)

    def _iban(self, match: re.Match[str]) -> str:
        text = match.group(0)
        if not _iban_ok(text):
            return text
        compact = text.replace(" ", "").upper()

        def make(rng: random.Random) -> str:
            bban = "".join(
                str(rng.randrange(10)) if ch.isdigit() else chr(65 + rng.randrange(26))
                for ch in compact[4:]
            )
            number = int("".join(str(int(ch, 36)) for ch in bban + compact[:2] + "00"))
            new = f"{compact[:2]}{98 - number % 97:02d}{bban}"
            return _regroup(text, new)

        return self._stand_in("iban", compact, make)

    def _email(self, match: re.Match[str]) -> str:
        original = match.group(0).lower()
        return self._stand_in(
            "email", original, lambda _: f"user{self._count('email')}@example.com"
        )

    def _count(self, kind: str) -> int:
        return len(self._maps.get(kind, {})) + 1

    def _phone(self, match: re.Match[str]) -> str:
        text = match.group(0)
        if not 9 <= len(_digits(text)) <= 15:
            return text
        prefix = re.match(r"\+\d{1,3}", text)
        keep = prefix.end() if prefix else 0

        def make(rng: random.Random) -> str:
            tail = "".join(str(rng.randrange(10)) if ch.isdigit() else ch for ch in text[keep:])
            return text[:keep] + tail

        return self._stand_in("phone", _digits(text), make)

    def _order_id(self, match: re.Match[str]) -> str:
        text = match.group(0)

        def make(rng: random.Random) -> str:
            letters = re.match(r"[A-Z]+[-_]?", text)
            head = letters.group(0) if letters else ""
            return head + "".join(
                str(rng.randrange(10)) if ch.isdigit() else ch for ch in text[len(head) :]
            )

        return self._stand_in("order_id", text, make)

    def _replace_string(self, text: str, key: str | None) -> str:
        text = _SECRET_STRINGS.sub(REDACTED, text)
        # One pass over the original text: a span replaced by an earlier kind (a card, an
        # IBAN) is not matched again by a later one (its digits look like a phone number).
        kinds: list[tuple[re.Pattern[str], Callable[[re.Match[str]], str]]] = [
            (_CARD, self._card),
            (_IBAN, self._iban),
            (_EMAIL, self._email),
            (_PHONE, self._phone),
        ]
        if self._order_ids:
            kinds.append((_ORDER_ID, self._order_id))
        spans: list[tuple[int, int, str]] = []
        for pattern, replace in kinds:
            for match in pattern.finditer(text):
                start, end = match.span()
                if any(start < e and s < end for s, e, _ in spans):
                    continue
                new = replace(match)
                if new != match.group(0):
                    spans.append((start, end, new))
        if spans:
            spans.sort()
            parts: list[str] = []
            last = 0
            for start, end, new in spans:
                parts.append(text[last:start])
                parts.append(new)
                last = end
            parts.append(text[last:])
            text = "".join(parts)
        if self._names:
            # Longest first, whole words only: "Dana Reyes" before "Dana".
            for name in sorted(self._names, key=len, reverse=True):
                if name in text:
                    text = re.sub(rf"\b{re.escape(name)}\b", self._names[name], text)
        return text

    # -- walk -------------------------------------------------------------------------------

    def _walk(
        self, value: Any, key: str | None, on_string: Callable[[str, str | None], str]
    ) -> Any:
        if isinstance(value, dict):
            out: dict[str, Any] = {}
            for k, item in value.items():
                name = str(k)
                out[k] = REDACTED if is_secret_key(name) else self._walk(item, name, on_string)
            return out
        if isinstance(value, list | tuple):
            return [self._walk(item, key, on_string) for item in value]
        if isinstance(value, str):
            stripped = value.strip()
            if stripped[:1] in ("{", "[") and stripped[-1:] in ("}", "]"):
                try:
                    parsed = json.loads(stripped)
                except ValueError:
                    return on_string(value, key)
                return json.dumps(self._walk(parsed, key, on_string), ensure_ascii=False)
            return on_string(value, key)
        return value


def _regroup(template: str, digits: str) -> str:
    """``digits`` laid out in the grouping of ``template`` (spaces/dashes kept)."""
    out: list[str] = []
    it = iter(digits)
    for ch in template:
        out.append(next(it) if ch.isalnum() else ch)
    return "".join(out)
