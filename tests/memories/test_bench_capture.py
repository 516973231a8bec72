"""`memflow bench capture` on a labelled set: earlier questions, cited answers, new questions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memories.bench.capture import bench_capture
from tests.hooks.answered_data import ANSWER, OTHERS

pytestmark = pytest.mark.django_db(transaction=True)

FACTS = {"answer": ANSWER, **{f"other-{n}": t for n, t in enumerate(OTHERS)}}
QUERIES = [
    # Asked in earlier sessions, then again in new ones.
    {"kind": "summary", "query": "the trick for the flaky login test", "answers": ["answer"]},
    # Asked only by a new session.
    {"kind": "summary", "query": "who owns a flaky test", "answers": ["other-0"]},
]


@pytest.fixture
def labelled(tmp_path: Path, settings) -> Path:
    settings.MEMFLOW_DATA_DIR = tmp_path / "data"  # the bench's vector cache
    (tmp_path / "corpus.jsonl").write_text(
        "".join(json.dumps({"id": k, "text": t}) + "\n" for k, t in FACTS.items())
    )
    (tmp_path / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in QUERIES))
    return tmp_path


def test_earlier_answers_that_cite_the_fact_put_it_first(labelled):
    quiet = bench_capture(corpus=labelled, facts=len(FACTS), topics=1, sessions=2, cite=False)
    cited = bench_capture(corpus=labelled, facts=len(FACTS), topics=1, sessions=2, cite=True)
    # By its words alone the new question does not find the fact first…
    assert quiet["fact_first_without_prompts"] == 0.0
    assert quiet["earlier_turns_citing_the_fact"] == 0 and quiet["fact_first"] == 0.0
    # …but earlier sessions asked, were shown it and cited it.
    assert cited["earlier_turns_citing_the_fact"] > 0
    assert cited["fact_first"] == 1.0
    for result in (quiet, cited):
        assert result["earlier_prompts"] == 7
        assert result["unasked"]["queries"] == 1
        assert result["captured_share_max"] <= 1 / 3
        assert result["own_session_prompts_recalled"] == 0
