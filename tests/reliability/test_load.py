"""The load generator, briefly, against the real server; and its own guards."""

from __future__ import annotations

import pytest

from memories.bench.loadtest import LoadTargetError, format_report, load_run, percentile

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_short_load_run_reports_sane_figures_and_no_errors(live, acme, bob, make_key):
    report = load_run(
        url=live.url, api_key=make_key(bob), workspace="acme", seconds=2, concurrency_levels=[1, 4]
    )
    print(format_report(report))
    assert report["errors"] == 0, [level["error_samples"] for level in report["levels"]]
    assert [level["concurrency"] for level in report["levels"]] == [1, 4]
    for level in report["levels"]:
        assert level["rps"] > 0 and 1.5 < level["seconds"] < 2 + 30
        assert 0 < level["p50_ms"] <= level["p95_ms"]
        for event, figures in level["endpoints"].items():
            assert figures["requests"] > 0, event
            assert 0 < figures["p50_ms"] <= figures["p95_ms"], event
    assert report["max_rps"] == max(level["rps"] for level in report["levels"])
    assert report["degrades_at"] in (None, 4)


def test_it_refuses_a_target_off_this_machine():
    with pytest.raises(LoadTargetError):
        load_run(
            url="http://10.1.2.3:8000",
            api_key="k",
            workspace="w",
            seconds=1,
            concurrency_levels=[1],
        )


def test_percentiles_are_nearest_rank():
    values = [float(n) for n in range(1, 101)]
    assert percentile(values, 50) == 50.0
    assert percentile(values, 95) == 95.0
    assert percentile([3.0], 95) == 3.0
    assert percentile([], 50) == 0.0


@pytest.mark.slow
def test_the_server_holds_load_from_many_sessions(live, acme, bob, make_key):
    report = load_run(
        url=live.url,
        api_key=make_key(bob),
        workspace="acme",
        seconds=8,
        concurrency_levels=[1, 2, 4, 8, 16, 32],
    )
    print(format_report(report))
    assert report["errors"] == 0, [level["error_samples"] for level in report["levels"]]
