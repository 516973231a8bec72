"""The agent-side `memflow` commands: hook, status, ledger, mute, the memory
commands, context, and (un)installing the hooks in a harness's settings."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from memflow_site.cli.base import CommandError, say


def cmd_context(args: argparse.Namespace) -> int:
    # No setup_django(): the resolver is plain Python and runs on an agent's
    # machine with no server and no database.
    from memflow_site.cli import context as context_cli

    try:
        return context_cli.run(args)
    except context_cli.ContextCommandError as exc:
        raise CommandError(str(exc)) from None


# --- hooks ---------------------------------------------------------------------


def cmd_hook(args: argparse.Namespace) -> int:
    from memflow_site.client import hook as hook_client

    return hook_client.main(args.event)


def cmd_read(args: argparse.Namespace) -> int:
    from memflow_site.client import memory as memory_cli

    return memory_cli.run(args)


def cmd_mute(args: argparse.Namespace) -> int:
    from memflow_site.client import hook as hook_client

    return hook_client.mute(args.duration, for_user=args.user)


def cmd_status(args: argparse.Namespace) -> int:
    from memflow_site.client import status as client_status

    return client_status.main(as_json=args.json)


def cmd_ledger(args: argparse.Namespace) -> int:
    from memflow_site.client import ledger as client_ledger

    return client_ledger.main(
        workspace=args.workspace or "", session=args.session or "", top=args.top, as_json=args.json
    )


def _hook_target(args: argparse.Namespace) -> Path:
    from memflow_site.client import install as install_hooks

    if args.dsh:
        return install_hooks.dsh_settings_path(Path(args.dsh))
    return install_hooks.claude_settings_path(
        user=args.user, project_dir=Path.cwd(), shared=args.shared
    )


def cmd_install_hooks(args: argparse.Namespace) -> int:
    from memflow_site.client import hook as hook_client
    from memflow_site.client import install as install_hooks

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
    from memflow_site.client import install as install_hooks

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
    from memflow_site.client import install as install_hooks

    if args.dsh:
        return install_hooks.dsh_uninstall(Path(args.dsh), say=say)
    path = _hook_target(args)
    if path.exists():
        install_hooks.write_json(path, install_hooks.remove_hooks(install_hooks.read_json(path)))
        say(f"memflow hooks removed from {path}.")
    return 0


def add_agent_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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

    from memflow_site.client import memory as memory_cli

    memory_cli.add_parsers(sub, cmd_read)

    status = sub.add_parser(
        "status",
        help="what the hook client resolved: URL, workspace, key, server, where hooks are installed",
    )
    status.add_argument("--json", action="store_true", help="the findings as JSON on stdout")
    status.set_defaults(func=cmd_status)

    ledger = sub.add_parser(
        "ledger",
        help="injection → use rates and the memory ids used most (ranked by uses, as on the "
        "dashboard's ledger page), from the server",
    )
    ledger.add_argument("--workspace", help="default: the client's, else the key's only one")
    ledger.add_argument("--session", help="only this session (the harness's session id)")
    ledger.add_argument("--top", type=int, default=10, help="how many of the most-used ids (1-100)")
    ledger.add_argument("--json", action="store_true", help="the summary as JSON on stdout")
    ledger.set_defaults(func=cmd_ledger)

    mute = sub.add_parser(
        "mute", help="mute the per-turn working context for a while (the tools keep working)"
    )
    mute.add_argument("duration", help="30m, 2h, 1d, or off")
    mute.add_argument("--user", action="store_true", help="only your own sessions in the workspace")
    mute.set_defaults(func=cmd_mute)

    _add_install_commands(sub)


def _add_install_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """install-hooks and uninstall-hooks: which harness, which settings file."""
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
