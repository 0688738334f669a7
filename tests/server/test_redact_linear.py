"""Every redaction pattern runs in time linear in its input, whatever the input.

A pattern that backtracks turns one long string of near misses into seconds of CPU (an email
pattern once took 21 s on 200,000 characters, holding the server's interpreter lock). Each
pattern here meets strings of 10 KB, 100 KB and 1 MB made of one repeated near miss of it.

No absolute time is asserted (the numbers are in ``benchmarks/bench_redaction.py``), and a raw
time ratio is not either: on a loaded machine a linear scan of 1 MB costs 10-30x one of 100 KB
(caches, other processes). Each pattern's time is divided by that of a reference scan of the
same string, timed alternately with it: the quotient stays flat for a linear pattern and grows
10x per step for a quadratic one; it may grow at most ``GROWTH`` per step.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable

import pytest

from agentledger.protocol.redaction import (
    MAX_MATCH_CHARS,
    PATTERN_NAMES,
    PATTERN_REGEXES,
    SECRET_REGEXES,
    might_hold_secrets,
    redact,
)

GENERIC = ("a", " ", "\\")
#: Per pattern, strings that start a match over and over and fail late.
NEAR_MISSES: dict[str, tuple[str, ...]] = {
    "api_key": ("sk-", "sk-a"),
    "stripe_key": ("sk_live_", "rk_test_a", "sk_"),
    "aws_key": ("AKIA", "AKIA1234", "A1"),
    "basic_auth": ("authorization: basic ", "authorization:", "Authorization: Basic a"),
    "bearer": ("bearer ", "Bearer a", "bearer"),
    "card": ("1 ", "1-", "1", "12 "),
    "email": ("a@", "a@a.", "a.", "aa@aa.aa", "@a"),
    "github_token": ("ghp_", "github_pat_", "ghp_a"),
    "iban": ("DE89", "DE89 ", "A1 ", "DE"),
    "ipv4": ("1.", "1.1.1.", "255.", "1"),
    "jwt": ("eyJ", "eyJa.", "eyJaaaaa.eyJaaaaa.", "eyJaaaaa."),
    "key_value": ("a=", "a=b&", "token=a=", "?token="),
    "phone": ("+1 ", "(1) ", "12 345", "1 ", "1-"),
    "private_key": ("-", "-----", "-----BEGIN PRIVATE KEY-----", "-----BEGIN PRIVATE KEY-----a-"),
    "quoted_pair": ('"a":"', '"a": "\\', "'a':'", '"'),
    "slack_token": ("xoxb-", "xox", "xoxb-a"),
    "url_password": ("://", "://a:", "a://a:b", "a://a:b@"),
}

SIZES = (10_000, 100_000, 1_000_000)
#: Growth allowed from 100 KB to 1 MB (linear ~1, quadratic ~10), and from 10 KB to 100 KB,
#: a step that only stops a quadratic pattern early (times of 10 KB are noisier).
GROWTH = 5.0
GROWTH_EARLY = 8.0
#: Tries at every position and fails at once: linear, the yardstick.
REFERENCE = re.compile(r"(?<!\x01)\x00")


def _filled(unit: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size]


def _relative_cost(run: Callable[[str], object], text: str) -> float:
    """Best time of ``run`` over best time of the reference scan, taken alternately (at least
    three times each, more while they are quick: the best of many is steady under load)."""
    best = best_reference = float("inf")
    spent = 0.0
    for attempt in range(9):
        start = time.perf_counter()
        REFERENCE.search(text)
        middle = time.perf_counter()
        run(text)
        end = time.perf_counter()
        best_reference = min(best_reference, middle - start)
        best = min(best, end - middle)
        spent += end - start
        if attempt >= 2 and spent > 0.3:
            break
    return best / best_reference


def _superlinear(
    run: Callable[[str], object], units: tuple[str, ...], sizes: tuple[int, ...] = SIZES
) -> list[str]:
    """The near misses on which ``run`` grows faster than linearly (stops at the first step)."""
    found: list[str] = []
    for unit in units:
        previous = _relative_cost(run, _filled(unit, sizes[0]))
        for step, size in enumerate(sizes[1:], start=1):
            cost = _relative_cost(run, _filled(unit, size))
            if cost > (GROWTH if step == len(sizes) - 1 else GROWTH_EARLY) * previous:
                found.append(f"{unit!r}: {previous:.2f} -> {cost:.2f} x reference at {size:,}")
                break
            previous = cost
    return found


ALL_PATTERNS: dict[str, re.Pattern[str]] = {**SECRET_REGEXES, **PATTERN_REGEXES}


def test_every_pattern_has_near_misses() -> None:
    assert set(NEAR_MISSES) == set(ALL_PATTERNS)


@pytest.mark.parametrize("name", sorted(ALL_PATTERNS))
def test_pattern_is_linear(name: str) -> None:
    compiled = ALL_PATTERNS[name]
    assert not _superlinear(lambda text: compiled.sub("", text), NEAR_MISSES[name] + GENERIC)


def test_redact_with_every_pattern_is_linear() -> None:
    everything = sorted(PATTERN_NAMES)
    units = tuple(units[0] for units in NEAR_MISSES.values())
    assert not _superlinear(lambda text: redact({"t": text}, patterns=everything), units)


def test_the_secret_pre_check_is_linear() -> None:
    # one search for any trigger word; near misses are their long shared prefixes
    units = ("github_pa", "gh", "acces", "credentia", "phpsessi", "k_live", "sessioni", "a")
    assert not _superlinear(lambda text: might_hold_secrets(text.encode()), units)


def test_a_quadratic_pattern_is_caught() -> None:
    # the check itself: a pattern that rescans the rest of the string from every position
    backtracking = re.compile(r"[a-z.]+@[a-z]+\.[a-z]{2,}")
    assert _superlinear(lambda text: backtracking.sub("", text), ("a",), (3_000, 30_000))


WINDOW = 1 << 16  # the scan window of long strings (see redaction._WINDOW)


def test_no_match_is_longer_than_the_window_overlap() -> None:
    # every repeat is bounded, so a window overlap of MAX_MATCH_CHARS finds each match whole
    for name, compiled in ALL_PATTERNS.items():
        widest = re._parser.parse(compiled.pattern, compiled.flags).getwidth()[1]  # type: ignore[attr-defined]
        assert widest + 8 < MAX_MATCH_CHARS, name


@pytest.mark.parametrize(
    "offset", [WINDOW - 3, WINDOW + 1, WINDOW + MAX_MATCH_CHARS - 30, 3 * WINDOW - 10]
)
def test_long_strings_are_redacted_across_window_edges(offset: int) -> None:
    secrets = [
        ("sk-proj-A1b2C3d4E5f6G7h8I9j0K1l2", "[REDACTED:api_key]"),
        ("ann.lee@mail.example.org", "[REDACTED:email]"),
        ("password=hunter2", "password=[REDACTED]"),
        ("4111 1111 1111 1111", "[REDACTED:card]"),
        ("eyJhbGciOi.eyJzdWIiOi.SflKxwRJSM", "[REDACTED:jwt]"),
    ]
    head = _filled("x ", offset)
    tail = _filled(" y", 3 * WINDOW)
    for secret, marker in secrets:
        for shift in {0, 1, len(secret) // 2, len(secret) - 1, len(secret)}:  # the edge in it
            text = head[: offset - shift] + " " + secret + tail
            expected = head[: offset - shift] + " " + marker + tail
            assert redact(text, patterns=["email", "card"]) == expected, (secret, shift)
