"""`memflow backup FILE` and `memflow restore FILE`: pg_dump / pg_restore.

A backup is a pg_dump archive in custom format (compressed, restorable table
by table, readable by `pg_restore --list`) of memflow's whole database:
memories with their embeddings, core memory, sessions, skills, keys (hashed)
and the django-q2 queue. It is taken from the embedded Postgres or from the
server `DATABASE_URL` names, whichever memflow is using.

pg_dump reads one MVCC snapshot, so a backup taken while memflow serves is
consistent. It is written to `FILE.partial` and renamed when complete: a
backup interrupted half-way never looks like a good one.

A restore goes into a database with no memflow tables in it (a fresh data
directory, or a new empty database), in one transaction: it lands whole or
not at all. `--replace` first drops what the target holds, in that same
transaction, so a failed restore leaves the old data in place. Migrations run
afterwards, so a backup from an older memflow comes up to date.

The client tools are the ones bundled in the `pgserver` wheel (Postgres 18,
which dumps and restores servers back to 9.2), or `MEMFLOW_PG_BIN`.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from contexts.errors import MemflowError

# The one table every memflow database has; a dump without it is not ours.
MARKER_TABLE = "django_migrations"
# How long a restore waits for a lock before saying the database is in use.
LOCK_TIMEOUT = "10s"


class BackupError(MemflowError):
    status_code = 400
    code = "backup_failed"


@dataclass(frozen=True)
class Target:
    """Where the database is, as libpq environment variables, and how to name it."""

    env: dict[str, str]
    label: str


@dataclass(frozen=True)
class BackupReport:
    path: Path
    tables: int
    bytes: int
    seconds: float


@dataclass(frozen=True)
class RestoreReport:
    path: Path
    tables: int
    seconds: float


def pg_tool(name: str) -> str:
    """The path of a Postgres client program (pg_dump, pg_restore, psql)."""
    candidates: list[Path] = []
    if configured := os.environ.get("MEMFLOW_PG_BIN"):
        candidates.append(Path(configured) / name)
    try:
        # pgserver warns about XDG_RUNTIME_DIR on import, as embedded_pg notes.
        warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
        from pgserver._commands import POSTGRES_BIN_PATH

        candidates.append(Path(POSTGRES_BIN_PATH) / name)
    except ImportError:  # pragma: no cover - pgserver is a dependency
        pass
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which(name)
    if found:
        return found
    raise BackupError(
        f"{name} was not found: install the Postgres client programs or set MEMFLOW_PG_BIN "
        "to the directory that holds them.",
        code="pg_tools_missing",
    )


def database_target() -> Target:
    """The database memflow uses now: `DATABASE_URL`'s, or the embedded one (started)."""
    from django.conf import settings
    from django.db import connection

    params = connection.settings_dict
    if not settings.DATABASE_URL:
        from memflow_site import embedded_pg

        server = embedded_pg.ensure_running(Path(settings.MEMFLOW_DATA_DIR))
        host, label = server.socket_dir, f"the embedded Postgres in {server.pgdata}"
    else:
        host = params["HOST"] or ""
        label = f"database {params['NAME']!r} on {host or 'localhost'}"
        if params["PORT"]:
            label += f":{params['PORT']}"
    env = {
        "PGHOST": host,
        "PGPORT": str(params["PORT"] or ""),
        "PGUSER": params["USER"] or "",
        "PGPASSWORD": params["PASSWORD"] or "",
        "PGDATABASE": params["NAME"],
    }
    options = params.get("OPTIONS") or {}
    for option, variable in (
        ("sslmode", "PGSSLMODE"),
        ("sslrootcert", "PGSSLROOTCERT"),
        ("sslcert", "PGSSLCERT"),
        ("sslkey", "PGSSLKEY"),
        ("connect_timeout", "PGCONNECT_TIMEOUT"),
    ):
        if option in options:
            env[variable] = str(options[option])
    return Target(env={k: v for k, v in env.items() if v}, label=label)


def _run_env(target: Target) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    env.update(target.env)
    return env


def _user_tables(target: Target) -> list[str]:
    """The names of the target's tables (to count progress, and to refuse a full target)."""
    import psycopg
    import psycopg.conninfo

    try:
        conninfo = psycopg.conninfo.make_conninfo("", **_libpq_kwargs(target))
        with psycopg.connect(conninfo) as conn:
            rows = conn.execute(
                "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE c.relkind IN ('r', 'p') AND n.nspname = 'public' ORDER BY 1"
            ).fetchall()
    except psycopg.OperationalError as exc:
        raise BackupError(
            f"Cannot connect to {target.label}: {str(exc).strip()}", code="database_unreachable"
        ) from None
    return [row[0] for row in rows]


def _libpq_kwargs(target: Target) -> dict[str, str]:
    names = {
        "PGHOST": "host",
        "PGPORT": "port",
        "PGUSER": "user",
        "PGPASSWORD": "password",
        "PGDATABASE": "dbname",
        "PGSSLMODE": "sslmode",
        "PGSSLROOTCERT": "sslrootcert",
        "PGSSLCERT": "sslcert",
        "PGSSLKEY": "sslkey",
        "PGCONNECT_TIMEOUT": "connect_timeout",
    }
    return {names[k]: v for k, v in target.env.items() if k in names}


def _say(out: IO[str] | None, text: str) -> None:
    if out is not None:
        out.write(text + "\n")
        out.flush()


_DUMPING = re.compile(r'dumping contents of table "(?:[^"]+\.)?([^"]+)"')
_RESTORING = re.compile(r'processing data for table "(?:[^"]+\.)?([^"]+)"')


def _follow(
    process: subprocess.Popen[str], pattern: re.Pattern[str], total: int, out: IO[str] | None
) -> list[str]:
    """Print `[n/total] table` as the tool's --verbose output names each table.

    Returns the tool's other stderr lines, for the error message if it fails.
    """
    assert process.stderr is not None
    done = 0
    other: list[str] = []
    for line in process.stderr:
        match = pattern.search(line)
        if match:
            done += 1
            _say(out, f"  [{done}/{max(total, done)}] {match[1]}")
        elif " error: " in line or "warning" in line.lower() or line.startswith("FATAL"):
            other.append(line.strip())
    return other


def database_backup(*, path: Path, out: IO[str] | None = sys.stderr) -> BackupReport:
    """Dump memflow's database to `path` (pg_dump custom format), atomically."""
    target = database_target()
    tables = _user_tables(target)
    if MARKER_TABLE not in tables:
        raise BackupError(
            f"{target.label} holds no memflow data (no {MARKER_TABLE} table); "
            "run `memflow migrate` or point DATABASE_URL at memflow's database.",
            code="not_a_memflow_database",
        )
    path = path.resolve()
    if path.is_dir():
        raise BackupError(f"{path} is a directory; name a file.", code="invalid_path")
    if not path.parent.is_dir():
        raise BackupError(f"The directory {path.parent} does not exist.", code="invalid_path")
    partial = path.with_name(path.name + ".partial")
    # Created owner-only before pg_dump writes into it: a backup holds every memory and key hash.
    partial.unlink(missing_ok=True)
    os.close(os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    _say(out, f"Backing up {target.label} ({len(tables)} tables) to {path}")
    started = time.monotonic()
    process = subprocess.Popen(
        [
            pg_tool("pg_dump"),
            "--format=custom",
            "--no-owner",
            "--no-privileges",
            "--verbose",
            f"--file={partial}",
        ],
        env=_run_env(target),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        errors = _follow(process, _DUMPING, len(tables), out)
        status = process.wait()
    except BaseException:
        process.kill()
        process.wait()
        partial.unlink(missing_ok=True)
        raise
    if status != 0:
        partial.unlink(missing_ok=True)
        raise BackupError(
            "pg_dump failed: " + ("; ".join(errors) or f"exit status {status}"),
            code="backup_failed",
        )
    with partial.open("rb") as handle:
        os.fsync(handle.fileno())
    partial.replace(path)
    report = BackupReport(
        path=path,
        tables=len(tables),
        bytes=path.stat().st_size,
        seconds=time.monotonic() - started,
    )
    _say(
        out,
        f"Backup complete: {path} ({report.bytes / 1_048_576:.1f} MiB, "
        f"{report.tables} tables, {report.seconds:.1f}s).",
    )
    return report


def _archive_tables(path: Path) -> list[str]:
    """The tables whose data the archive holds, or an error if it is not an archive."""
    listing = subprocess.run(
        [pg_tool("pg_restore"), "--list", str(path)],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    if listing.returncode != 0:
        raise BackupError(
            f"{path} is not a memflow backup (not a pg_dump archive in custom format): "
            + listing.stderr.strip().removeprefix("pg_restore: error: "),
            code="not_a_backup",
        )
    tables = []
    for line in listing.stdout.splitlines():
        # e.g. `4123; 0 16390 TABLE DATA public memories_memory postgres`
        parts = line.split()
        if len(parts) >= 6 and parts[3:5] == ["TABLE", "DATA"]:
            tables.append(parts[6] if len(parts) > 6 else parts[5])
    if MARKER_TABLE not in tables:
        raise BackupError(
            f"{path} is a pg_dump archive but not of a memflow database "
            f"(it has no {MARKER_TABLE} table).",
            code="not_a_backup",
        )
    return tables


def database_restore(
    *, path: Path, replace: bool = False, out: IO[str] | None = sys.stderr
) -> RestoreReport:
    """Restore a `database_backup` archive into memflow's database, in one transaction.

    Precondition: nothing else is using the target (stop `memflow serve` and
    workers first); a restore that waits over LOCK_TIMEOUT for a lock fails
    and changes nothing.
    """
    path = path.resolve()
    if not path.is_file():
        raise BackupError(f"{path} does not exist.", code="not_found")
    archived = _archive_tables(path)
    target = database_target()
    present = _user_tables(target)
    if present and not replace:
        raise BackupError(
            f"{target.label} already holds {len(present)} tables. Restore into an empty "
            "database (a new data directory, or a new DATABASE_URL database), or pass "
            "--replace to drop what is there first.",
            code="target_not_empty",
        )
    _say(
        out,
        f"Restoring {path} ({len(archived)} tables) into {target.label}"
        + (", replacing what is there" if present else ""),
    )
    started = time.monotonic()
    prologue = f"SET lock_timeout = '{LOCK_TIMEOUT}';\n"
    if present:
        prologue += "DROP SCHEMA public CASCADE;\nCREATE SCHEMA public;\n"
    failure = _restore_piped(path, _run_env(target), prologue, tables=len(archived), out=out)
    if failure is not None:
        if "lock timeout" in failure:
            raise BackupError(
                f"{target.label} is in use (a lock was held for over {LOCK_TIMEOUT}): stop "
                "`memflow serve` and any workers, then restore again. Nothing was changed.",
                code="database_in_use",
            )
        raise BackupError(
            f"The restore failed and was rolled back, nothing was changed: {failure}",
            code="restore_failed",
        )
    report = RestoreReport(path=path, tables=len(archived), seconds=time.monotonic() - started)
    _say(out, f"Restore complete: {report.tables} tables in {report.seconds:.1f}s.")
    return report


def _restore_piped(
    path: Path, env: dict[str, str], prologue: str, *, tables: int, out: IO[str] | None
) -> str | None:
    """Run the archive through pg_restore into psql; None, or what went wrong.

    pg_restore writes the SQL script; psql runs it in one transaction, behind
    `prologue` (which, for --replace, empties the target in that same transaction).
    """
    restore = subprocess.Popen(
        [
            pg_tool("pg_restore"),
            "--no-owner",
            "--no-privileges",
            "--verbose",
            "--file=-",
            str(path),
        ],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    script = subprocess.Popen(
        [
            pg_tool("psql"),
            "--no-psqlrc",
            "--quiet",
            "--single-transaction",
            "--set=ON_ERROR_STOP=1",
            "--file=-",
        ],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert restore.stdout is not None and script.stdin is not None
    try:
        feeder = _Pump(prologue, restore.stdout, script.stdin)
        feeder.start()
        restore_errors = _follow(restore, _RESTORING, tables, out)
        restore_status = restore.wait()
        feeder.join()
        assert script.stderr is not None
        script_errors = [line.strip() for line in script.stderr if line.strip()]
        script_status = script.wait()
    except BaseException:
        restore.kill()
        script.kill()
        restore.wait()
        script.wait()
        raise
    if restore_status != 0 or script_status != 0 or feeder.error:
        return "; ".join(script_errors + restore_errors) or feeder.error or "unknown error"
    return None


class _Pump:
    """Copy pg_restore's script into psql on a thread, after the prologue."""

    def __init__(self, prologue: str, source: IO[str], sink: IO[str]) -> None:
        self.prologue, self.source, self.sink = prologue, source, sink
        self.error = ""
        self.thread = threading.Thread(target=self.run, daemon=True)

    def start(self) -> None:
        self.thread.start()

    def join(self) -> None:
        self.thread.join()

    def run(self) -> None:
        try:
            self.sink.write(self.prologue)
            shutil.copyfileobj(self.source, self.sink, 1 << 16)
        except BrokenPipeError:
            # psql stopped (an error): drain pg_restore so it can exit too.
            self.error = "psql stopped reading the script"
            while self.source.read(1 << 16):
                pass
        finally:
            with contextlib.suppress(BrokenPipeError):
                self.sink.close()
