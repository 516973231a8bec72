"""The `memflow` command: serve, worker, migrate, doctor, createuser, createkey,
backup, restore, import, export, … (see `memflow --help`).

Each sub-command is a thin wrapper around services; what it prints for
people goes to stderr, what a script captures goes to stdout. The agent-side
commands live in `cli_agent`, bench and loadtest in `cli_bench`, and what
every command stands on in `cli_base`.
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from memflow_site.cli.agent import add_agent_commands, cmd_context
from memflow_site.cli.base import (
    CommandError,
    data_dir,
    migrate,
    say,
    setup_django,
    write_private,
)
from memflow_site.cli.bench import add_bench_commands

__all__ = ["CommandError", "build_parser", "data_dir", "main", "migrate", "say", "setup_django"]


def cmd_migrate(args: argparse.Namespace) -> int:
    setup_django()
    migrate(verbosity=1)
    return 0


# --- users and keys ----------------------------------------------------------


def cmd_createuser(args: argparse.Namespace) -> int:
    setup_django()
    from contexts.tenancy import services

    password = args.password
    if password is None:
        if not sys.stdin.isatty():
            raise CommandError("No --password given and no terminal to ask for one on.")
        password = getpass.getpass("Password: ")
        if password != getpass.getpass("Password (again): "):
            raise CommandError("The two passwords differ.")
    user = services.user_create(
        username=args.username, password=password, email=args.email or "", admin=args.admin
    )
    say(f"Created {'admin ' if args.admin else ''}user {user.username}.")
    return 0


def cmd_createkey(args: argparse.Namespace) -> int:
    setup_django()
    from django.contrib.auth import get_user_model

    from contexts.models import Workspace
    from contexts.tenancy import services

    user = get_user_model().objects.filter(username__iexact=args.user).first()
    if user is None:
        raise CommandError(f"There is no user {args.user!r}; create one with `memflow createuser`.")
    workspace = None
    if args.workspace:
        workspace = Workspace.objects.filter(slug__iexact=args.workspace).first()
        if workspace is None:
            raise CommandError(f"There is no workspace {args.workspace!r}.")
    created = services.apikey_create(
        user=user,
        name=args.name or "",
        scope=args.scope,
        workspace=workspace,
    )
    where = f"workspace {workspace.slug}" if workspace else "all of the user's workspaces"
    say(f"Created a {args.scope} key for {user.username} on {where}. It is shown once:")
    print(created.raw, flush=True)
    return 0


# --- doctor ------------------------------------------------------------------


def cmd_doctor(args: argparse.Namespace) -> int:
    from memflow_site.cli.doctor import run_doctor

    setup_django()
    return run_doctor(require_worker=args.require_worker)


# --- serve and worker --------------------------------------------------------


def _write_first_run(directory: Path, text: str) -> Path:
    path = directory / "first-run-credentials.txt"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    os.chmod(path, 0o600)
    return path


GRACEFUL_SHUTDOWN_SECONDS = 3


def cmd_serve(args: argparse.Namespace) -> int:
    setup_django()
    from django.conf import settings
    from django.db import connections

    from contexts.tenancy.services import first_run_bootstrap
    from memflow_site import embedded_pg
    from memflow_site.metrics import multiprocess_dir

    directory = data_dir()
    if settings.DATABASE_URL:
        say("Postgres: the server named by DATABASE_URL (no embedded server started).")
    else:
        started = time.monotonic()
        server = embedded_pg.ensure_running(directory)
        say(
            f"Postgres: embedded, data in {server.pgdata} (ready in {time.monotonic() - started:.1f}s)."
        )
    migrate(verbosity=0)

    first = first_run_bootstrap()
    url = f"http://{args.host}:{args.port}/"
    if first is not None:
        text = (
            f"memflow first run — keep this safe, it is not shown again.\n"
            f"dashboard: {url}\nusername: {first.username}\npassword: {first.password}\n"
            f"workspace: {first.workspace.slug}\napi key: {first.raw_key}\n"
        )
        path = _write_first_run(directory, text)
        say("")
        say(text.rstrip())
        say(f"(also written to {path}, mode 0600)")
        say("")
    connections.close_all()

    env = dict(os.environ, MEMFLOW_DATA_DIR=str(directory))
    # The web processes keep a pool of connections (see settings): one per
    # request thread, and a few for the MCP tools' threads and recall's second arm.
    web_env = dict(env)
    web_env.setdefault("MEMFLOW_DB_POOL", "serve")
    web_env.setdefault("MEMFLOW_STATEMENT_TIMEOUT_MS", str(settings.WEB_STATEMENT_TIMEOUT_MS))
    # One directory for every web process's figures, so /metrics adds them up.
    web_env.setdefault("PROMETHEUS_MULTIPROC_DIR", str(multiprocess_dir(directory)))
    children: dict[str, subprocess.Popen[bytes]] = {
        "web": subprocess.Popen(
            [
                sys.executable,
                "-m",
                "uvicorn",
                "memflow_site.asgi:application",
                "--host",
                args.host,
                "--port",
                str(args.port),
                "--workers",
                str(args.web_workers),
                "--log-level",
                "warning",
                # An open MCP stream or a hung hook connection never ends by
                # itself: stopping waits this long for them, then closes them.
                "--timeout-graceful-shutdown",
                str(GRACEFUL_SHUTDOWN_SECONDS),
            ],
            env=web_env,
        )
    }
    if not args.no_worker:
        children["worker"] = subprocess.Popen(
            [sys.executable, "-m", "memflow_site.cli.main", "worker"], env=env
        )
    say(f"memflow is serving the dashboard and API at {url}  (Ctrl-C stops everything)")
    return _supervise(children)


def _supervise(children: dict[str, subprocess.Popen[bytes]]) -> int:
    """Wait on the children; when one dies or we are told to stop, stop all."""
    stopping = False

    def stop(signum: int, frame: Any) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    status = 0
    while not stopping:
        for name, child in children.items():
            code = child.poll()
            if code is not None:
                say(f"memflow: the {name} process exited with status {code}; stopping.")
                status = code or 1
                stopping = True
                break
        else:
            time.sleep(0.2)
    for child in children.values():
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + 15
    for child in children.values():
        try:
            child.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
    from memflow_site import embedded_pg

    embedded_pg.forget_dead_users()
    say("memflow stopped.")
    return status  # the embedded Postgres stops when this, its last user, exits


def cmd_worker(args: argparse.Namespace) -> int:
    setup_django()
    from django.core.management import call_command

    call_command("qcluster")
    return 0


# --- import and export ---------------------------------------------------------


def _core_owner(args: argparse.Namespace) -> tuple[Any, Any, str]:
    from django.contrib.auth import get_user_model

    from contexts.models import Workspace
    from memories import core

    workspace = Workspace.objects.filter(slug__iexact=args.workspace).first()
    if workspace is None:
        raise CommandError(f"There is no workspace {args.workspace!r}.")
    scope = core.scope_for(args.target)
    user = None
    if scope == "user":
        if not args.user:
            raise CommandError("USER core memory belongs to a user: give --user NAME.")
        user = get_user_model().objects.filter(username__iexact=args.user).first()
        if user is None:
            raise CommandError(f"There is no user {args.user!r}.")
    return workspace, user, scope


def _workspace_named(slug: str) -> Any:
    from contexts.models import Workspace

    workspace = Workspace.objects.filter(slug__iexact=slug).first()
    if workspace is None:
        raise CommandError(f"There is no workspace {slug!r}.")
    return workspace


def _user_named(name: str | None) -> Any:
    if not name:
        return None
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.filter(username__iexact=name).first()
    if user is None:
        raise CommandError(f"There is no user {name!r}.")
    return user


def _print_report(report: Any, *, as_json: bool) -> None:
    sys.stderr.write(report.render())
    sys.stderr.flush()
    if as_json:
        print(json.dumps(report.as_json(), ensure_ascii=False, indent=2), flush=True)


def cmd_import(args: argparse.Namespace) -> int:
    setup_django()
    from memories import core

    if args.kind != "core":
        from memflow_site import porting

        if not Path(args.file).exists():
            raise CommandError(f"{args.file} does not exist.")
        report = porting.IMPORTERS[args.kind](
            path=args.file,
            workspace=_workspace_named(args.workspace),
            user=_user_named(args.user),
            progress=True,
        )
        _print_report(report, as_json=args.json)
        return 0
    workspace, user, scope = _core_owner(args)
    text = Path(args.file).read_text(encoding="utf-8")
    from contexts.tenancy.audit import Actor, Origin

    edit = core.core_import_text(
        scope=scope,
        workspace=workspace,
        user=user,
        text=text,
        actor=Actor(origin=Origin.CLI, user=user),
    )
    say(
        f"Imported {args.file} into {core.LABELS[scope]} of {workspace.slug}: {edit.view.chars:,}/{edit.view.limit:,} chars."
    )
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    setup_django()
    from memories import core

    if args.kind == "archive":
        from memflow_site import porting

        if not args.out:
            raise CommandError("An archive needs --out FILE.tar.gz.")
        report = porting.workspace_export(
            workspace=_workspace_named(args.workspace),
            out=args.out,
            user=_user_named(args.user),
            with_compression_refs=args.with_compression_refs,
            progress=True,
        )
        _print_report(report, as_json=args.json)
        return 0
    workspace, user, scope = _core_owner(args)
    text = core.core_export_text(core.core_view(scope=scope, user=user, workspace=workspace))
    if args.out:
        write_private(Path(args.out), text.encode("utf-8"))
        say(f"Wrote {core.LABELS[scope]} of {workspace.slug} to {args.out}.")
    else:
        sys.stdout.write(text)
    return 0


# --- backup and restore -------------------------------------------------------


def cmd_backup(args: argparse.Namespace) -> int:
    setup_django()
    from memflow_site.cli.backup import database_backup

    database_backup(path=Path(args.file))
    return 0


def cmd_restore(args: argparse.Namespace) -> int:
    setup_django()
    from memflow_site.cli.backup import database_restore

    database_restore(path=Path(args.file), replace=args.replace)
    # A backup from an older memflow comes up to this version's schema.
    migrate(verbosity=0)
    say("Migrations applied; memflow can be started.")
    return 0


# --- entry point -------------------------------------------------------------


class _Version(argparse.Action):
    # Looked up only when asked: every hook builds this parser, on the turn's time.
    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        from memflow_site.version import __version__

        print(f"memflow {__version__}")
        parser.exit()


def _add_server_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The server's own commands: serve, worker, migrate, doctor, users and keys at creation."""
    serve = sub.add_parser(
        "serve", help="start Postgres (if embedded), migrate, serve the web app and a worker"
    )
    serve.add_argument("--host", default=os.environ.get("MEMFLOW_HOST", "127.0.0.1"))
    serve.add_argument("--port", type=int, default=int(os.environ.get("MEMFLOW_PORT", "8000")))
    serve.add_argument("--web-workers", type=int, default=1, help="uvicorn worker processes")
    serve.add_argument("--no-worker", action="store_true", help="do not start a background worker")
    serve.set_defaults(func=cmd_serve)

    worker = sub.add_parser("worker", help="run a background worker (django-q2) only")
    worker.set_defaults(func=cmd_worker)

    mig = sub.add_parser("migrate", help="apply database migrations")
    mig.set_defaults(func=cmd_migrate)

    doctor = sub.add_parser("doctor", help="check the installation and say what is wrong")
    doctor.add_argument(
        "--require-worker", action="store_true", help="fail when no worker is running"
    )
    doctor.set_defaults(func=cmd_doctor)

    cu = sub.add_parser("createuser", help="create a user (non-interactive with --password)")
    cu.add_argument("username")
    cu.add_argument("--email")
    cu.add_argument("--password")
    cu.add_argument("--admin", action="store_true", help="a superuser, who may use /admin/")
    cu.set_defaults(func=cmd_createuser)

    ck = sub.add_parser("createkey", help="create an API key; prints the raw key alone on stdout")
    ck.add_argument("--user", required=True)
    ck.add_argument("--workspace", help="restrict the key to this workspace")
    ck.add_argument("--scope", choices=["read", "write", "admin"], default="write")
    ck.add_argument("--name")
    ck.set_defaults(func=cmd_createkey)


def _add_data_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Moving data: import, export, backup, restore, declarations."""
    imp = sub.add_parser(
        "import",
        help="import a FlyMemory library, HME files, a MEMFLOW directory, a skills folder, "
        "a mem0 export, a memflow archive, or one core file (core)",
    )
    imp.add_argument(
        "kind", choices=["core", "flymemory", "hme", "memflow-dir", "skills", "mem0", "archive"]
    )
    imp.add_argument("file", metavar="PATH")
    imp.add_argument("--workspace", required=True)
    imp.add_argument("--target", choices=["memory", "user"], default="memory", help="core only")
    imp.add_argument(
        "--user", help="owner of a USER document; owner of the imported memories and skills"
    )
    imp.add_argument("--json", action="store_true", help="also print the report as JSON")
    imp.set_defaults(func=cmd_import)

    exp = sub.add_parser(
        "export",
        help="write a workspace as a portable archive (--out FILE.tar.gz), or one core file",
    )
    exp.add_argument("kind", nargs="?", choices=["archive", "core"], default="archive")
    exp.add_argument("--workspace", required=True)
    exp.add_argument("--target", choices=["memory", "user"], default="memory", help="core only")
    exp.add_argument(
        "--user", help="owner of a USER document (archive: include that user's USER.md)"
    )
    exp.add_argument("--out", help="write here (core: instead of stdout)")
    exp.add_argument(
        "--with-compression-refs",
        action="store_true",
        help="archive: include the stored originals of compressed tool results",
    )
    exp.add_argument("--json", action="store_true", help="also print the report as JSON")
    exp.set_defaults(func=cmd_export)

    backup = sub.add_parser(
        "backup", help="write the whole database to FILE (pg_dump custom format)"
    )
    backup.add_argument("file", metavar="FILE")
    backup.set_defaults(func=cmd_backup)

    restore = sub.add_parser(
        "restore", help="restore a `memflow backup` FILE into an empty database, in one transaction"
    )
    restore.add_argument("file", metavar="FILE")
    restore.add_argument(
        "--replace",
        action="store_true",
        help="drop what the database holds first (in the same transaction)",
    )
    restore.set_defaults(func=cmd_restore)

    context = sub.add_parser(
        "context",
        help="print the context a session opened in DIR is given; "
        "`context push DIR` uploads DIR's declarations and files to the server",
    )
    context.add_argument(
        "target", nargs="*", metavar="[push] DIR", help="the directory (default: here)"
    )
    context.add_argument("--json", action="store_true", help="the assembly as JSON")
    context.add_argument("--discover", choices=["nearest", "cwd"], help="overrides the options")
    context.add_argument("--device", help="the value of ${device} (default: the .device lookup)")
    context.add_argument("--hostname", help="the value of ${hostname} (default: this machine's)")
    context.add_argument("--config", help="a YAML or JSON file of options (perFileBytes, …)")
    context.add_argument(
        "--delegation-depth", type=int, default=0, help="the session's delegation depth"
    )
    context.set_defaults(func=cmd_context)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="memflow", description="A memory server for coding agents."
    )
    parser.add_argument(
        "--version", action=_Version, nargs=0, help="print memflow's version and exit"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    _add_server_commands(sub)
    add_agent_commands(sub)
    _add_data_commands(sub)
    add_bench_commands(sub)
    from memflow_site.cli import admin as admin_cli  # users, workspaces, members, keys

    admin_cli.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except CommandError as exc:
        say(f"memflow: {exc}")
        return 1
    except Exception as exc:
        from contexts.errors import MemflowError

        if isinstance(exc, MemflowError):
            say(f"memflow: {exc.detail}")
            return 1
        raise


if __name__ == "__main__":
    sys.exit(main())
