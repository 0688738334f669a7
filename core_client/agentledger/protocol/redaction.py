"""The one redaction table shared by the server (write time, before the checksum) and the client.

:func:`redact` returns a redacted *copy* of a JSON-like value. Always on (the secrets):

* **Secret-named keys**: the value under a mapping key whose name is, or ends with, one of
  :data:`SECRET_KEYS` becomes ``"[REDACTED]"``, whatever its type. Names are compared
  case-insensitively after splitting camelCase and separators into words, so ``Authorization``,
  ``X-Api-Key``, ``apiKey``, ``access_token``, ``db_password``, ``MYSQL_PWD`` and
  ``clientSecret`` all match, while ``token_usage``, ``max_tokens``, ``author`` and
  ``authority`` do not. Keys naming a secret as their *first* words (``password_hint``,
  ``secret_key``) match too, except the names in ``_SUFFIX_ONLY`` (``token_usage``,
  ``auth_method``, ``jwt_expiry`` are not secrets).
* **Header pairs**: in a list of ``[name, value]`` pairs (``[["Authorization", "Bearer ..."]]``)
  and in ``{"name": ..., "value": ...}`` / ``{"key": ..., "value": ...}`` mappings, the value
  of a secret-named header becomes ``"[REDACTED]"``.
* **Secret shapes in strings** (:data:`SECRET_REGEXES`): ``key=value`` and ``"key": "value"``
  with a secret-named key (URL query parameters included, plus OpenTelemetry's ``sig`` and
  ``Signature``), the password of ``scheme://user:password@host`` and the credential after
  ``Bearer``/``Authorization: Basic`` become ``[REDACTED]``; PEM private key blocks, JWTs,
  ``sk-`` API keys (OpenAI, Anthropic), Stripe, GitHub, Slack and AWS access key ids become
  ``[REDACTED:<name>]``.

Opt-in (personal data, by name in :data:`PATTERN_NAMES`): matching substrings of string values
become ``"[REDACTED:<name>]"``: ``email``; ``phone`` (9–15 digits in groups, optional ``+``
country code); ``card`` (13–19 digits passing the Luhn check, ISO/IEC 7812); ``iban``
(ISO 13616, mod-97 check); ``ipv4`` (dotted quad, each octet 0–255).

Every pattern runs in time linear in the string, and long strings are scanned in windows (see
``docs/design/redaction.md`` for the rules a new pattern must follow). The walk is iterative.
Mapping keys are never rewritten; tuples come back as lists (JSON has no tuples).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Collection
from typing import Any

from agentledger.protocol._redact_walk import Sub, walk

__all__ = [
    "MAX_MATCH_CHARS",
    "PATTERN_NAMES",
    "PATTERN_REGEXES",
    "REDACTED",
    "SECRET_KEYS",
    "SECRET_PATTERN_NAMES",
    "SECRET_REGEXES",
    "SECRET_TRIGGERS",
    "iban_ok",
    "is_secret_key",
    "luhn_ok",
    "might_hold_secrets",
    "redact",
]

#: The replacement for a value under a secret-named key.
REDACTED = "[REDACTED]"

#: Secret key names; compared case-insensitively, word-wise (see module docstring). Drawn from
#: the field names sentry-python scrubs by default; its plain ``session`` is left out on purpose
#: (``session_id`` here names an agent session, not a login).
SECRET_KEYS: frozenset[str] = frozenset(
    {
        "password",
        "passwd",
        "pwd",
        "passphrase",
        "passcode",
        "secret",
        "token",
        "api_key",
        "apikey",
        "auth",
        "authorization",
        "bearer",
        "jwt",
        "cookie",
        "credentials",
        "credential",
        "csrf",
        "xsrf",
        "csrftoken",
        "private_key",
        "privatekey",
        "access_key",
        "access_key_id",
        "client_secret",
        "sessionid",
        "phpsessid",
    }
)

# Names that only count as the last word(s) of a key: "token_usage" is a token *count*,
# "auth_method" and "credentials_path" name no secret.
_SUFFIX_ONLY = frozenset({"token", "cookie", "auth", "bearer", "jwt", "credentials", "credential"})

# Query-parameter names that carry a signature (OpenTelemetry's ``url.full`` redacts them).
_PARAM_ONLY = frozenset({"sig", "signature"})

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
    return False


@functools.lru_cache(maxsize=4096)
def _is_secret_param(name: str) -> bool:
    return is_secret_key(name) or _WORD_SPLIT.split(name)[-1].lower() in _PARAM_ONLY


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


# -- secret shapes (always on) ------------------------------------------------------------------

_TOKEN = r"[A-Za-z0-9_-]"  # base64url and the like
#: Secret shapes inside strings, in the order they run. A match with a ``secret`` group has only
#: that group replaced (by ``[REDACTED]``: ``password=[REDACTED]``); a whole match becomes
#: ``[REDACTED:<name>]``. The lookbehind *after* a literal keeps the literal as the engine's
#: fast prefix while still refusing a start inside a longer word.
SECRET_REGEXES: dict[str, re.Pattern[str]] = {
    "private_key": re.compile(
        r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY-----(?:[^-]{1,128}+|-(?!----)){0,192}+"
        r"(?:-----END[A-Z0-9 ]{0,40}PRIVATE KEY-----)?"
    ),
    "jwt": re.compile(
        rf"eyJ(?<!{_TOKEN}eyJ){_TOKEN}{{5,8192}}+\.{_TOKEN}{{5,8192}}+\.{_TOKEN}{{0,8192}}+"
    ),
    "api_key": re.compile(rf"sk-(?<!{_TOKEN}sk-){_TOKEN}{{20,1024}}+"),
    "stripe_key": re.compile(r"(?<![A-Za-z0-9_])[sr]k_(?:live|test)_[A-Za-z0-9]{16,1024}+"),
    "github_token": re.compile(
        r"(?<![A-Za-z0-9_])(?:gh[pousr]_|github_pat_)[A-Za-z0-9_]{20,1024}+"
    ),
    "slack_token": re.compile(r"xox(?<![A-Za-z0-9-]xox)[abposr]-[A-Za-z0-9-]{10,1024}+"),
    "aws_key": re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Z0-9])"),
    "url_password": re.compile(
        r"://(?<=[A-Za-z0-9]://)[^\s:/@?#\[\]]{0,256}+:(?P<secret>[^\s/?#]{1,256})@"
    ),
    "bearer": re.compile(
        r"(?i)(?<![A-Za-z0-9])bearer\s{1,8}+(?P<secret>[A-Za-z0-9._~+/-]{8,4096}+={0,4}+)"
    ),
    "basic_auth": re.compile(
        r"(?i)authorization[\"']?\s{0,8}+[:=]\s{0,8}+[\"']?basic\s{1,8}+"
        r"(?P<secret>[A-Za-z0-9+/]{4,4096}+={0,4}+)"
    ),
    "key_value": re.compile(
        r"(?<![A-Za-z0-9_.\-])(?P<name>[A-Za-z_][A-Za-z0-9_.\-]{0,63}+)=(?!=)"
        r"(?P<secret>[^\s&#;,\"'<>]{1,4096}+)"
    ),
    "quoted_pair": re.compile(
        r"\"(?P<name>[A-Za-z_][A-Za-z0-9_.\- ]{0,63}+)\"\s{0,8}+:\s{0,8}+"
        r"\"(?P<secret>(?:[^\"\\\n]{1,256}+|\\.){1,64}+)\"?"
        r"|'(?P<name2>[A-Za-z_][A-Za-z0-9_.\- ]{0,63}+)'\s{0,8}+:\s{0,8}+"
        r"'(?P<secret2>(?:[^'\\\n]{1,256}+|\\.){1,64}+)'?"
    ),
}

#: Lower-case literals, one of which every match of a :data:`SECRET_REGEXES` pattern contains
#: (besides the :data:`SECRET_KEYS` words a ``key=value`` match contains): a string without
#: any of them needs no secret-shape pass. The client's byte-level pre-check relies on it.
SECRET_TRIGGERS: tuple[str, ...] = (
    "private key",
    "eyj",
    "sk-",
    "k_live_",
    "k_test_",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "xox",
    "akia",
    "asia",
    "abia",
    "acca",
    "://",
    "bearer",
    "authorization",  # the Basic credential
    "sig",
)

#: Names of the always-on secret shapes (the keys of :data:`SECRET_REGEXES`).
SECRET_PATTERN_NAMES: frozenset[str] = frozenset(SECRET_REGEXES)


def _has_digit(text: str) -> bool:
    return any(ch.isdigit() for ch in text)


def _secret_name(match: re.Match[str]) -> bool:
    name = match.group("name") or match.group("name2")
    return _is_secret_param(name.strip())


# A match failing its check stays as it is (a ``sk-`` word without a digit is no key).
_SECRET_CHECKS: dict[str, Callable[[re.Match[str]], bool]] = {
    "api_key": lambda m: _has_digit(m.group(0)),
    "bearer": lambda m: _has_digit(m.group("secret")),
    "key_value": _secret_name,
    "quoted_pair": _secret_name,
}


# -- personal data (opt-in) ---------------------------------------------------------------------

_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"

#: The shapes of personal data, compiled once; shared with the regression-case pseudonymiser
#: (``agentledger.integrations._cases._pseudonym``) so both find the same things. A match is
#: only personal data when its check also passes (Luhn for cards, mod-97 for IBANs, 9–15
#: digits for phones). Order matters: cards and IBANs before phones (a card number looks like
#: a phone number). The phone shape takes a long last group ("+49 170 1234567"). Every repeat is
#: bounded or possessive; the email's local part (at most 256 characters, RFC 5321 allows 64)
#: starts where a run of its characters starts.
PATTERN_REGEXES: dict[str, re.Pattern[str]] = {
    "card": re.compile(r"(?<![\d-])(?:\d[ -]?){12,18}\d(?!\d)"),
    "iban": re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}\b"),
    "email": re.compile(
        r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]{1,256}+@"
        r"(?:[A-Za-z0-9-]{1,63}+\.){1,16}[A-Za-z]{2,63}"
    ),
    "ipv4": re.compile(rf"(?<![\d.]){_OCTET}(?:\.{_OCTET}){{3}}(?!\.?\d)"),
    "phone": re.compile(
        r"(?<![\w+])(?:\+\d{1,3}+[ .-]?)?(?:\(\d{1,4}+\)[ .-]?)?"
        r"\d{2,4}+(?:[ .-]\d{2,8}+){1,4}(?![\w-])"
    ),
}


def _card_check(match: re.Match[str]) -> bool:
    digits = re.sub(r"\D", "", match.group(0))
    return 13 <= len(digits) <= 19 and luhn_ok(digits)


def _phone_check(match: re.Match[str]) -> bool:
    n = sum(ch.isdigit() for ch in match.group(0))
    return 9 <= n <= 15


_PII_CHECKS: dict[str, Callable[[re.Match[str]], bool]] = {
    "card": _card_check,
    "iban": lambda m: iban_ok(m.group(0)),
    "phone": _phone_check,
}


def _substituter(
    name: str, compiled: re.Pattern[str], check: Callable[[re.Match[str]], bool] | None
) -> Sub:
    marker = f"[REDACTED:{name}]"
    groups = [g for g in ("secret", "secret2") if g in compiled.groupindex]

    def repl(match: re.Match[str]) -> str:
        text = match.group(0)
        if check is not None and not check(match):
            return text
        for group in groups:
            start, end = match.span(group)
            if start >= 0:
                base = match.start()
                return text[: start - base] + REDACTED + text[end - base :]
        return marker

    def sub(value: str) -> str:
        if len(value) <= _WINDOW + MAX_MATCH_CHARS:
            return compiled.sub(repl, value)
        return _windowed_sub(compiled, repl, value)

    return sub


#: Strings longer than a window (plus the overlap) are scanned window by window: one regex call
#: never lets another thread run, so each call is kept to one window (a few milliseconds).
_WINDOW = 1 << 16
#: The overlap of the windows: longer than any match of any pattern plus its lookahead (every
#: repeat is bounded), so a match that starts in a window is found whole, as in one scan.
MAX_MATCH_CHARS = 1 << 15


def _windowed_sub(
    compiled: re.Pattern[str], repl: Callable[[re.Match[str]], str], value: str
) -> str:
    """``compiled.sub(repl, value)``, one window at a time (the same result)."""
    parts: list[str] = []
    size = len(value)
    last = pos = 0
    while pos < size:
        end = min(pos + _WINDOW, size)
        match = compiled.search(value, pos, min(end + MAX_MATCH_CHARS, size))
        if match is None or match.start() >= end:
            pos = end  # a match further on is found again, whole, from the next window
            continue
        parts.append(value[last : match.start()])
        parts.append(repl(match))
        last = pos = match.end()
    parts.append(value[last:])
    return "".join(parts)


_SECRET_SUBS: tuple[Sub, ...] = tuple(
    _substituter(name, rx, _SECRET_CHECKS.get(name)) for name, rx in SECRET_REGEXES.items()
)
_PATTERNS: dict[str, Sub] = {
    name: _substituter(name, rx, _PII_CHECKS.get(name)) for name, rx in PATTERN_REGEXES.items()
}

#: Names accepted by ``redact(..., patterns=...)``.
PATTERN_NAMES: frozenset[str] = frozenset(_PATTERNS)


def _stems(words: Collection[str]) -> tuple[str, ...]:
    """The words that contain no other word ("apikey" contains "key": "key" is enough)."""
    return tuple(sorted(w for w in words if not any(o != w and o in w for o in words)))


def _longest_word(name: str) -> str:
    words = name.split("_")
    return max(reversed(words), key=len)  # "access_key_id" -> "access"; ties: the last word


#: A string holding none of these (lower-cased) needs no secret-shape pass: a ``key=value``
#: match contains every word of its secret name, every other shape one of the triggers.
_STRING_TRIGGERS = _stems(
    {_longest_word(name) for name in SECRET_KEYS} | set(SECRET_TRIGGERS) | {"pass"}
)


#: The triggers of the shapes that need neither ``=`` nor ``:`` (``key=value``,
#: ``"key": "value"``, ``Authorization: Basic`` and ``scheme://`` all do): enough for a string
#: holding neither, which most prose is. Fewer substring tests per string.
_PLAIN_TRIGGERS = ("private key", "eyj", "sk-", "xox", "akia", "asia", "abia", "acca", "bearer")
#: GitHub's and Stripe's prefixes all hold ``_``: tested only when the string does.
_UNDERSCORE_TRIGGERS = ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "k_live_", "k_test_")


_UNDERSCORED_TRIGGERS = _PLAIN_TRIGGERS + _UNDERSCORE_TRIGGERS


def _trie_pattern(words: Collection[str]) -> str:
    """A regex matching any of ``words``, shaped as their trie ("a(?:bia|kia|uth)|..."): at a
    position, each character picks at most one branch, so a search costs the text's length
    times the longest word at worst (linear), and one search over a record is about twice as
    fast as a substring test per word (three times on kilobytes)."""
    tree: dict[str, Any] = {}
    for word in words:
        node = tree
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}  # a word ends here

    def branch(node: dict[str, Any]) -> str:
        if "" in node:  # a shorter word is enough: nothing longer needs matching
            return ""
        alternatives = [re.escape(char) + branch(node[char]) for char in sorted(node)]
        if len(alternatives) == 1:
            return alternatives[0]
        return "(?:" + "|".join(alternatives) + ")"

    return branch(tree)


_ANY_STRING_TRIGGER = re.compile(_trie_pattern(_STRING_TRIGGERS))


def _needs_secret_pass(value: str) -> bool:
    """Whether a string holds a trigger of a secret shape (substring tests, ~50 ns each: ten
    times faster than one case-blind regex over all of them, and each a short call). A plain
    loop: a generator expression under ``any()`` costs about as much again per string."""
    lowered = value.lower()
    if "=" in value or ":" in value:
        triggers = _STRING_TRIGGERS
    elif "_" in value:
        triggers = _UNDERSCORED_TRIGGERS
    else:
        triggers = _PLAIN_TRIGGERS
    for trigger in triggers:  # noqa: SIM110 (the loop is the point, see above)
        if trigger in lowered:
            return True
    return False


def might_hold_secrets(raw: bytes) -> bool:
    """Whether JSON bytes could hold anything the secret rules redact.

    Exact in one direction: a secret-named key (or header name, or ``key=value``) contains every
    word of its secret name and every secret shape contains one of :data:`SECRET_TRIGGERS`, so
    ``False`` means :func:`redact` (without personal-data patterns) would change nothing.
    One search of the triggers' trie-shaped regex over the lower-cased text: linear, and far
    cheaper than a case-blind regex or a substring test per trigger.
    """
    lowered = raw.decode("utf-8", "replace").lower()  # as keys and strings are compared
    return _ANY_STRING_TRIGGER.search(lowered) is not None


@functools.lru_cache(maxsize=64)
def _string_redactor(patterns: frozenset[str]) -> Sub:
    unknown = set(patterns) - PATTERN_NAMES
    if unknown:
        raise ValueError(
            f"unknown redaction pattern(s) {sorted(unknown)}; known: {sorted(PATTERN_NAMES)}"
        )
    pii = [sub for name, sub in _PATTERNS.items() if name in patterns]
    secret_subs = _SECRET_SUBS

    def apply(value: str) -> str:
        if _needs_secret_pass(value):
            for sub in secret_subs:
                value = sub(value)
        for sub in pii:
            value = sub(value)
        return value

    return apply


def redact(value: Any, *, patterns: Collection[str] = (), in_place: bool = False) -> Any:
    """Return a redacted copy of ``value`` (or redact it in place).

    Args:
        value: any JSON-like value: mappings (keys compared via ``str(key)``), lists/tuples,
            strings, numbers, ``None``. Other objects are returned as they are.
        patterns: names from :data:`PATTERN_NAMES` to redact inside string values as well
            (default: none; the secret rules always apply).
        in_place: modify plain dicts and lists in place and return ``value`` itself (tuples
            inside are replaced by redacted lists). For a caller that owns the value, such as
            the server with a freshly parsed request body: no copy is made. Default: a copy,
            the input is never modified.

    Returns:
        The same shape with secret values replaced by ``"[REDACTED]"`` and shape matches by
        ``"[REDACTED:<name>]"``. Mappings come back as ``dict``, tuples as ``list``.

    Raises:
        ValueError: an unknown pattern name.
    """
    sub = _string_redactor(frozenset(patterns))
    return walk(value, sub, is_secret_key, REDACTED, in_place=in_place)
