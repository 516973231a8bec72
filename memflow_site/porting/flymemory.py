"""Import a FlyMemory library (`flymemory_v3.pkl`) without running its code.

A pickle can call anything importable while it loads, so the library is read
with an unpickler whose `find_class` answers only for what a FlyMemory
library holds: the engine's `MemoryEntry` and `SmartMemory` (mapped to
inert stand-ins that only keep their attributes), builtin containers,
`datetime` values and numpy arrays (the engine's embeddings). Anything else —
`os.system`, `builtins.eval`, `subprocess.Popen` — stops the load with
`UnsafePickle` before it is called.

Two layouts exist: `save()` writes a dict (`{"schema", "embedder",
"memories": [dict, …]}`), and older tools pickled the `SmartMemory` object
itself. Both are read. From each entry memflow keeps the text, creation and
last-access times, access count, source, `comp:`/`app:` tags (compartment
and app), other tags, state key and value, supersede links (with their
validity end) and evidence ids (the conclusion is rebuilt with
`memory_consolidate`, so its evidence links are real). Embeddings are reused
when the library was embedded by the model memflow runs; otherwise they are
recomputed.
"""

from __future__ import annotations

import collections
import copyreg
import datetime as dt
import hashlib
import io
import pickle
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from django.db import transaction
from django.utils import timezone

from contexts.errors import Invalid, MemflowError
from contexts.models import Workspace
from memflow_site.porting.ledger import (
    Incoming,
    Stored,
    history_restore,
    ledger_metadata,
    present_keys,
    remember_incoming,
    skip_reason,
)
from memflow_site.porting.report import ImportReport, Progress, progress_bar
from memories import selectors, services
from memories.models import Memory

if TYPE_CHECKING:
    from django.contrib.auth.models import User

FORMAT = "flymemory"
MAX_LIBRARY_BYTES = 2 * 1024 * 1024 * 1024

# FlyMemory's sources, in memflow's vocabulary.
SOURCES = {
    "model": "model",
    "model-supersede": "model",
    "hook": "hook",
    "auto": "hook",
    "import": "import",
    "consolidation": "consolidation",
}


class UnsafePickle(Invalid):
    code = "unsafe_pickle"


# --- the restricted unpickler ----------------------------------------------------------


class _Sealed(type):
    """Stand-in classes cannot be changed by a pickle (BUILD on a class sets attributes)."""

    def __setattr__(cls, name: str, value: Any) -> None:
        raise UnsafePickle(
            f"The file tries to change the class {cls.__name__}; it is not a FlyMemory library."
        )


class _Inert(metaclass=_Sealed):
    """Keeps whatever a pickle sets on it; has no behaviour to trigger."""

    _fields: tuple[str, ...] = ()

    def __init__(self, *args: Any, **kwargs: Any):
        self.__dict__.update(zip(self._fields, args, strict=False))
        self.__dict__.update(kwargs)

    def __setstate__(self, state: Any) -> None:
        if isinstance(state, tuple) and len(state) == 2:  # (__dict__, __slots__ values)
            for part in state:
                if isinstance(part, dict):
                    self.__dict__.update(part)
        elif isinstance(state, dict):
            self.__dict__.update(state)


class FlyEntry(_Inert):
    """A `flymemory.v3.MemoryEntry`, attributes only."""

    _fields = (
        "text",
        "response",
        "embedding",
        "timestamp",
        "last_accessed",
        "access_count",
        "tags",
        "memory_id",
        "superseded_by",
        "source",
        "evidence_ids",
    )


class FlyLibrary(_Inert):
    """A `flymemory.v3.SmartMemory`, attributes only."""


_ENGINE_MODULES = frozenset({"flymemory.v3", "v3", "flymemory", "flymemory_v3", "__main__"})
_ENGINE_CLASSES: dict[str, type] = {"MemoryEntry": FlyEntry, "SmartMemory": FlyLibrary}


def _numpy_globals() -> dict[tuple[str, str], Any]:
    try:
        from numpy._core import multiarray, numeric
    except ImportError:  # numpy 1.x
        from numpy.core import multiarray, numeric  # type: ignore[no-redef]
    allowed: dict[tuple[str, str], Any] = {
        ("numpy", "ndarray"): np.ndarray,
        ("numpy", "dtype"): np.dtype,
    }
    # Pickles name numpy's private helpers by the module numpy had when they
    # were written: `numpy.core` before 2.0, `numpy._core` since.
    for package in ("numpy.core", "numpy._core"):
        allowed[(f"{package}.multiarray", "_reconstruct")] = multiarray._reconstruct
        allowed[(f"{package}.multiarray", "scalar")] = multiarray.scalar
        allowed[(f"{package}.numeric", "_frombuffer")] = numeric._frombuffer  # type: ignore[attr-defined]
    for name in ("float16", "float32", "float64", "int32", "int64", "bool_"):
        allowed[("numpy", name)] = getattr(np, name)
    return allowed


_SAFE_GLOBALS: dict[tuple[str, str], Any] = {
    ("builtins", "object"): object,
    ("builtins", "set"): set,
    ("builtins", "frozenset"): frozenset,
    ("builtins", "list"): list,
    ("builtins", "dict"): dict,
    ("builtins", "tuple"): tuple,
    ("builtins", "bytearray"): bytearray,
    ("builtins", "complex"): complex,
    ("collections", "OrderedDict"): collections.OrderedDict,
    ("collections", "defaultdict"): collections.defaultdict,
    ("collections", "Counter"): collections.Counter,
    ("collections", "deque"): collections.deque,
    ("datetime", "datetime"): dt.datetime,
    ("datetime", "date"): dt.date,
    ("datetime", "time"): dt.time,
    ("datetime", "timedelta"): dt.timedelta,
    ("datetime", "timezone"): dt.timezone,
    # Protocols 0 and 1 rebuild plain objects with this; it only calls
    # `base.__new__(cls)`, and both come through this same allow-list.
    ("copyreg", "_reconstructor"): copyreg._reconstructor,  # type: ignore[attr-defined]
    **_numpy_globals(),
}


class LibraryUnpickler(pickle.Unpickler):
    """An unpickler that constructs only what a FlyMemory library is made of."""

    def find_class(self, module: str, name: str) -> Any:
        if module in _ENGINE_MODULES and name in _ENGINE_CLASSES:
            return _ENGINE_CLASSES[name]
        allowed = _SAFE_GLOBALS.get((module, name))
        if allowed is not None:
            return allowed
        raise UnsafePickle(
            f"The file asks to load {module}.{name}, which a FlyMemory library never "
            "holds; nothing was imported and nothing in it was run."
        )

    def persistent_load(self, pid: Any) -> Any:
        raise UnsafePickle("The file refers to external objects; it is not a FlyMemory library.")


def load_library(data: bytes) -> Any:
    """The unpickled library: a dict, a `FlyLibrary` or a list, never running its code."""
    try:
        return LibraryUnpickler(io.BytesIO(data)).load()
    except UnsafePickle:
        raise
    except (
        pickle.UnpicklingError,
        EOFError,
        ValueError,
        TypeError,
        AttributeError,
        IndexError,
        KeyError,
        MemoryError,
        RecursionError,
    ) as exc:
        raise Invalid(
            f"Not a readable FlyMemory library: {type(exc).__name__}: {exc}",
            code="unreadable_library",
        ) from None


# --- reading entries --------------------------------------------------------------------


@dataclass
class FlyRecord:
    memory_id: int
    text: str
    response: str = ""
    timestamp: float | None = None
    last_accessed: float | None = None
    access_count: int = 0
    tags: list[str] = field(default_factory=list)
    superseded_by: int | None = None
    source: str = "auto"
    evidence_ids: list[int] = field(default_factory=list)
    state_key: str = ""
    state_value: str = ""
    valid_from: float | None = None
    valid_to: float | None = None
    compartment: str = ""
    app: str = ""
    embedding: np.ndarray | None = None

    @property
    def began(self) -> float | None:
        return self.timestamp if self.timestamp is not None else self.valid_from

    @property
    def label(self) -> str:
        return f"flymemory #{self.memory_id}"

    @property
    def key(self) -> str:
        digest = hashlib.sha256(self.text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        return f"{FORMAT}:{self.memory_id}:{digest}"


@dataclass
class Library:
    records: list[FlyRecord]
    embedder: str  # the model that made its embeddings, "" if unknown
    unreadable: list[tuple[str, str]]  # (label, reason)


def split_tags(
    tags: list[str], *, compartment: str = "", app: str = ""
) -> tuple[str, str, list[str]]:
    """FlyMemory's `comp:` and `app:` tags as the compartment and app (unless given); the rest."""
    rest = []
    for tag in tags:
        if tag.startswith("comp:") and not compartment:
            compartment = tag[len("comp:") :]
        elif tag.startswith("app:") and not app:
            app = tag[len("app:") :]
        else:
            rest.append(tag)
    return compartment, app, rest


def _fields_of(raw: Any) -> dict[str, Any] | None:
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, _Inert):
        return dict(vars(raw))
    return None


def _epoch(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        return (value if value.tzinfo else value.replace(tzinfo=dt.UTC)).timestamp()
    if isinstance(value, str):
        return _epoch(dt.datetime.fromisoformat(value))
    number = float(value)
    if not 0 <= number < 32503680000:  # 1970 to 3000; NaN fails too
        raise ValueError(f"not a time: {value!r}")
    return number


def _record(raw: Any, index: int) -> FlyRecord:
    fields = _fields_of(raw)
    if fields is None:
        raise ValueError(f"an entry of type {type(raw).__name__}")
    text = fields.get("text")
    if not isinstance(text, str):
        raise ValueError("no text")
    memory_id = fields.get("memory_id", index)
    tags = [str(t) for t in (fields.get("tags") or []) if t is not None]
    compartment, app, rest = split_tags(
        tags, compartment=str(fields.get("compartment") or ""), app=str(fields.get("app") or "")
    )
    embedding = fields.get("embedding")
    vector = None
    if embedding is not None:
        try:
            vector = np.asarray(embedding, dtype=np.float32).reshape(-1)
        except (TypeError, ValueError):
            vector = None
    superseded_by = fields.get("superseded_by")
    return FlyRecord(
        memory_id=int(memory_id),
        text=text,
        response=str(fields.get("response") or ""),
        timestamp=_epoch(fields.get("timestamp")),
        last_accessed=_epoch(fields.get("last_accessed")),
        access_count=max(0, int(fields.get("access_count") or 0)),
        tags=rest,
        superseded_by=int(superseded_by) if superseded_by is not None else None,
        source=str(fields.get("source") or "auto"),
        evidence_ids=[int(i) for i in (fields.get("evidence_ids") or [])],
        state_key=str(fields.get("state_key") or ""),
        state_value=str(fields.get("state_value") or ""),
        valid_from=_epoch(fields.get("valid_from")),
        valid_to=_epoch(fields.get("valid_to")),
        compartment=compartment.strip().lower(),
        app=app.strip(),
        embedding=vector,
    )


def library_read(data: bytes) -> Library:
    loaded = load_library(data)
    embedder = ""
    if isinstance(loaded, dict):
        entries = loaded.get("memories")
        embedder = str(loaded.get("embedder") or "")
    elif isinstance(loaded, FlyLibrary):
        entries = vars(loaded).get("memories")
    else:
        entries = loaded
    if not isinstance(entries, list | tuple):
        raise Invalid(
            "Not a FlyMemory library: no list of memories in it.", code="unreadable_library"
        )
    records: list[FlyRecord] = []
    unreadable: list[tuple[str, str]] = []
    for index, raw in enumerate(entries):
        fields = _fields_of(raw) or {}
        label = f"flymemory #{fields.get('memory_id', f'entry {index}')}"
        try:
            records.append(_record(raw, index))
        except (TypeError, ValueError, OverflowError) as exc:
            unreadable.append((label, f"unreadable entry ({exc})"))
    return Library(records=records, embedder=embedder, unreadable=unreadable)


# --- importing -------------------------------------------------------------------------


def _when(epoch: float | None) -> dt.datetime | None:
    return dt.datetime.fromtimestamp(epoch, tz=dt.UTC) if epoch is not None else None


def _metadata(record: FlyRecord) -> dict[str, Any]:
    kept: dict[str, Any] = {"id": record.memory_id, "source": record.source}
    if record.tags:
        kept["tags"] = record.tags
    if record.response:
        kept["response"] = record.response
    if record.evidence_ids:
        kept["evidence_ids"] = record.evidence_ids
    return {"flymemory": kept}


def _input(record: FlyRecord, *, source: str | None = None) -> services.RememberInput:
    return services.RememberInput(
        text=record.text,
        compartment=record.compartment,
        state_key=record.state_key,
        state_value=record.state_value if record.state_key else "",
        source=source or SOURCES.get(record.source, "import"),
        app=record.app,
        metadata=_metadata(record),
        created_at=_when(record.began),
    )


def flymemory_import(
    *,
    path: str | Path,
    workspace: Workspace,
    user: User | None = None,
    progress: bool = False,
) -> ImportReport:
    """Bring a FlyMemory library into `workspace`; running it again adds nothing."""
    path = Path(path)
    report = ImportReport(format=FORMAT, source=str(path), workspace=workspace.slug)
    if path.stat().st_size > MAX_LIBRARY_BYTES:
        raise Invalid(f"{path} is over 2 GB; not a library this importer reads.")
    library = library_read(path.read_bytes())
    for label, reason in library.unreadable:
        report.skip(label, reason)

    # The workspace's own embedder: what its recall searches with.
    embedder = selectors.embedder_for(workspace)
    reuse = library.embedder == embedder.model_id
    if reuse:
        report.notes.append(f"embeddings reused: the library was made with {embedder.model_id}")
    else:
        report.notes.append(
            f"embeddings recomputed with {embedder.model_id} "
            f"(the library's: {library.embedder or 'unknown model'})"
        )

    def order(r: FlyRecord) -> tuple[float, int]:
        return (r.began or 0.0, r.memory_id)

    plain = sorted((r for r in library.records if not r.evidence_ids), key=order)
    conclusions = sorted((r for r in library.records if r.evidence_ids), key=order)
    linked = [r for r in library.records if r.superseded_by is not None]
    total = len(library.records) + len(linked)
    with progress_bar(enabled=progress, label="flymemory", total=total) as bar:
        incoming = [
            Incoming(
                key=r.key,
                label=r.label,
                item=_input(r),
                last_accessed=_when(r.last_accessed),
                access_count=r.access_count,
                vector=_unit(r.embedding, embedder.dimension) if reuse else None,
                vector_model=library.embedder,
            )
            for r in plain
        ]
        stored = remember_incoming(
            workspace=workspace,
            user=user,
            fmt=FORMAT,
            incoming=incoming,
            report=report,
            bar=bar,
        )
        by_id = {r.memory_id: r for r in library.records}
        _conclusions(
            workspace=workspace,
            user=user,
            records=conclusions,
            by_id=by_id,
            stored=stored,
            report=report,
            bar=bar,
        )
        _supersede_links(
            workspace=workspace,
            records=linked,
            by_id=by_id,
            stored=stored,
            report=report,
            bar=bar,
        )
    return report


def _unit(vector: np.ndarray | None, dimension: int) -> np.ndarray | None:
    if vector is None or vector.shape != (dimension,) or not np.all(np.isfinite(vector)):
        return None
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm > 0 else None


def _conclusions(
    *,
    workspace: Workspace,
    user: User | None,
    records: Iterable[FlyRecord],
    by_id: dict[int, FlyRecord],
    stored: Stored,
    report: ImportReport,
    bar: Progress,
) -> None:
    """A conclusion is rebuilt by `memory_consolidate`, resting on its imported evidence."""
    records = list(records)
    done = present_keys(workspace=workspace, keys=[r.key for r in records])
    for record in records:
        bar.update()
        if record.key in done:
            stored.pks[record.key] = done[record.key]
            report.present["memories"] += 1
            continue
        evidence = [
            stored.pks[by_id[i].key]
            for i in record.evidence_ids
            if i in by_id and by_id[i].key in stored.pks
        ]
        evidence = list(dict.fromkeys(evidence))
        if len(evidence) < 2:
            # Too little of its evidence made it in: keep the text, say what was lost.
            report.warn(
                record.label,
                f"evidence links dropped: {len(evidence)} of its evidence entries "
                f"{record.evidence_ids} were imported",
            )
            _conclusion_alone(
                workspace=workspace, user=user, record=record, stored=stored, report=report
            )
            continue
        try:
            pk = _conclusion_consolidated(
                workspace=workspace, user=user, record=record, evidence=evidence
            )
        except MemflowError as exc:
            report.skip(record.label, skip_reason(exc))
            continue
        stored.pks[record.key] = pk
        stored.created.add(pk)
        report.added["memories"] += 1
        report.added["evidence links"] += len(evidence)


def _conclusion_alone(
    *,
    workspace: Workspace,
    user: User | None,
    record: FlyRecord,
    stored: Stored,
    report: ImportReport,
) -> None:
    """The conclusion's text remembered as a memory of its own, with no evidence."""
    single = remember_incoming(
        workspace=workspace,
        user=user,
        fmt=FORMAT,
        incoming=[
            Incoming(
                key=record.key,
                label=record.label,
                item=_input(record, source="consolidation"),
                last_accessed=_when(record.last_accessed),
                access_count=record.access_count,
            )
        ],
        report=report,
        bar=Progress(enabled=False, label=""),
    )
    stored.pks.update(single.pks)
    stored.created |= single.created


def _conclusion_consolidated(
    *, workspace: Workspace, user: User | None, record: FlyRecord, evidence: list[int]
) -> int:
    """The pk of the conclusion consolidated from `evidence`, with its history kept."""
    item = _input(record, source="consolidation")
    # The conclusion and its ledger key commit together: killed between
    # the two, the next run would not know it and consolidate it again.
    with transaction.atomic():
        memory = services.memory_consolidate(
            workspace=workspace,
            ids=evidence,
            conclusion=item.text,
            compartment=item.compartment,
            user=user,
            app=item.app,
        )
        created = _when(record.began) or memory.created_at
        history_restore(
            workspace=workspace,
            pk=memory.pk,
            created_at=created,
            valid_from=created,
            last_accessed=_when(record.last_accessed) or created,
            access_count=record.access_count,
            metadata=ledger_metadata(
                {**memory.metadata, **item.metadata}, fmt=FORMAT, key=record.key
            ),
        )
    return memory.pk


def _supersede_links(
    *,
    workspace: Workspace,
    records: Iterable[FlyRecord],
    by_id: dict[int, FlyRecord],
    stored: Stored,
    report: ImportReport,
    bar: Progress,
) -> None:
    """Each `superseded_by` becomes a memflow supersede, its validity end kept."""
    now = timezone.now()
    for record in records:
        bar.update()
        assert record.superseded_by is not None
        label = f"supersede link #{record.memory_id} -> #{record.superseded_by}"
        successor = by_id.get(record.superseded_by)
        if successor is None:
            report.skip(label, f"#{record.superseded_by} is not in the library")
            continue
        old_pk, new_pk = stored.pks.get(record.key), stored.pks.get(successor.key)
        if old_pk is None or new_pk is None:
            missing = record.memory_id if old_pk is None else successor.memory_id
            report.skip(label, f"#{missing} was not imported")
            continue
        if old_pk == new_pk:
            report.skip(label, "both entries were folded into one memory")
            continue
        old = Memory.objects.filter(pk=old_pk, workspace=workspace).first()
        new = Memory.objects.filter(pk=new_pk, workspace=workspace).first()
        if old is None or new is None:
            report.skip(label, "a memory of the pair was deleted meanwhile")
            continue
        # Made by this import (now, or by a run that stopped half way): its
        # validity end is the library's, not the moment of the import.
        ours = (
            old_pk in stored.created
            or (old.metadata or {}).get("import", {}).get("key") == record.key
        )
        if old.superseded_by_id == new_pk:
            # Already linked: by an earlier run, or by the state chain just now.
            if ours:
                _restore_validity(workspace, old, record, successor, now)
            if old_pk in stored.created:
                report.added["supersede links"] += 1
            else:
                report.present["supersede links"] += 1
            continue
        if old.valid_to is not None:
            report.skip(label, f"#{record.memory_id} is already superseded by another entry")
            continue
        try:
            services.memory_supersede(workspace=workspace, memory=old, by=new)
        except MemflowError as exc:
            report.skip(label, exc.detail)
            continue
        if ours:
            old.refresh_from_db()
            _restore_validity(workspace, old, record, successor, now)
        report.added["supersede links"] += 1


def _restore_validity(
    workspace: Workspace,
    old: Memory,
    record: FlyRecord,
    successor: FlyRecord,
    now: dt.datetime,
) -> None:
    """The supersede happened when the library says (or when its successor arrived)."""
    ended = _when(record.valid_to if record.valid_to is not None else successor.began)
    if ended is None:
        return
    ended = min(max(ended, old.valid_from), now)
    if old.valid_to != ended:
        history_restore(workspace=workspace, pk=old.pk, valid_to=ended)
