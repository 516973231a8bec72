"""Importing a FlyMemory library: a pickle written with classes shaped like the
engine's (`flymemory.v3.MemoryEntry`, `SmartMemory`), read without running it."""

from __future__ import annotations

import datetime as dt
import os
import pickle
import sys
import types
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from unittest import mock

import numpy as np
import pytest

from memflow_site.porting import UnsafePickle, flymemory_import, ledger
from memories import selectors, services
from memories.models import Memory, MemoryEvidence


@dataclass
class MemoryEntry:
    """flymemory.v3.MemoryEntry, field for field (v1.6: states and validity too)."""

    text: str
    response: str
    embedding: np.ndarray
    timestamp: float
    last_accessed: float
    access_count: int
    tags: list
    memory_id: int
    superseded_by: int | None = None
    source: str = "hook"
    evidence_ids: list[int] = field(default_factory=list)
    state_key: str | None = None
    state_value: str | None = None
    valid_from: float | None = None
    valid_to: float | None = None


class SmartMemory:
    """flymemory.v3.SmartMemory's state: entries, caches and the lexical index."""

    def __init__(self) -> None:
        self.n_bits = 64
        self.decay_tau = 2592000.0
        self.proj = np.random.default_rng(42).standard_normal((64, 384)).astype(np.float32)
        self.memories: list[MemoryEntry] = []
        self._next_id = 0
        self._mat = None
        self._lex_index: defaultdict[str, set[int]] = defaultdict(set)
        self._df: Counter[str] = Counter()

    def add(self, text: str, when: dt.datetime, **fields) -> MemoryEntry:
        entry = MemoryEntry(
            text=text,
            response=fields.pop("response", ""),
            embedding=np.random.default_rng(self._next_id).standard_normal(384).astype(np.float32),
            timestamp=when.timestamp(),
            last_accessed=fields.pop("last_accessed", when).timestamp(),
            access_count=fields.pop("access_count", 0),
            tags=fields.pop("tags", []),
            memory_id=self._next_id,
            **fields,
        )
        for token in text.lower().split():
            self._lex_index[token].add(entry.memory_id)
            self._df[token] += 1
        self.memories.append(entry)
        self._next_id += 1
        return entry


@contextmanager
def engine_module() -> Iterator[None]:
    """Make the classes pickle under the engine's own module name, `flymemory.v3`."""
    package, module = types.ModuleType("flymemory"), types.ModuleType("flymemory.v3")
    module.MemoryEntry = MemoryEntry  # type: ignore[attr-defined]
    module.SmartMemory = SmartMemory  # type: ignore[attr-defined]
    package.v3 = module  # type: ignore[attr-defined]
    with (
        mock.patch.dict(sys.modules, {"flymemory": package, "flymemory.v3": module}),
        mock.patch.object(MemoryEntry, "__module__", "flymemory.v3"),
        mock.patch.object(SmartMemory, "__module__", "flymemory.v3"),
    ):
        yield


def day(n: int, hour: int = 9) -> dt.datetime:
    return dt.datetime(2026, 1, n, hour, 0, tzinfo=dt.UTC)


TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0" * 2


def library() -> SmartMemory:
    lib = SmartMemory()
    lib.add(
        "The staging database is db-stage-2 on the eu-west cluster",
        day(5),
        source="model",
        tags=["comp:infra", "app:dsh"],
        last_accessed=day(20),
        access_count=4,
    )
    lib.add("Deploys go out from the release branch every Tuesday", day(6), tags=["auto"])
    lib.add("The build server runs Ubuntu 20.04", day(7), source="model", superseded_by=3)
    lib.add("The build server runs Ubuntu 24.04 since the March upgrade", day(9), source="model")
    lib.add("Use ruff for linting in every Python repository", day(10), source="model")
    lib.add("Format Python code with ruff format, not black", day(11), source="import")
    lib.add(
        "Python tooling is standardised on ruff for lint and format",
        day(12),
        source="model",
        tags=["consolidation"],
        evidence_ids=[4, 5],
    )
    lib.add(f"the deploy token is {TOKEN}", day(13), source="hook")
    lib.add("   ", day(13), source="hook")
    lib.add(
        "The user lives in Beijing",
        day(14),
        source="model",
        state_key="user.city",
        state_value="Beijing",
        valid_from=day(14).timestamp(),
        valid_to=day(20).timestamp(),
        superseded_by=10,
    )
    lib.add(
        "The user moved to Hangzhou",
        day(20),
        source="model",
        state_key="user.city",
        state_value="Hangzhou",
        valid_from=day(20).timestamp(),
        response="Noted: Hangzhou.",
    )
    return lib


@pytest.fixture
def pickled(tmp_path):
    path = tmp_path / "flymemory_v3.pkl"
    with engine_module():
        path.write_bytes(pickle.dumps(library(), protocol=pickle.HIGHEST_PROTOCOL))
    return path


def by_fly_id(workspace) -> dict[int, Memory]:
    return {
        m.metadata["flymemory"]["id"]: m
        for m in Memory.objects.filter(workspace=workspace)
        if "flymemory" in m.metadata
    }


def test_the_pickle_names_the_engine_classes_not_the_test_module(pickled):
    data = pickled.read_bytes()
    assert b"flymemory.v3" in data and b"MemoryEntry" in data and b"SmartMemory" in data
    assert b"tests.porting" not in data


def test_it_keeps_texts_times_counts_sources_tags_links_and_evidence(acme, alice, pickled):
    report = flymemory_import(path=pickled, workspace=acme, user=alice)

    assert report.added == {"memories": 9, "supersede links": 2, "evidence links": 2}
    assert {(s.item, s.reason.split(" (")[0]) for s in report.skipped} == {
        ("flymemory #7", "secret refused"),
        ("flymemory #8", "empty text"),
    }
    rows = by_fly_id(acme)
    staging = rows[0]
    assert (staging.compartment, staging.app, staging.source) == ("infra", "dsh", "model")
    assert staging.created_at == staging.valid_from == day(5)
    assert (staging.last_accessed, staging.access_count) == (day(20), 4)
    assert staging.user == alice
    assert staging.metadata["import"]["format"] == "flymemory"
    assert rows[1].source == "hook"  # FlyMemory's "auto" capture
    assert rows[1].metadata["flymemory"]["tags"] == ["auto"]
    assert rows[5].source == "import"

    old, new = rows[2], rows[3]
    assert old.superseded_by_id == new.pk and old.valid_to == day(9)
    assert new.is_current

    beijing, hangzhou = rows[9], rows[10]
    assert (beijing.state_key, beijing.state_value) == ("user.city", "Beijing")
    assert beijing.superseded_by_id == hangzhou.pk and beijing.valid_to == day(20)
    assert hangzhou.is_current and hangzhou.state_value == "Hangzhou"
    assert hangzhou.metadata["flymemory"]["response"] == "Noted: Hangzhou."

    conclusion = rows[6]
    assert conclusion.source == "consolidation" and conclusion.created_at == day(12)
    assert set(
        MemoryEvidence.objects.filter(conclusion=conclusion).values_list("evidence", flat=True)
    ) == {rows[4].pk, rows[5].pk}
    assert not Memory.objects.filter(workspace=acme, text__contains="ghp_").exists()
    assert any("recomputed" in note for note in report.notes)


def test_a_second_run_adds_nothing(acme, pickled):
    flymemory_import(path=pickled, workspace=acme)
    before = list(
        Memory.objects.filter(workspace=acme)
        .order_by("pk")
        .values_list("pk", "strength", "valid_to", "access_count")
    )

    again = flymemory_import(path=pickled, workspace=acme)

    assert again.added_total == 0
    assert again.present == {"memories": 9, "supersede links": 2}
    assert len(again.skipped) == 2  # still named, still not stored
    after = list(
        Memory.objects.filter(workspace=acme)
        .order_by("pk")
        .values_list("pk", "strength", "valid_to", "access_count")
    )
    assert after == before


def test_the_save_layout_reuses_embeddings_made_by_our_model(acme, tmp_path):
    embedder = selectors.embedder_for(acme)
    texts = ["Releases are tagged vX.Y.Z on main", "Benchmarks run nightly on the bench box"]
    vectors = embedder.encode(texts) * 3.0  # FlyMemory stores them unnormalised
    data = {
        "schema": "3.2",
        "embedder": embedder.model_id,
        "memories": [
            {
                "text": text,
                "response": "",
                "embedding": vector.tolist(),
                "timestamp": day(2 + n).timestamp(),
                "last_accessed": day(2 + n).timestamp(),
                "access_count": n,
                "tags": [],
                "memory_id": n,
                "superseded_by": None,
                "source": "model",
                "evidence_ids": [],
            }
            for n, (text, vector) in enumerate(zip(texts, vectors, strict=True))
        ]
        + [{"memory_id": 7, "response": "no text here"}],
        "_next_id": 3,
    }
    path = tmp_path / "flymemory_v3.pkl"
    path.write_bytes(pickle.dumps(data, protocol=4))

    report = flymemory_import(path=path, workspace=acme)

    assert report.added["memories"] == 2
    assert [(s.item, s.reason) for s in report.skipped] == [
        ("flymemory #7", "unreadable entry (no text)")
    ]
    assert any("reused" in note for note in report.notes)
    stored = Memory.objects.get(workspace=acme, text=texts[0])
    assert np.allclose(np.asarray(stored.embedding), vectors[0] / np.linalg.norm(vectors[0]))


class Exploit:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_a_malicious_pickle_is_refused_without_running_it(acme, tmp_path):
    marker = tmp_path / "pwned"
    path = tmp_path / "flymemory_v3.pkl"
    path.write_bytes(pickle.dumps({"memories": [Exploit(marker)]}))

    with pytest.raises(UnsafePickle) as refused:
        flymemory_import(path=path, workspace=acme)

    assert f"{os.system.__module__}.system" in refused.value.detail
    assert "nothing in it was run" in refused.value.detail
    assert not marker.exists()
    assert not Memory.objects.filter(workspace=acme).exists()


class PowerCut(Exception):
    pass


def test_an_interrupted_import_resumes_where_it_stopped(acme, pickled, monkeypatch):
    real = services.memory_remember_bulk
    calls: list[int] = []

    def cut_on_the_second_batch(**kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise PowerCut
        return real(**kwargs)

    monkeypatch.setattr(ledger, "BATCH", 3)
    monkeypatch.setattr(services, "memory_remember_bulk", cut_on_the_second_batch)
    with pytest.raises(PowerCut):
        flymemory_import(path=pickled, workspace=acme)
    assert Memory.objects.filter(workspace=acme).count() == 3  # the first batch committed

    monkeypatch.setattr(services, "memory_remember_bulk", real)
    resumed = flymemory_import(path=pickled, workspace=acme)

    assert resumed.present == {"memories": 3}
    assert resumed.added == {"memories": 6, "supersede links": 2, "evidence links": 2}
    rows = by_fly_id(acme)
    assert rows[2].valid_to == day(9)  # made by the first run, its validity still the library's
