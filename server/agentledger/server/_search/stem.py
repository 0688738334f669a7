"""A light English suffix stripper for PostgreSQL query words.

SQLite's index runs the Porter stemmer, so ``refunds`` and ``refunded`` meet at ``refund``.
PostgreSQL's vector keeps the words as written (``simple``) and a query word matches as a
prefix, which finds ``refunded`` from ``refund`` but nothing from ``refunds``. So a query word
is also searched by its stem, cut the way Porter's first step cuts plurals and ``-ed`` /
``-ing`` (without restoring a final ``e``: a shorter prefix matches more forms), and only
when at least three letters stay: ``refunds``/``refunded``/``refunding`` -> ``refund``,
``boxes`` -> ``box``, ``stopped`` -> ``stop``, ``policies`` -> ``polic``.
"""

from __future__ import annotations

__all__ = ["light_stem"]

_VOWELS = frozenset("aeiouy")
_KEEP_DOUBLE = frozenset("lsz")


def _has_vowel(word: str) -> bool:
    return any(c in _VOWELS for c in word)


def light_stem(word: str) -> str:
    """``word`` (lower-case) without a plural, ``-ed`` or ``-ing`` ending; ``word`` itself when
    nothing is cut or fewer than three letters would stay."""
    stem = word
    if stem.endswith("sses"):
        stem = stem[:-2]
    elif stem.endswith("ies"):
        stem = stem[:-3]
    elif stem.endswith(("xes", "ches", "shes", "zes")):
        stem = stem[:-2]
    elif stem.endswith("s") and not stem.endswith(("ss", "us", "is")):
        stem = stem[:-1]
    for ending in ("ing", "ed"):
        if stem.endswith(ending) and _has_vowel(stem[: -len(ending)]):
            stem = stem[: -len(ending)]
            if len(stem) > 2 and stem[-1] == stem[-2] and stem[-1] not in _KEEP_DOUBLE | _VOWELS:
                stem = stem[:-1]
            break
    return stem if len(stem) >= 3 and stem != word else word
