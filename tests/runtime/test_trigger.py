"""SourceWindowTrigger is a pure policy: through = min(high watermark, cursor + limit)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from powercontext.errors import InvalidRuntimeRequestError
from powercontext.runtime import ProcessSourceWindow, SourceCursor, SourceHighWatermark, SourceWindowTrigger

trigger = SourceWindowTrigger()


def test_no_action_when_the_cursor_reached_the_high_watermark():
    for high, cursor in ((0, 0), (5, 5)):
        transition = trigger.activate(SourceHighWatermark(high, 10), SourceCursor(cursor))
        assert transition.action is None and transition.next_state == SourceCursor(cursor)


def test_the_window_is_bounded_by_the_limit_and_the_high_watermark():
    assert trigger.activate(SourceHighWatermark(7, 3), SourceCursor(2)).action == ProcessSourceWindow(2, 5)
    assert trigger.activate(SourceHighWatermark(7, 100), SourceCursor(2)).action == ProcessSourceWindow(2, 7)
    assert trigger.activate(SourceHighWatermark(7, 3), SourceCursor(2)).next_state == SourceCursor(5)


@given(high=st.integers(0, 10_000), cursor=st.integers(0, 10_000), limit=st.integers(1, 10_000))
def test_transition_property(high, cursor, limit):
    transition = trigger.activate(SourceHighWatermark(high, limit), SourceCursor(cursor))
    if high <= cursor:
        assert transition.action is None and transition.next_state.sequence == cursor
    else:
        through = min(high, cursor + limit)
        assert transition.action == ProcessSourceWindow(after=cursor, through=through)
        assert transition.next_state.sequence == through and 1 <= transition.action.size <= limit


@pytest.mark.parametrize("bad", [0, -1, 10_001, 1.5, True, "3", None])
def test_invalid_limits_are_typed_errors(bad):
    with pytest.raises(InvalidRuntimeRequestError):
        SourceHighWatermark(3, bad)


def test_invalid_positions_and_empty_windows_are_refused():
    with pytest.raises(InvalidRuntimeRequestError):
        SourceCursor(-1)
    with pytest.raises(InvalidRuntimeRequestError):
        ProcessSourceWindow(3, 3)
