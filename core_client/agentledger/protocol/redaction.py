"""The one redaction table shared by the server (write time, before the checksum) and the client.

:func:`redact` returns a redacted *copy* of a JSON-like value:

* **Secret-named keys** (always on): the value under a mapping key whose name is, or ends with,
  one of :data:`SECRET_KEYS` becomes ``"[REDACTED]"``, whatever its type. Names are compared
  case-insensitively after splitting camelCase and separators into words, so ``Authorization``,
  ``X-Api-Key``, ``apiKey``, ``access_token``, ``db_password`` and ``clientSecret`` all match,
  while ``token_usage``, ``input_tokens`` and ``max_tokens`` (token *counts*, see the wire
  contract's ``data.token_usage``) do not. Keys naming a secret as their *first* words
  (``password_hint``, ``secret_key``, ``api_key_id``) match too, except ``token``/``cookie``,
  which only match as the last word (``token_usage`` is not a secret).
* **Patterns** (opt-in, by name in :data:`PATTERN_NAMES`): matching substrings of string values
  become ``"[REDACTED:<name>]"``: ``email``; ``phone`` (9–15 digits in groups, optional ``+``
  country code); ``card`` (13–19 digits passing the Luhn check, ISO/IEC 7812); ``iban``
  (ISO 13616, mod-97 check); ``ipv4`` (dotted quad, each octet 0–255).

The walk is iterative (no recursion limit), so deeply nested values are safe. Mapping keys are
never rewritten; tuples come back as lists (JSON has no tuples).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Collection, Mapping
from typing import Any

__all__ = [
    "PATTERN_NAMES",
    "PATTERN_REGEXES",
    "REDACTED",
    "SECRET_KEYS",
    "iban_ok",
    "is_secret_key",
    "luhn_ok",
    "redact",
]

#: The replacement for a value under a secret-named key.
REDACTED = "[REDACTED]"

#: Secret key names; compared case-insensitively, word-wise (see module docstring).
SECRET_KEYS: frozenset[str] = frozenset(
    {
        "password",
        "passwd",
        "secret",
        "token",
        "api_key",
        "apikey",
        "authorization",
        "cookie",
        "private_key",
        "access_key",
        "client_secret",
    }
)

# Names that only count as the last word(s) of a key: "token_usage" is a token *count*.
_SUFFIX_ONLY = frozenset({"token", "cookie"})

_WORD_SPLIT = re.compile(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


@functools.lru_cache(maxsize=4096)
def is_secret_key(key: str) -> bool:
    """Whether a mapping key names a secret (see the module docstring for the rule).

    Args:
        key: the mapping key as written by the caller (any case, any separators).
    """
    words = [w.lower() for w in _WORD_SPLIT.split(key) if w]
    if not words:
        return False
    joined = "_".join(words)
    for name in SECRET_KEYS:
        if joined == name or joined.endswith("_" + name):
            return True
        if name not in _SUFFIX_ONLY and joined.startswith(name + "_"):
            return True
    # "apiKey" -> ["api", "key"] is covered above; "APIKEY" -> ["apikey"] too.
    return False


def luhn_ok(digits: str) -> bool:
    """Whether a string of ASCII digits passes the Luhn check (ISO/IEC 7812 card numbers)."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2 == 1:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def iban_ok(candidate: str) -> bool:
    """Whether ``candidate`` (spaces allowed) is an IBAN with a valid ISO 13616 mod-97 check."""
    s = candidate.replace(" ", "").upper()
    if not 15 <= len(s) <= 34:
        return False
    rearranged = s[4:] + s[:4]
    number = "".join(str(int(ch, 36)) for ch in rearranged)
    return int(number) % 97 == 1


_Sub = Callable[[str], str]


_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"

#: The shapes of personal data, compiled once; shared with the regression-case pseudonymiser
#: (``agentledger.integrations._cases._pseudonym``) so both find the same things. A match is
#: only personal data when its check also passes (Luhn for cards, mod-97 for IBANs, 9–15
#: digits for phones). Order matters: cards and IBANs before phones (a card number looks like
#: a phone number). The phone shape takes a long last group ("+49 170 1234567").
PATTERN_REGEXES: dict[str, re.Pattern[str]] = {
    "card": re.compile(r"(?<![\d-])(?:\d[ -]?){12,18}\d(?!\d)"),
    "iban": re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}\b"),
    "email": re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}"),
    "ipv4": re.compile(rf"(?<![\d.]){_OCTET}(?:\.{_OCTET}){{3}}(?!\.?\d)"),
    "phone": re.compile(
        r"(?<![\w+])(?:\+\d{1,3}[ .-]?)?(?:\(\d{1,4}\)[ .-]?)?"
        r"\d{2,4}(?:[ .-]\d{2,8}){1,4}(?![\w-])"
    ),
}


def _card_check(text: str) -> bool:
    digits = re.sub(r"\D", "", text)
    return 13 <= len(digits) <= 19 and luhn_ok(digits)


def _phone_check(text: str) -> bool:
    n = sum(ch.isdigit() for ch in text)
    return 9 <= n <= 15


_CHECKS: dict[str, Callable[[str], bool]] = {
    "card": _card_check,
    "iban": iban_ok,
    "phone": _phone_check,
}


def _checked(name: str) -> _Sub:
    compiled = PATTERN_REGEXES[name]
    check = _CHECKS.get(name)
    marker = f"[REDACTED:{name}]"

    def repl(match: re.Match[str]) -> str:
        text = match.group(0)
        if check is not None and not check(text):
            return text
        return marker

    def sub(value: str) -> str:
        return compiled.sub(repl, value)

    return sub


_PATTERNS: dict[str, _Sub] = {name: _checked(name) for name in PATTERN_REGEXES}

#: Names accepted by ``redact(..., patterns=...)``.
PATTERN_NAMES: frozenset[str] = frozenset(_PATTERNS)


def _string_redactor(patterns: Collection[str]) -> _Sub | None:
    if not patterns:
        return None
    return _string_redactor_for(frozenset(patterns))


@functools.lru_cache(maxsize=64)
def _string_redactor_for(patterns: frozenset[str]) -> _Sub | None:
    unknown = set(patterns) - PATTERN_NAMES
    if unknown:
        raise ValueError(
            f"unknown redaction pattern(s) {sorted(unknown)}; known: {sorted(PATTERN_NAMES)}"
        )
    subs = [sub for name, sub in _PATTERNS.items() if name in patterns]
    if not subs:
        return None

    def apply(value: str) -> str:
        for sub in subs:
            value = sub(value)
        return value

    return apply


def redact(value: Any, *, patterns: Collection[str] = (), in_place: bool = False) -> Any:
    """Return a redacted copy of ``value`` (or redact it in place).

    Args:
        value: any JSON-like value: mappings (keys compared via ``str(key)``), lists/tuples,
            strings, numbers, ``None``. Other objects are returned as they are.
        patterns: names from :data:`PATTERN_NAMES` to redact inside string values
            (default: none, only secret-named keys are redacted).
        in_place: modify plain dicts and lists in place and return ``value`` itself (tuples
            inside are replaced by redacted lists). For a caller that owns the value, such as
            the server with a freshly parsed request body: no copy is made. Default: a copy,
            the input is never modified.

    Returns:
        The same shape with secret values replaced by ``"[REDACTED]"`` and pattern matches by
        ``"[REDACTED:<name>]"``. Mappings come back as ``dict``, tuples as ``list``.

    Raises:
        ValueError: an unknown pattern name.
    """
    sub = _string_redactor(patterns)
    if type(value) is dict or type(value) is list:
        if in_place:
            _redact_in_place(value, sub)
            return value
        try:
            return _copy_fast(value, sub, 0)
        except _TooDeep:
            pass
    return _copy_iterative(value, sub)


def _redact_in_place(root: dict[Any, Any] | list[Any], sub: _Sub | None) -> None:
    """Iterative in-place walk over plain dicts/lists (no recursion limit, no copies)."""
    stack: list[Any] = [root]
    pop = stack.pop
    push = stack.append
    while stack:
        node = pop()
        if type(node) is dict:
            for key, item in node.items():
                if is_secret_key(key if type(key) is str else str(key)):
                    node[key] = REDACTED
                    continue
                kind = type(item)
                if kind is dict or kind is list:
                    push(item)
                elif kind is str:
                    if sub is not None:
                        node[key] = sub(item)
                elif kind in _SCALARS:
                    continue
                elif isinstance(item, Mapping | tuple):
                    node[key] = _copy_iterative(item, sub)
        else:
            for index, item in enumerate(node):
                kind = type(item)
                if kind is dict or kind is list:
                    push(item)
                elif kind is str:
                    if sub is not None:
                        node[index] = sub(item)
                elif kind in _SCALARS:
                    continue
                elif isinstance(item, Mapping | tuple):
                    node[index] = _copy_iterative(item, sub)


class _TooDeep(Exception):
    pass


_FAST_DEPTH = 200
_SCALARS = (str, int, float, bool, type(None))


def _copy_fast(value: Any, sub: _Sub | None, depth: int) -> Any:
    """Recursive copy for plain dicts/lists (the common case, ~3x faster than the stack walk)."""
    if depth > _FAST_DEPTH:
        raise _TooDeep
    kind = type(value)
    if kind is dict:
        out: dict[Any, Any] = {}
        for key, item in value.items():
            if is_secret_key(key if type(key) is str else str(key)):
                out[key] = REDACTED
            elif type(item) in _SCALARS:
                out[key] = sub(item) if sub is not None and type(item) is str else item
            else:
                out[key] = _copy_fast(item, sub, depth + 1)
        return out
    if kind is list or kind is tuple:
        return [
            (sub(item) if sub is not None and type(item) is str else item)
            if type(item) in _SCALARS
            else _copy_fast(item, sub, depth + 1)
            for item in value
        ]
    if isinstance(value, Mapping | list | tuple):  # a Mapping subclass or the like
        return _copy_iterative(value, sub)
    return sub(value) if sub is not None and isinstance(value, str) else value


def _copy_iterative(value: Any, sub: _Sub | None) -> Any:
    """Stack-based copy: no recursion limit, any Mapping/sequence types."""

    def leaf(v: Any) -> Any:
        if sub is not None and isinstance(v, str):
            return sub(v)
        return v

    if not isinstance(value, Mapping | list | tuple):
        return leaf(value)

    root: Any = {} if isinstance(value, Mapping) else []
    # Stack of (source container, destination container); iterative to survive deep nesting.
    stack: list[tuple[Any, Any]] = [(value, root)]
    while stack:
        src, dst = stack.pop()
        if isinstance(src, Mapping):
            for k, v in src.items():
                if is_secret_key(str(k)):
                    dst[k] = REDACTED
                elif isinstance(v, Mapping):
                    child: Any = {}
                    dst[k] = child
                    stack.append((v, child))
                elif isinstance(v, list | tuple):
                    child = []
                    dst[k] = child
                    stack.append((v, child))
                else:
                    dst[k] = leaf(v)
        else:
            for v in src:
                if isinstance(v, Mapping):
                    child = {}
                    dst.append(child)
                    stack.append((v, child))
                elif isinstance(v, list | tuple):
                    child = []
                    dst.append(child)
                    stack.append((v, child))
                else:
                    dst.append(leaf(v))
    return root
