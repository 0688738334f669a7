"""Draw a replay corpus from candidate sessions: stratified, biased to recent traffic, the
same draw for the same seed.

Pure (no I/O): the candidates come from the export (``_candidates.py``), each a session id,
its stratum label (``None`` when the session has none) and the time of its last event.

1. Candidates outside the window ``[since, until)`` (on the last activity) are left out.
2. They are grouped by stratum (one group ``"(all)"`` without ``stratify_by``; sessions
   without the label form the stratum ``"(none)"``); with ``only``, the other strata are
   left out.
3. Each stratum gets a number of picks: ``per_stratum`` (all of a smaller stratum), or a
   share of the total (``sample``, or ``fraction`` of the candidates) proportional to its
   size, with largest-remainder rounding so the shares add up exactly, and at least one for
   every stratum when the total allows it.
4. Within a stratum the picks are drawn without replacement, weighted by recency when
   ``half_life_days`` is set (weight ``0.5 ** (age_days / half_life_days)``, the age taken
   from the newest candidate): Efraimidis-Spirakis keys ``u ** (1 / w)``, each ``u`` taken
   from SHA-256 of the seed and the session id, so the input order never matters, sessions
   outside the window change nothing, and a corpus re-drawn tomorrow keeps the sessions whose
   keys still win instead of being reshuffled by each new session. The keys are
   compared as ``log(-log u) - log w`` (smaller wins), which cannot overflow for old
   sessions.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

__all__ = [
    "ALL_STRATUM",
    "NONE_STRATUM",
    "Candidate",
    "SampleResult",
    "SampleSpec",
    "StratumPick",
    "allocate_strata",
    "draw_sample",
    "parse_when",
    "strata_table",
]

#: The stratum of sessions that do not carry the ``stratify_by`` label.
NONE_STRATUM = "(none)"
#: The one stratum of every candidate when the draw is not stratified.
ALL_STRATUM = "(all)"

_SECONDS_PER_DAY = 86_400.0
_LN2 = math.log(2.0)
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800}


@dataclass(frozen=True, slots=True)
class Candidate:
    """A session that may be drawn: its id, stratum label (``None``: no label) and the time
    of its last event (timezone-aware)."""

    session_id: str
    stratum: str | None
    last_activity: dt.datetime


@dataclass(frozen=True, slots=True)
class SampleSpec:
    """How to draw. Exactly one of ``sample`` (sessions in all), ``per_stratum`` (sessions
    per stratum) and ``fraction`` (of the candidates in the window, 0 < F <= 1) is set.

    Raises:
        ValueError: on construction, for a missing or contradictory size, a half-life that
            is not positive, a naive datetime or an empty window.
    """

    sample: int | None = None
    per_stratum: int | None = None
    fraction: float | None = None
    stratify_by: str | None = None
    half_life_days: float | None = None
    since: dt.datetime | None = None
    until: dt.datetime | None = None
    seed: int = 0
    #: keep only the sessions whose ``stratify_by`` label is one of these (all when empty)
    only: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        sizes = [self.sample, self.per_stratum, self.fraction]
        if sum(s is not None for s in sizes) != 1:
            raise ValueError("give exactly one of --sample, --per-stratum and --fraction")
        if self.sample is not None and self.sample < 1:
            raise ValueError(f"--sample must be at least 1, not {self.sample}")
        if self.per_stratum is not None and self.per_stratum < 1:
            raise ValueError(f"--per-stratum must be at least 1, not {self.per_stratum}")
        if self.fraction is not None and not 0.0 < self.fraction <= 1.0:
            raise ValueError(f"--fraction must be in (0, 1], not {self.fraction}")
        if self.per_stratum is not None and not self.stratify_by:
            raise ValueError("--per-stratum needs --stratify-by")
        if self.only and not self.stratify_by:
            raise ValueError("--stratum needs --stratify-by")
        if self.half_life_days is not None and not (
            self.half_life_days > 0 and math.isfinite(self.half_life_days)
        ):
            raise ValueError(f"--half-life-days must be positive, not {self.half_life_days}")
        for name in ("since", "until"):
            when = getattr(self, name)
            if when is not None and when.tzinfo is None:
                raise ValueError(f"{name} must be timezone-aware")
        if self.since is not None and self.until is not None and self.since >= self.until:
            raise ValueError(
                f"empty window: --since {self.since.isoformat()} is not before "
                f"--until {self.until.isoformat()}"
            )

    @property
    def method(self) -> str:
        """``"proportional"`` (``sample``), ``"per-stratum"`` or ``"fraction"``, with
        ``"+recency"`` when weighted by recency."""
        base = (
            "proportional"
            if self.sample is not None
            else "per-stratum"
            if self.per_stratum is not None
            else "fraction"
        )
        return base + ("+recency" if self.half_life_days is not None else "")

    def in_window(self, when: dt.datetime) -> bool:
        """Whether a last activity falls in ``[since, until)``."""
        return (self.since is None or when >= self.since) and (
            self.until is None or when < self.until
        )


@dataclass(frozen=True, slots=True)
class StratumPick:
    """One row of the strata table: candidates ``available`` in the window and the session
    ids ``picked`` (sorted)."""

    stratum: str
    available: int
    picked: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SampleResult:
    """The draw: one :class:`StratumPick` per stratum (sorted by name, ``"(none)"`` last) and
    how many candidates fell outside the window, or in the window but in a stratum
    :attr:`SampleSpec.only` leaves out."""

    spec: SampleSpec
    strata: tuple[StratumPick, ...]
    outside_window: int = 0
    other_strata: int = 0

    @property
    def picked(self) -> list[str]:
        """Every picked session id, stratum by stratum in table order."""
        return [sid for row in self.strata for sid in row.picked]

    @property
    def available(self) -> int:
        """Candidates in the window."""
        return sum(row.available for row in self.strata)

    def stratum_of(self) -> dict[str, str]:
        """Picked session id -> its stratum."""
        return {sid: row.stratum for row in self.strata for sid in row.picked}


def allocate_strata(sizes: Mapping[str, int], total: int) -> dict[str, int]:
    """Split ``total`` picks over strata proportionally to their ``sizes``.

    Largest-remainder rounding (ties to the larger stratum, then by name), so the shares add
    up to ``min(total, sum(sizes))`` exactly and none exceeds its stratum. When that total is
    at least the number of non-empty strata, each of them gets at least one: a stratum left
    at zero takes one from the stratum furthest above its exact quota.
    """
    strata = {name: size for name, size in sizes.items() if size > 0}
    available = sum(strata.values())
    total = max(0, min(total, available))
    if not strata or total == 0:
        return dict.fromkeys(sizes, 0)
    shares = {name: total * size // available for name, size in strata.items()}
    rest = {name: total * size % available for name, size in strata.items()}
    missing = total - sum(shares.values())
    for name in sorted(strata, key=lambda n: (-rest[n], -strata[n], n))[:missing]:
        shares[name] += 1
    if total >= len(strata):
        for name in sorted(n for n in strata if shares[n] == 0):
            # the donor is the stratum most above its exact quota total * size / available,
            # compared exactly as shares * available - total * size
            donor = max(
                (n for n in strata if shares[n] > 1),
                key=lambda n: (shares[n] * available - total * strata[n], shares[n], n),
            )
            shares[donor] -= 1
            shares[name] = 1
    return {name: shares.get(name, 0) for name in sizes}


def _table_order(stratum: str) -> tuple[bool, str]:
    return (stratum == NONE_STRATUM, stratum)


def _uniform(seed: int, session_id: str) -> float:
    """A number in (0, 1), uniform over sessions, fixed by ``seed`` and ``session_id``: the
    first 53 bits of SHA-256 of both (never 0, so its logarithm exists)."""
    digest = hashlib.sha256(f"{seed}\0{session_id}".encode("utf-8", "surrogatepass")).digest()
    return ((int.from_bytes(digest[:8], "big") >> 11) + 0.5) / float(1 << 53)


def draw_sample(candidates: Iterable[Candidate], spec: SampleSpec) -> SampleResult:
    """Draw the sample ``spec`` asks for from ``candidates`` (see the module docstring).

    Raises:
        ValueError: two candidates share a session id, or a last activity is naive.
    """
    by_id: dict[str, Candidate] = {}
    for candidate in candidates:
        if candidate.session_id in by_id:
            raise ValueError(f"session {candidate.session_id!r} is listed twice")
        if candidate.last_activity.tzinfo is None:
            raise ValueError(f"session {candidate.session_id!r}: last activity is naive")
        by_id[candidate.session_id] = candidate
    ordered = [by_id[sid] for sid in sorted(by_id) if spec.in_window(by_id[sid].last_activity)]
    # each session's draw comes from (seed, session id) alone: the input order, sessions
    # outside the window and sessions that arrive later change no other session's draw
    inside = [(c, _uniform(spec.seed, c.session_id)) for c in ordered]
    groups: dict[str, list[tuple[Candidate, float]]] = {}
    for candidate, u in inside:
        if spec.stratify_by:
            name = NONE_STRATUM if candidate.stratum is None else candidate.stratum
        else:
            name = ALL_STRATUM
        groups.setdefault(name, []).append((candidate, u))
    other = 0
    if spec.only:
        other = sum(len(m) for name, m in groups.items() if name not in spec.only)
        groups = {name: m for name, m in groups.items() if name in spec.only}
        inside = [item for members in groups.values() for item in members]
    sizes = {name: len(members) for name, members in groups.items()}
    if spec.per_stratum is not None:
        wanted = {name: min(spec.per_stratum, size) for name, size in sizes.items()}
    else:
        if spec.sample is not None:
            total = spec.sample
        else:
            assert spec.fraction is not None
            total = max(1, math.floor(spec.fraction * len(inside) + 0.5)) if inside else 0
        wanted = allocate_strata(sizes, total)
    newest = max((c.last_activity for c, _ in inside), default=None)

    def key(item: tuple[Candidate, float]) -> tuple[float, str]:
        candidate, u = item
        if u <= 0.0:
            return (math.inf, candidate.session_id)
        log_key = math.log(-math.log(u))  # log(-log key) of the unweighted key u
        if spec.half_life_days is not None and newest is not None:
            age_days = (newest - candidate.last_activity).total_seconds() / _SECONDS_PER_DAY
            log_key += age_days / spec.half_life_days * _LN2  # minus log w
        return (log_key, candidate.session_id)

    rows = []
    for name in sorted(groups, key=_table_order):
        members = sorted(groups[name], key=key)[: wanted[name]]
        picked = tuple(sorted(c.session_id for c, _ in members))
        rows.append(StratumPick(stratum=name, available=sizes[name], picked=picked))
    outside = len(by_id) - len(inside) - other
    return SampleResult(spec=spec, strata=tuple(rows), outside_window=outside, other_strata=other)


def parse_when(text: str, *, now: dt.datetime) -> dt.datetime:
    """A ``--since``/``--until`` value: a duration before ``now`` (``90s``, ``30m``, ``12h``,
    ``7d``, ``2w``), an ISO date (midnight UTC) or an ISO date-time (UTC when it names no
    offset).

    Raises:
        ValueError: none of these.
    """
    match = _DURATION.match(text)
    if match:
        seconds = float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        return now - dt.timedelta(seconds=seconds)
    try:
        value = dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(
            f"{text!r} is neither a duration (7d, 12h, 30m, 2w) nor an ISO date or date-time"
        ) from None
    return value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)


def strata_table(result: SampleResult) -> list[str]:
    """The draw as text lines: one row per stratum (available, picked) and a total."""
    rows = [(row.stratum, str(row.available), str(len(row.picked))) for row in result.strata]
    rows.append(("total", str(result.available), str(len(result.picked))))
    header = ("stratum", "available", "picked")
    width = [max(len(r[i]) for r in [header, *rows]) for i in range(3)]
    return [
        f"{r[0]:<{width[0]}}  {r[1]:>{width[1]}}  {r[2]:>{width[2]}}".rstrip()
        for r in [header, *rows]
    ]
