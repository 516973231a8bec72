"""Chart geometry: round ticks, scales that fit the data, bars a person can see."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest

from contexts.dashboard import charts


@pytest.mark.parametrize(
    ("peak", "ticks"),
    [
        (0.0, [0, 0.25, 0.5, 0.75, 1.0]),  # nothing yet: a 0..1 axis, not a division by zero
        (7, [0, 2.5, 5, 7.5]),
        (10, [0, 2.5, 5, 7.5, 10]),
        (93, [0, 25, 50, 75, 100]),
        (1234, [0, 250, 500, 750, 1000, 1250]),
        (0.005, [0, 0.001, 0.002, 0.003, 0.004, 0.005]),
        (0.012, [0, 0.002, 0.004, 0.006, 0.008, 0.01, 0.012]),
    ],
)
def test_ticks_are_round_and_reach_the_peak(peak, ticks):
    assert charts.nice_ticks(peak) == pytest.approx(ticks)


@pytest.mark.parametrize(
    ("value", "step", "percent", "label"),
    [
        (0.005, 0.005, True, "0.5%"),
        (0.01, 0.005, True, "1.0%"),
        (0.5, 0.25, True, "50%"),
        (7.5, 2.5, False, "7.5"),
        (1500, 500, False, "1,500"),
    ],
)
def test_tick_labels_print_as_many_decimals_as_the_step_needs(value, step, percent, label):
    assert charts.number_label(value, step=step, percent=percent) == label


def test_counts_never_get_fractional_ticks():
    assert charts.nice_ticks(2, min_step=1) == [0, 1, 2]
    assert charts.nice_ticks(7, min_step=1) == [0, 2, 4, 6, 8]
    assert charts.nice_ticks(0.4, min_step=1) == [0, 1]
    assert [t.label for t in charts.bar_chart(days([0, 0])).y_ticks] == ["0", "1"]


def days(values):
    start = date(2026, 11, 1)
    return [(start + timedelta(days=i), float(v)) for i, v in enumerate(values)]


def test_a_one_percent_day_is_drawn_to_the_datas_scale_not_to_100_percent():
    chart = charts.bar_chart(days([0.01, 0.0, 0.02]), percent=True)
    plot = chart.frame.bottom - chart.frame.top
    assert chart.bars[2].height == pytest.approx(plot)  # 2 % is the top of this axis
    assert chart.bars[0].height == pytest.approx(plot / 2)
    assert chart.bars[1].height == 0
    assert [t.label for t in chart.y_ticks] == ["0.0%", "0.5%", "1.0%", "1.5%", "2.0%"]
    assert chart.bars[0].title == "2026-11-01: 1.0%"


def test_a_tiny_value_beside_a_huge_one_still_shows():
    chart = charts.bar_chart(days([1, 100_000]))
    assert chart.bars[0].height >= 1


def test_date_labels_thin_out_over_longer_ranges():
    for n in (7, 30, 90):
        chart = charts.bar_chart(days([1] * n))
        assert 4 <= len(chart.x_ticks) <= 7
        assert chart.x_ticks[-1].label == charts.day_label(
            date(2026, 11, 1) + timedelta(days=n - 1)
        )
        assert len(chart.bars) == n
        assert all(
            chart.frame.left <= b.x and b.x + b.width <= chart.frame.right + 0.01
            for b in chart.bars
        )


def test_rates_by_source_share_one_axis_scaled_to_the_highest():
    chart = charts.rate_chart([("model", 0.04, "4 of 100 used"), ("hook", 0.01, "1 of 100 used")])
    assert chart.ticks[-1].label == "4%"
    assert chart.rows[0].width == pytest.approx(chart.frame.right - chart.frame.left)
    assert chart.rows[1].width == pytest.approx((chart.frame.right - chart.frame.left) / 4)
    assert chart.rows[1].title == "hook: 1.0% (1 of 100 used)"


def test_a_line_splits_at_now_and_pins_marks_to_their_moment():
    now = datetime(2026, 12, 1, tzinfo=UTC)
    samples = [(now + timedelta(days=d), 1 - d / 200) for d in range(-100, 101, 50)]
    accessed = now - timedelta(days=150)
    chart = charts.line_chart(
        samples, now=now, marks=[(accessed, "recalled", "recalled")], threshold=0.1
    )
    assert chart.marks[0].x == chart.frame.left  # the oldest moment opens the axis
    assert chart.past.count(",") == 3 and chart.future.count(",") == 3  # now is in both
    assert chart.frame.left < chart.now_x < chart.frame.right
    assert chart.threshold_y == pytest.approx(
        chart.frame.bottom - 0.1 * (chart.frame.bottom - chart.frame.top)
    )
    assert chart.x_ticks[0].label == "Jul 4"


def test_a_tree_puts_the_condensing_note_above_the_notes_it_folded():
    leaves = [charts.Span(f"d0-{t}-{t}", t, t, 0, f"turn {t}") for t in (1, 2, 3)]
    top = charts.Span("d1-1-3", 1, 3, 1, "all", active=True, children=leaves)
    chart = charts.tree_chart([top])
    by_key = {b.key: b for b in chart.boxes}
    assert by_key["d1-1-3"].y < by_key["d0-1-1"].y
    assert by_key["d1-1-3"].width > 2.9 * by_key["d0-2-2"].width
    assert by_key["d0-1-1"].x < by_key["d0-2-2"].x < by_key["d0-3-3"].x
    assert len(chart.edges) == 3 and by_key["d1-1-3"].active
    assert [t.label for t in chart.ticks] == ["1", "2", "3"]
    assert charts.tree_chart([]).boxes == ()


def test_marks_at_one_moment_stack_instead_of_hiding_each_other():
    now = datetime(2026, 12, 1, tzinfo=UTC)
    samples = [(now - timedelta(days=30), 1.0), (now + timedelta(days=30), 0.5)]
    marks = [(now, "injected", "injected"), (now, "recalled", "recalled")]
    chart = charts.line_chart(samples, now=now, marks=marks)
    first, second = chart.marks
    assert first.x == second.x and second.y < first.y
