"""Redaction benchmark: every pattern of the shared table on long strings of near misses.

Run: ``python benchmarks/bench_redaction.py`` (about a minute) or ``--quick`` (seconds, 10 KB
and 100 KB). No server. For each pattern (the always-on secret shapes and the opt-in personal
data ones) the strings are one near miss repeated (``a@a@a@...``, runs of digits, dots,
dashes, ``eyJ`` repeated...): text that starts a match everywhere and fails late, the input that
made a backtracking email pattern take 21 s on 200,000 characters. Printed per pattern: the
median time at 100 KB and at 1 MB for its slowest near miss, and their ratio (10 for linear
work, 100 for quadratic). Then ``redact()`` with every pattern on, on the same strings, the
cost of the table on an ordinary event with no secret in it, and the client's byte pre-check
(one trie-shaped search) beside a substring test per trigger word on the same bytes.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import orjson

from agentledger.protocol import redaction
from agentledger.protocol.redaction import (
    PATTERN_NAMES,
    PATTERN_REGEXES,
    SECRET_REGEXES,
    might_hold_secrets,
    redact,
)

NEAR_MISSES: dict[str, tuple[str, ...]] = {
    "private_key": ("-", "-----", "-----BEGIN PRIVATE KEY-----", "-----BEGIN PRIVATE KEY-----a-"),
    "jwt": ("eyJ", "eyJa.", "eyJaaaaa.eyJaaaaa.", "eyJaaaaa."),
    "api_key": ("sk-", "sk-a"),
    "stripe_key": ("sk_live_", "rk_test_a", "sk_"),
    "github_token": ("ghp_", "github_pat_", "ghp_a"),
    "slack_token": ("xoxb-", "xox", "xoxb-a"),
    "aws_key": ("AKIA", "AKIA1234", "A1"),
    "url_password": ("://", "://a:", "a://a:b", "a://a:b@"),
    "bearer": ("bearer ", "Bearer a", "bearer"),
    "basic_auth": ("authorization: basic ", "authorization:", "Authorization: Basic a"),
    "key_value": ("a=", "a=b&", "token=a=", "?token="),
    "quoted_pair": ('"a":"', '"a": "\\', "'a':'", '"'),
    "card": ("1 ", "1-", "1", "12 "),
    "iban": ("DE89", "DE89 ", "A1 ", "DE"),
    "email": ("a@", "a@a.", "a.", "aa@aa.aa", "@a"),
    "ipv4": ("1.", "1.1.1.", "255.", "1"),
    "phone": ("+1 ", "(1) ", "12 345", "1 ", "1-"),
}
GENERIC = ("a", " ", "\\")

EVENT = {
    "model": "gpt-4o-mini",
    "messages": [
        {"role": "system", "content": "You are a helpful assistant for order support."},
        {"role": "user", "content": "Where is my order ORD-123456? It was due yesterday."},
    ],
    "output": "Your order shipped on Monday and should arrive tomorrow.",
    "token_usage": {"input_tokens": 120, "output_tokens": 40},
    "tool": "lookup_order",
    "status": "ok",
}


def filled(unit: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size]


def median_s(fn: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:,.1f} ms"


def worst(
    run: Callable[[str], object], units: tuple[str, ...], sizes: tuple[int, int], repeat: int
) -> tuple[str, float, float]:
    """The near miss slowest at the larger size, with its medians at both sizes."""
    rows = []
    for unit in units:
        small = median_s(lambda u=unit: run(filled(u, sizes[0])), repeat)
        large = median_s(lambda u=unit: run(filled(u, sizes[1])), repeat)
        rows.append((unit, small, large))
    return max(rows, key=lambda row: row[2])


def word_by_word(raw: bytes) -> bool:
    """The pre-check as one substring test per trigger word (the reference)."""
    lowered = raw.decode("utf-8", "replace").lower()
    return any(trigger in lowered for trigger in redaction._STRING_TRIGGERS)


def pre_check_table(repeat: int, n: int) -> None:
    """Both pre-checks on the same bytes, alternately, median µs per call."""
    shapes = {
        "ordinary 9-string event": orjson.dumps(EVENT),
        "LangChain step_start (~100 B)": orjson.dumps(
            {"name": "RunnableSequence", "kind": "chain", "inputs": {"question": "why is it 4?"}}
        ),
        "3.6 KB of prose": orjson.dumps({"text": "hello world, " * 280}),
    }
    print("\n| pre-check on | substring test per word | one trie search | ratio |")
    print("|---|---|---|---|")
    for title, raw in shapes.items():
        assert word_by_word(raw) == might_hold_secrets(raw)
        ref: list[float] = []
        ours: list[float] = []
        for _ in range(repeat):
            ref.append(median_s(lambda r=raw: [word_by_word(r) for _ in range(n)], 1))
            ours.append(median_s(lambda r=raw: [might_hold_secrets(r) for _ in range(n)], 1))
        a, b = statistics.median(ref) / n * 1e6, statistics.median(ours) / n * 1e6
        print(f"| {title} | {a:.2f} µs | {b:.2f} µs | {a / b:.2f}× |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="10 KB and 100 KB (smoke test)")
    args = parser.parse_args()
    sizes = (10_000, 100_000) if args.quick else (100_000, 1_000_000)
    repeat = 3 if args.quick else 5
    label = ("10 KB", "100 KB") if args.quick else ("100 KB", "1 MB")

    print(f"| pattern | slowest near miss | {label[0]} | {label[1]} | ratio |")
    print("|---|---|---|---|---|")
    patterns = {**SECRET_REGEXES, **PATTERN_REGEXES}
    for name, compiled in patterns.items():
        kind = "secret" if name in SECRET_REGEXES else "opt-in"
        unit, small, large = worst(
            lambda text, c=compiled: c.sub("", text), NEAR_MISSES[name] + GENERIC, sizes, repeat
        )
        print(
            f"| `{name}` ({kind}) | `{unit!r}` | {ms(small)} | {ms(large)} | {large / small:.1f} |"
        )

    everything = sorted(PATTERN_NAMES)
    units = tuple(units[0] for units in NEAR_MISSES.values())
    for title, patterns_on in (("secrets only", ()), ("every pattern", everything)):
        unit, small, large = worst(
            lambda text, p=patterns_on: redact({"t": text}, patterns=p), units, sizes, repeat
        )
        print(
            f"| redact(), {title} | `{unit!r}` | {ms(small)} | {ms(large)} | {large / small:.1f} |"
        )

    raw = orjson.dumps(EVENT)
    n = 2_000 if args.quick else 20_000
    per_event = median_s(
        lambda: [redact(orjson.loads(raw), in_place=True) for _ in range(n)], repeat
    )
    print(
        f"\nredact() of an ordinary 9-string event, no secret in it: {per_event / n * 1e6:.1f} µs"
    )
    pre_check_table(repeat, n)


if __name__ == "__main__":
    main()
