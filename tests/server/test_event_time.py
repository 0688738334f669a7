"""An event time sent in the stored form skips the datetime round trip; every other form is
parsed and formatted. Both must give the same stored text and refuse the same inputs."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError

from agentledger.server._ingest import format_ts, now_ts, prepare
from agentledger.server._schemas import EventIn, UtcDatetime

_FULL = TypeAdapter(UtcDatetime)


def _stored(ts: object) -> str:
    item = EventIn.model_validate({"agent": "a", "event": "e", "data": {}, "timestamp": ts})
    return prepare(item, max_depth=64, patterns=(), received_at=now_ts()).timestamp


def _reference(ts: object) -> str:
    return format_ts(_FULL.validate_python(ts))


@settings(max_examples=2000, deadline=None)
@given(
    st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30)),
    st.sampled_from(["Z", "+00:00", "+02:00", "-05:30", ""]),
    st.sampled_from(["microseconds", "milliseconds", "seconds"]),
)
def test_every_form_stores_what_the_full_parse_stores(
    when: datetime, suffix: str, timespec: str
) -> None:
    text = when.isoformat(timespec=timespec) + suffix
    assert _stored(text) == _reference(text)


_TWO = st.integers(0, 99)


@st.composite
def _stored_shapes(draw: st.DrawFn) -> str:
    """Text in the stored form's shape whose fields may be out of range (month 13, 30 Feb)."""
    year = draw(st.integers(0, 9999))
    month, day, hour, minute, second = (draw(_TWO) for _ in range(5))
    micros = draw(st.integers(0, 999_999))
    suffix = draw(st.sampled_from(["Z", "+00:00"]))
    return f"{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}.{micros:06}{suffix}"


@settings(max_examples=3000, deadline=None)
@given(st.one_of(_stored_shapes(), st.text(alphabet="0123456789-:T.Z+", min_size=27, max_size=32)))
def test_near_misses_are_judged_like_the_full_parse(text: str) -> None:
    try:
        expected: str | None = _reference(text)
    except ValidationError:
        expected = None
    if expected is None:
        with pytest.raises(ValidationError):
            _stored(text)
    else:
        assert _stored(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "2026-02-30T10:00:00.000000Z",  # no such day
        "2026-13-01T10:00:00.000000+00:00",
        "2026-01-01T25:00:00.000000Z",
        "2026-01-01T10:00:60.000000Z",
        "0000-01-01T00:00:00.000000Z",
    ],
)
def test_a_stored_form_that_is_no_time_is_refused_naming_the_field(text: str) -> None:
    with pytest.raises(ValidationError) as caught:
        _stored(text)
    assert caught.value.errors()[0]["loc"][0] == "timestamp"


def test_datetime_objects_and_offsets_still_normalise_to_utc() -> None:
    aware = datetime(2026, 12, 5, 12, 0, tzinfo=timezone(timedelta(hours=2)))
    assert _stored(aware) == "2026-12-05T10:00:00.000000+00:00"
    assert _stored("2026-12-05T12:00:00.000001Z") == "2026-12-05T12:00:00.000001+00:00"
    assert _stored(datetime(2026, 12, 5, tzinfo=UTC)) == "2026-12-05T00:00:00.000000+00:00"
