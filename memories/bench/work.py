"""`memflow bench work`: is what an agent did found next week, and what does keeping it cost?

Scripted coding sessions (`work_sessions`: a test failing then fixed, a
dependency upgrade that broke, a config change, an attempt reverted) are
replayed through the real hook pipeline, each ended by its session-end hook;
the worker's tasks for the session (the fold, the capture) then run here, one
at a time, as a django-q2 worker would. Later questions in other words are
recalled, and the rank of the first memory of the right session is scored
(R@1, R@5). With `--corpus` (commits-curl), each of N commits becomes a
session too: its body is the request, a failing `make test` and a passing
one, and `git commit` with its subject is the fix; the question is the subject
without its `area:` prefix. Reported besides: memories each session adds,
an hour-long session's count (every scripted task in one session), the hook
time per event on the path and the worker time per session.
"""

from __future__ import annotations

import json
import statistics
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from django.utils.module_loading import import_string

from contexts.tenancy import services as context_services
from memories import selectors
from memories.bench.run import bench_user, bench_workspace, say
from memories.bench.work_sessions import SESSIONS, ScriptedSession, bash, edit, prompt, stop
from memories.models import Memory


class _Replay:
    """Hook calls in process, timed per event; the session's worker tasks run after."""

    def __init__(self, workspace: Any) -> None:
        self.workspace = workspace
        self.user = bench_user()
        self.key = context_services.apikey_create(
            user=self.user, workspace=workspace, scope="write", name="bench-work"
        ).key
        self.hook_ms: dict[str, list[float]] = defaultdict(list)
        self.worker_ms: list[float] = []

    def play(self, script: ScriptedSession) -> None:
        from contexts.hooks.pipeline import hook_handle

        cursor = self._last_queued()
        for kind, payload in [*script.events, ("session-end", {"reason": "exit"})]:
            body = {"session_id": script.external_id, "cwd": "/srv/app", **payload}
            started = time.perf_counter()
            hook_handle(event=kind, payload=body, user=self.user, api_key=self.key)
            self.hook_ms[kind].append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        self._drain(cursor)
        self.worker_ms.append((time.perf_counter() - started) * 1000)

    @staticmethod
    def _last_queued() -> int:
        from django_q.models import OrmQ

        return OrmQ.objects.order_by("-id").values_list("id", flat=True).first() or 0

    def _drain(self, cursor: int) -> None:
        """Run the flowctx tasks the session queued, as the worker would, until none is
        left; its skill proposals are dropped (another capability, not measured here)."""
        from django_q.models import OrmQ

        while True:
            queued = OrmQ.objects.filter(id__gt=cursor).order_by("id").first()
            if queued is None:
                return
            cursor = queued.id
            task = queued.task
            queued.delete()
            if task.get("func") == "skills.tasks.proposal_generate":
                continue
            import_string(task["func"])(*task["args"], **task["kwargs"])


def _rank(workspace: Any, question: str, session: str, user_id: int) -> int | None:
    """Where the first memory of `session`'s work ranks for `question` (1-based), or None."""
    result = selectors.memory_recall(
        workspace=workspace,
        query=question,
        k=10,
        filters=selectors.MemoryFilters(viewer_id=user_id),
    )
    for rank, hit in enumerate(result.hits, start=1):
        meta = hit.memory.metadata or {}
        if hit.memory.source == Memory.Source.SESSION and meta.get("session") == session:
            return rank
    return None


def _score(ranks: list[int | None]) -> dict[str, Any]:
    n = len(ranks) or 1
    return {
        "questions": len(ranks),
        "r@1": round(sum(1 for r in ranks if r == 1) / n, 3),
        "r@5": round(sum(1 for r in ranks if r is not None and r <= 5) / n, 3),
    }


def _curl_sessions(corpus: Path, count: int) -> list[ScriptedSession]:
    """Sessions from commits: a failing test, the fix, and the commit's body as its
    message; the question is the commit's subject, a summary in other words."""
    docs = {d["id"]: d for d in map(json.loads, (corpus / "corpus.jsonl").read_text().splitlines())}
    queries = [json.loads(line) for line in (corpus / "queries.jsonl").read_text().splitlines()]
    out = []
    for query in [q for q in queries if q["kind"] == "summary" and len(q["answers"]) == 1]:
        doc = docs[query["answers"][0]]
        body = " ".join(doc["text"].split()).replace('"', "'")[:600]
        test = f"tests/runtests.pl {int(doc['id'][1:]) % 3000}"
        events = [
            prompt(f"{test} fails after the last change, find out why and fix it"),
            bash(test, f"TESTFAIL: These test cases failed: {test.split()[-1]}", 1),
            edit("lib/" + doc["id"] + ".c", "/* before */", "/* after */"),
            bash(test, "TESTDONE: 1 tests out of 1 reported OK: 100%"),
            bash(
                f'git commit -am "{body}"',
                f"[master {doc['commit'][:7]}] {body[:60]}\n 1 file changed, 4 insertions(+)",
            ),
            stop(f"Committed {doc['commit'][:7]}."),
        ]
        out.append(ScriptedSession(f"curl-{doc['id']}", events, [query["query"]]))
        if len(out) == count:
            break
    return out


def _hour_long() -> ScriptedSession:
    """Every scripted task, one after another, in one session."""
    events = [e for s in SESSIONS for e in s.events]
    return ScriptedSession("work-hour", events)


def _replay_set(
    name: str, scripts: list[ScriptedSession], *, capture: bool = True
) -> dict[str, Any]:
    workspace, _ = bench_workspace(f"bench-work-{name}-{int(time.time())}")
    if not capture:
        workspace.settings = {**(workspace.settings or {}), "session_work": False}
        workspace.save(update_fields=["settings"])
    replay = _Replay(workspace)
    for done, script in enumerate(scripts, start=1):
        replay.play(script)
        if done % 50 == 0:
            say(f"  {name}: {done}/{len(scripts)} sessions replayed")
    user_id = replay.user.pk
    asked = [(s, q) for s in scripts for q in s.questions]
    ranks = [_rank(workspace, q, s.external_id, user_id) for s, q in asked]
    scripted = [r for (s, _), r in zip(asked, ranks, strict=True) if s in SESSIONS]
    added = Memory.objects.filter(workspace=workspace, source=Memory.Source.SESSION)
    per_session = [added.filter(metadata__session=s.external_id).count() for s in scripts]
    return {
        "set": name,
        "sessions": len(scripts),
        **_score(ranks),
        "scripted_questions": _score(scripted),
        "memories_per_session": {
            "mean": round(statistics.mean(per_session), 2),
            "max": max(per_session),
        },
        "hook_ms_p50": {k: round(statistics.median(v), 2) for k, v in replay.hook_ms.items()},
        "worker_ms_per_session_p50": round(statistics.median(replay.worker_ms), 1),
    }


def bench_work(*, corpus: Path | None = None, sessions: int = 200) -> dict[str, Any]:
    """The scripted sessions, an hour-long one, and with `corpus` the commit sessions."""
    results = [_replay_set("scripted", SESSIONS)]
    off = _replay_set("off", SESSIONS, capture=False)
    results.append(
        {
            "set": "capture-off",
            "hook_ms_p50": off["hook_ms_p50"],
            "worker_ms_per_session_p50": off["worker_ms_per_session_p50"],
        }
    )
    hour = _replay_set("hour-long", [_hour_long()])
    results.append(
        {
            "set": "hour-long",
            "tasks": len(SESSIONS),
            "memories": hour["memories_per_session"]["max"],
            "worker_ms": hour["worker_ms_per_session_p50"],
        }
    )
    if corpus is not None:
        mixed = _replay_set("curl", [*_curl_sessions(corpus, sessions), *SESSIONS])
        results.append(mixed)
    return {"bench": "work", "results": results}


def format_work(result: dict[str, Any]) -> str:
    lines = ["bench work: session memory found by later questions in other words"]
    for row in result["results"]:
        if "r@5" in row:
            per = row["memories_per_session"]
            lines.append(
                f"  {row['set']:<10} {row['sessions']:>4} sessions, {row['questions']:>4} "
                f"questions: R@1 {row['r@1']:.2f}  R@5 {row['r@5']:.2f} (scripted ones: R@1 "
                f"{row['scripted_questions']['r@1']:.2f} R@5 "
                f"{row['scripted_questions']['r@5']:.2f}); memories per session "
                f"{per['mean']} (max {per['max']}); worker {row['worker_ms_per_session_p50']} ms"
                f" per session; hook p50 ms {row['hook_ms_p50']}"
            )
        elif row["set"] == "capture-off":
            lines.append(
                f"  {row['set']:<10} the same sessions with the knob off: worker "
                f"{row['worker_ms_per_session_p50']} ms per session; hook p50 ms "
                f"{row['hook_ms_p50']}"
            )
        else:
            lines.append(
                f"  {row['set']:<10} {row['tasks']} tasks in one session: "
                f"{row['memories']} memories, worker {row['worker_ms']} ms"
            )
    return "\n".join(lines)
