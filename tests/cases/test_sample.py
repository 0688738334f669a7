"""The corpus sampler (``agentledger.cases.draw_sample``): sizes, reproducibility, recency
weighting and the time window, as properties over generated candidate sets."""

from __future__ import annotations

import datetime as dt
import random
import time
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentledger.cases import (
    Candidate,
    SampleSpec,
    allocate_strata,
    draw_sample,
    parse_when,
)

NOW = dt.datetime(2026, 12, 3, 12, 0, tzinfo=dt.UTC)
STRATA = ["billing", "refund", "shipping", "cancel", None]


@st.composite
def candidate_sets(draw: st.DrawFn, min_size: int = 0, max_size: int = 80) -> list[Candidate]:
    ids = draw(
        st.lists(
            st.text("abcdef0123456789-", min_size=1, max_size=8),
            min_size=min_size,
            max_size=max_size,
            unique=True,
        )
    )
    return [
        Candidate(
            session_id=sid,
            stratum=draw(st.sampled_from(STRATA)),
            last_activity=NOW - dt.timedelta(seconds=draw(st.integers(0, 60 * 86_400))),
        )
        for sid in ids
    ]


def sizes_of(candidates: list[Candidate]) -> dict[str, int]:
    sizes: dict[str, int] = {}
    for c in candidates:
        name = "(none)" if c.stratum is None else c.stratum
        sizes[name] = sizes.get(name, 0) + 1
    return sizes


seeds = st.integers(0, 2**32)
half_lives = st.none() | st.floats(0.1, 100.0)


@settings(max_examples=300, deadline=None)
@given(candidate_sets(), st.integers(1, 100), seeds, half_lives)
def test_sample_n_picks_exactly_n_with_largest_remainder_shares(
    candidates: list[Candidate], n: int, seed: int, half_life: float | None
) -> None:
    spec = SampleSpec(sample=n, stratify_by="intent", seed=seed, half_life_days=half_life)
    result = draw_sample(candidates, spec)
    sizes = sizes_of(candidates)
    total = min(n, len(candidates))
    assert len(result.picked) == len(set(result.picked)) == total
    assert {row.stratum: row.available for row in result.strata} == sizes
    shares = {row.stratum: len(row.picked) for row in result.strata}
    assert shares == allocate_strata(sizes, n)
    for row in result.strata:
        members = {c.session_id for c in candidates if (c.stratum or "(none)") == row.stratum}
        assert set(row.picked) <= members and len(row.picked) <= row.available
        assert list(row.picked) == sorted(row.picked)
    if total >= len(sizes):
        assert all(len(row.picked) >= 1 for row in result.strata)
    # proportional: away from the at-least-one rule, each share is its quota rounded
    quotas = {s: Fraction(total * size, len(candidates)) for s, size in sizes.items()}
    if all(q >= 1 for q in quotas.values()):
        assert all(abs(shares[s] - q) < 1 for s, q in quotas.items()), (shares, quotas)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(min_size=1, max_size=4), st.integers(0, 500)), st.integers(0, 600))
def test_allocation_sums_exactly_and_respects_sizes(sizes: dict[str, int], n: int) -> None:
    shares = allocate_strata(sizes, n)
    assert set(shares) == set(sizes)
    assert sum(shares.values()) == min(n, sum(sizes.values()))
    assert all(0 <= shares[s] <= sizes[s] for s in sizes)
    non_empty = [s for s in sizes if sizes[s] > 0]
    if n >= len(non_empty):
        assert all(shares[s] >= 1 for s in non_empty)


def test_allocation_examples() -> None:
    assert allocate_strata({"a": 34, "b": 13, "(none)": 13}, 12) == {"a": 7, "b": 2, "(none)": 3}
    # a rare stratum still gets one, taken from the one furthest above its quota
    assert allocate_strata({"rare": 1, "common": 99}, 5) == {"rare": 1, "common": 4}
    assert allocate_strata({"rare": 1, "common": 99}, 1) == {"rare": 0, "common": 1}
    assert allocate_strata({"a": 3, "b": 0}, 10) == {"a": 3, "b": 0}


@settings(max_examples=200, deadline=None)
@given(candidate_sets(), st.integers(1, 10), seeds, half_lives)
def test_per_stratum_takes_k_or_the_whole_stratum(
    candidates: list[Candidate], k: int, seed: int, half_life: float | None
) -> None:
    spec = SampleSpec(per_stratum=k, stratify_by="intent", seed=seed, half_life_days=half_life)
    result = draw_sample(candidates, spec)
    sizes = sizes_of(candidates)
    assert {row.stratum: len(row.picked) for row in result.strata} == {
        s: min(k, size) for s, size in sizes.items()
    }


@settings(max_examples=200, deadline=None)
@given(candidate_sets(), st.floats(0.01, 1.0), seeds)
def test_fraction_takes_that_share_of_the_candidates(
    candidates: list[Candidate], fraction: float, seed: int
) -> None:
    result = draw_sample(candidates, SampleSpec(fraction=fraction, seed=seed))
    expected = max(1, int(fraction * len(candidates) + 0.5)) if candidates else 0
    assert len(result.picked) == expected
    assert [row.stratum for row in result.strata] == (["(all)"] if candidates else [])


@settings(max_examples=200, deadline=None)
@given(candidate_sets(), st.integers(1, 40), seeds, half_lives, st.randoms(use_true_random=False))
def test_reproducible_for_a_seed_and_independent_of_input_order(
    candidates: list[Candidate],
    n: int,
    seed: int,
    half_life: float | None,
    shuffler: random.Random,
) -> None:
    spec = SampleSpec(sample=n, stratify_by="intent", seed=seed, half_life_days=half_life)
    first = draw_sample(candidates, spec)
    shuffled = list(candidates)
    shuffler.shuffle(shuffled)
    assert draw_sample(shuffled, spec) == first
    assert draw_sample(iter(reversed(candidates)), spec) == first


def test_another_seed_draws_another_sample() -> None:
    candidates = [Candidate(f"s{i:03d}", None, NOW) for i in range(200)]
    draws = {
        tuple(draw_sample(candidates, SampleSpec(sample=10, seed=s)).picked) for s in range(20)
    }
    assert len(draws) == 20


@settings(max_examples=200, deadline=None)
@given(
    candidate_sets(),
    st.integers(1, 50),
    seeds,
    st.integers(0, 60 * 86_400),
    st.integers(1, 60 * 86_400),
)
def test_the_window_is_respected(
    candidates: list[Candidate], n: int, seed: int, start: int, length: int
) -> None:
    since = NOW - dt.timedelta(seconds=start + length)
    until = NOW - dt.timedelta(seconds=start)
    spec = SampleSpec(sample=n, stratify_by="intent", seed=seed, since=since, until=until)
    result = draw_sample(candidates, spec)
    inside = [c for c in candidates if since <= c.last_activity < until]
    by_id = {c.session_id: c for c in candidates}
    assert all(since <= by_id[sid].last_activity < until for sid in result.picked)
    assert result.available == len(inside)
    assert result.outside_window == len(candidates) - len(inside)
    assert len(result.picked) == min(n, len(inside))
    # sessions outside the window change nothing: the same draw from the inside alone
    assert draw_sample(inside, spec).strata == result.strata


def _recent_share(half_life: float | None, seeds: range) -> float:
    """Half the candidates are a day old, half ten days: the share of picks from the recent."""
    candidates = [Candidate(f"new-{i:02d}", None, NOW - dt.timedelta(days=1)) for i in range(50)]
    candidates += [Candidate(f"old-{i:02d}", None, NOW - dt.timedelta(days=10)) for i in range(50)]
    picks = [
        sid
        for seed in seeds
        for sid in draw_sample(
            candidates, SampleSpec(sample=10, seed=seed, half_life_days=half_life)
        ).picked
    ]
    return sum(sid.startswith("new-") for sid in picks) / len(picks)


def test_recency_weighting_favours_recent_sessions_over_many_seeds() -> None:
    uniform = _recent_share(None, range(300))
    weighted = _recent_share(3.0, range(300))  # the old ones weigh 0.5 ** 3 = 1/8
    strongly = _recent_share(1.0, range(300))
    assert 0.45 < uniform < 0.55
    assert weighted > 0.8 and strongly > weighted
    assert strongly > 0.99


def test_a_single_pick_follows_the_weights() -> None:
    """Efraimidis-Spirakis: the first pick is candidate i with probability w_i / sum(w)."""
    candidates = [
        Candidate("new", None, NOW),
        Candidate("old", None, NOW - dt.timedelta(days=7)),  # one half-life: weight 1/2
    ]
    runs = 4000
    new = sum(
        draw_sample(candidates, SampleSpec(sample=1, seed=s, half_life_days=7.0)).picked == ["new"]
        for s in range(runs)
    )
    assert abs(new / runs - 2 / 3) < 0.03, new / runs


def test_very_old_sessions_do_not_overflow() -> None:
    candidates = [Candidate("ancient", None, NOW - dt.timedelta(days=365 * 50))]
    candidates += [Candidate(f"s{i}", None, NOW) for i in range(3)]
    result = draw_sample(candidates, SampleSpec(sample=4, seed=1, half_life_days=0.1))
    assert sorted(result.picked) == ["ancient", "s0", "s1", "s2"]
    result = draw_sample(candidates, SampleSpec(sample=3, seed=1, half_life_days=0.1))
    assert "ancient" not in result.picked


def test_unstratified_and_unlabelled_strata() -> None:
    candidates = [Candidate("a", "x", NOW), Candidate("b", None, NOW), Candidate("c", "y", NOW)]
    labelled = draw_sample(candidates, SampleSpec(sample=3, stratify_by="intent"))
    assert [(r.stratum, r.available, r.picked) for r in labelled.strata] == [
        ("x", 1, ("a",)),
        ("y", 1, ("c",)),
        ("(none)", 1, ("b",)),
    ]
    assert labelled.stratum_of() == {"a": "x", "b": "(none)", "c": "y"}
    plain = draw_sample(candidates, SampleSpec(sample=2))
    assert [(r.stratum, r.available, len(r.picked)) for r in plain.strata] == [("(all)", 3, 2)]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, "exactly one"),
        ({"sample": 3, "fraction": 0.5}, "exactly one"),
        ({"sample": 0}, "at least 1"),
        ({"fraction": 1.5}, "(0, 1]"),
        ({"per_stratum": 2}, "--stratify-by"),
        ({"sample": 2, "half_life_days": 0.0}, "positive"),
        ({"sample": 2, "since": NOW, "until": NOW}, "empty window"),
        ({"sample": 2, "since": NOW.replace(tzinfo=None)}, "timezone"),
    ],
)
def test_bad_specs_are_refused(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace("]", r"\]")):
        SampleSpec(**kwargs)  # type: ignore[arg-type]


def test_duplicate_candidates_are_refused() -> None:
    with pytest.raises(ValueError, match="twice"):
        draw_sample([Candidate("a", None, NOW)] * 2, SampleSpec(sample=1))


def test_parse_when() -> None:
    assert parse_when("7d", now=NOW) == NOW - dt.timedelta(days=7)
    assert parse_when("12h", now=NOW) == NOW - dt.timedelta(hours=12)
    assert parse_when("30m", now=NOW) == NOW - dt.timedelta(minutes=30)
    assert parse_when("2w", now=NOW) == NOW - dt.timedelta(weeks=2)
    assert parse_when("2026-11-01", now=NOW) == dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
    assert parse_when("2026-11-01T08:30:00Z", now=NOW) == dt.datetime(
        2026, 11, 1, 8, 30, tzinfo=dt.UTC
    )
    assert parse_when("2026-11-01T08:30:00+02:00", now=NOW) == dt.datetime(
        2026, 11, 1, 6, 30, tzinfo=dt.UTC
    )
    with pytest.raises(ValueError, match="neither a duration"):
        parse_when("last tuesday", now=NOW)


def test_fast_on_a_large_candidate_set() -> None:
    rng = random.Random(3)
    candidates = [
        Candidate(
            f"s-{i:06d}",
            rng.choice(STRATA),
            NOW - dt.timedelta(seconds=rng.randrange(90 * 86_400)),
        )
        for i in range(100_000)
    ]
    began = time.perf_counter()
    result = draw_sample(
        candidates, SampleSpec(sample=500, stratify_by="intent", seed=1, half_life_days=14)
    )
    took = time.perf_counter() - began
    assert len(result.picked) == 500
    assert took < 5.0, f"{took:.2f} s for 100,000 candidates"


@settings(max_examples=300, deadline=None)
@given(candidate_sets(min_size=1), st.integers(1, 20), seeds)
def test_a_new_session_changes_at_most_one_pick_of_its_stratum(
    candidates: list[Candidate], per_stratum: int, seed: int
) -> None:
    """Draws come from (seed, session id): new traffic displaces at most one member of its
    stratum and leaves every other stratum as it was, so a corpus re-drawn daily stays put."""
    spec = SampleSpec(per_stratum=per_stratum, stratify_by="intent", seed=seed)
    before = draw_sample(candidates, spec)
    newcomer = Candidate(session_id="zz-new", stratum="refund", last_activity=NOW)
    after = draw_sample([*candidates, newcomer], spec)
    old = {row.stratum: set(row.picked) for row in before.strata}
    for row in after.strata:
        kept = old.get(row.stratum, set()) & set(row.picked)
        if row.stratum == "refund":
            assert len(old.get("refund", set()) - kept) <= 1
        else:
            assert set(row.picked) == old[row.stratum]


@settings(max_examples=200, deadline=None)
@given(candidate_sets(), st.sets(st.sampled_from(["billing", "refund", "(none)"])), seeds)
def test_only_keeps_the_named_strata_and_draws_within_them_as_before(
    candidates: list[Candidate], only: set[str], seed: int
) -> None:
    """``--stratum``: the other strata are left out and counted; within the kept ones the draw
    is the one a draw over just those sessions gives."""
    spec = SampleSpec(fraction=0.5, stratify_by="intent", seed=seed, only=tuple(sorted(only)))
    result = draw_sample(candidates, spec)
    kept = [c for c in candidates if ("(none)" if c.stratum is None else c.stratum) in only]
    alone = draw_sample(kept, SampleSpec(fraction=0.5, stratify_by="intent", seed=seed))
    if only:
        assert result.picked == alone.picked
        assert result.other_strata == len(candidates) - len(kept)
        assert {row.stratum for row in result.strata} <= only
    else:
        assert result.other_strata == 0 and result.available == len(candidates)


def test_only_needs_a_label_to_stratify_by() -> None:
    with pytest.raises(ValueError, match="--stratum needs --stratify-by"):
        SampleSpec(fraction=1.0, only=("refund",))
