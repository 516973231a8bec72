"""`memflow users|workspaces|members|keys`: the server administrator's commands.

They run on the server against its database, as `createuser` does, and are
thin over `contexts.tenancy.services` (writes) and `contexts.tenancy.admin_selectors` (reads).
Lists print a table on stdout, or JSON with `--json`; what is said to the
person goes to stderr. A raw API key is never printed here: only
`memflow createkey` shows one, once.

Every hook builds the `memflow` parser (cli.py), so this module imports
nothing heavy until a command runs.
"""

from __future__ import annotations

import argparse
import getpass
import json
import sys
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from django.contrib.auth.models import User

    from contexts.models import ApiKey, Membership, Workspace

Handler = Callable[[argparse.Namespace], int]
ROLES = ["owner", "editor", "viewer"]


def _setup() -> None:
    from memflow_site.cli.main import setup_django

    setup_django()


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _refuse(text: str, code: str) -> Exception:
    from contexts.errors import Invalid

    return Invalid(text, code=code)


# --- output --------------------------------------------------------------------


def _when(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def _short(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M") if value else "-"


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """Columns padded to their widest cell, two spaces apart."""
    cells = [[str(h) for h in headers], *([str(c) for c in row] for row in rows)]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells
    )


def _emit(
    args: argparse.Namespace,
    records: list[dict[str, Any]],
    headers: Sequence[str],
    row: Callable[[dict[str, Any]], Sequence[Any]],
    empty: str,
) -> int:
    if args.json:
        print(json.dumps(records, indent=2, ensure_ascii=False), flush=True)
    elif records:
        print(table(headers, (row(r) for r in records)), flush=True)
    else:
        _say(empty)
    return 0


def _emit_one(args: argparse.Namespace, record: dict[str, Any], message: str) -> int:
    _say(message)
    if args.json:
        print(json.dumps(record, indent=2, ensure_ascii=False), flush=True)
    return 0


def _user_json(user: User) -> dict[str, Any]:
    return {
        "username": user.username,
        "email": user.email,
        "active": user.is_active,
        "admin": user.is_superuser,
        "workspaces": getattr(user, "workspace_count", None),
        "active_keys": getattr(user, "active_key_count", None),
        "date_joined": _when(user.date_joined),
        "last_login": _when(user.last_login),
    }


def _workspace_json(workspace: Workspace) -> dict[str, Any]:
    owners = getattr(workspace, "owners", None)
    return {
        "slug": workspace.slug,
        "name": workspace.name,
        "owners": [m.user.username for m in owners] if owners is not None else None,
        "members": getattr(workspace, "member_count", None),
        "memories": getattr(workspace, "memory_count", None),
        "created_at": _when(workspace.created_at),
    }


def _member_json(membership: Membership) -> dict[str, Any]:
    return {
        "workspace": membership.workspace.slug,
        "username": membership.user.username,
        "role": membership.role,
        "created_at": _when(membership.created_at),
    }


def _key_json(key: ApiKey) -> dict[str, Any]:
    return {
        "id": key.pk,
        "prefix": key.prefix,
        "name": key.name,
        "user": key.user.username,
        "scope": key.scope,
        "workspace": key.workspace.slug if key.workspace else None,
        "created_at": _when(key.created_at),
        "last_used_at": _when(key.last_used_at),
        "revoked_at": _when(key.revoked_at),
    }


# --- users -----------------------------------------------------------------------


def users_list(args: argparse.Namespace) -> int:
    _setup()
    from contexts.tenancy import admin_selectors

    records = [_user_json(u) for u in admin_selectors.user_list()]
    return _emit(
        args,
        records,
        ["USERNAME", "ACTIVE", "ADMIN", "WORKSPACES", "KEYS", "LAST LOGIN", "EMAIL"],
        lambda r: (
            r["username"],
            "yes" if r["active"] else "no",
            "yes" if r["admin"] else "",
            r["workspaces"],
            r["active_keys"],
            (r["last_login"] or "-")[:16].replace("T", " "),
            r["email"],
        ),
        "No users; create one with `memflow createuser`.",
    )


def _users_set_active(args: argparse.Namespace, *, active: bool) -> int:
    _setup()
    from contexts.tenancy import admin_selectors, services

    user = services.user_set_active(
        user=admin_selectors.user_get(username=args.username), active=active
    )
    message = (
        f"{user.username} is active again: their logins and API keys work."
        if active
        else f"{user.username} is deactivated: their logins and API keys are refused "
        "(their data and memberships are kept)."
    )
    return _emit_one(args, _user_json(user), message)


def users_deactivate(args: argparse.Namespace) -> int:
    return _users_set_active(args, active=False)


def users_activate(args: argparse.Namespace) -> int:
    return _users_set_active(args, active=True)


def read_password() -> str:
    """Asked twice at a terminal; otherwise the first line of standard input."""
    if sys.stdin.isatty():
        password = getpass.getpass("New password: ")
        if password != getpass.getpass("New password (again): "):
            raise _refuse("The two passwords differ.", "password_mismatch")
        return password
    line = sys.stdin.readline().rstrip("\r\n")
    if not line:
        raise _refuse(
            "No password on standard input (give it as the first line, or run at a terminal).",
            "invalid_password",
        )
    return line


def users_set_password(args: argparse.Namespace) -> int:
    _setup()
    from contexts.tenancy import admin_selectors, services

    user = admin_selectors.user_get(username=args.username)
    services.user_set_password(user=user, password=read_password())
    return _emit_one(
        args,
        _user_json(user),
        f"Password of {user.username} changed; their dashboard sessions are logged out.",
    )


# --- workspaces ------------------------------------------------------------------


def workspaces_list(args: argparse.Namespace) -> int:
    _setup()
    from contexts.tenancy import admin_selectors
    from memories.selectors import memory_counts_by_workspace

    counts = memory_counts_by_workspace()
    records = [
        _workspace_json(w) | {"memories": counts.get(w.pk, 0)}
        for w in admin_selectors.workspace_list_all()
    ]
    return _emit(
        args,
        records,
        ["SLUG", "NAME", "OWNERS", "MEMBERS", "MEMORIES", "CREATED"],
        lambda r: (
            r["slug"],
            r["name"],
            ",".join(r["owners"]) or "-",
            r["members"],
            r["memories"],
            r["created_at"][:10],
        ),
        "No workspaces; create one with `memflow workspaces create SLUG --owner USER`.",
    )


def workspaces_create(args: argparse.Namespace) -> int:
    _setup()
    from contexts.tenancy import admin_selectors, services

    owner = admin_selectors.user_get(username=args.owner)
    workspace = services.workspace_create(user=owner, slug=args.slug, name=args.name or "")
    return _emit_one(
        args,
        _workspace_json(workspace) | {"owners": [owner.username], "members": 1, "memories": 0},
        f"Created workspace {workspace.slug} ({workspace.name}), owned by {owner.username}.",
    )


def workspaces_rename(args: argparse.Namespace) -> int:
    _setup()
    if args.name is None and args.slug is None:
        raise _refuse("Give a new NAME, a new --slug, or both.", "nothing_to_change")
    from contexts.tenancy import admin_selectors, services

    workspace = admin_selectors.workspace_get(slug=args.workspace)
    old_slug = workspace.slug
    workspace = services.workspace_update(workspace=workspace, name=args.name, slug=args.slug)
    message = f"Workspace {workspace.slug} is named {workspace.name!r}."
    if workspace.slug != old_slug:
        message += (
            f" Its slug was {old_slug}: clients that name it (MEMFLOW_WORKSPACE, URLs) "
            "need the new one."
        )
    return _emit_one(args, _workspace_json(workspace), message)


def workspaces_delete(args: argparse.Namespace) -> int:
    _setup()
    from contexts.tenancy import admin_selectors, services

    workspace = admin_selectors.workspace_get(slug=args.workspace)
    if not args.yes:
        if not sys.stdin.isatty():
            raise _refuse(
                f"Deleting {workspace.slug} deletes all its memories; add --yes to confirm.",
                "confirmation_required",
            )
        typed = input(f"This deletes {workspace.slug} and everything in it. Type its slug: ")
        if typed.strip() != workspace.slug:
            raise _refuse("The slug typed differs; nothing was deleted.", "confirmation_required")
    record = _workspace_json(workspace)
    services.workspace_delete(workspace=workspace)
    return _emit_one(args, record, f"Deleted workspace {record['slug']} and everything in it.")


# --- members ---------------------------------------------------------------------


def members_list(args: argparse.Namespace) -> int:
    _setup()
    from contexts.tenancy import admin_selectors, selectors

    workspace = admin_selectors.workspace_get(slug=args.workspace)
    records = [_member_json(m) for m in selectors.membership_list(workspace=workspace)]
    return _emit(
        args,
        records,
        ["USERNAME", "ROLE", "SINCE"],
        lambda r: (r["username"], r["role"], r["created_at"][:10]),
        f"{workspace.slug} has no members.",
    )


def _members_set(args: argparse.Namespace, *, existing_only: bool) -> int:
    _setup()
    from contexts.tenancy import admin_selectors, services

    workspace = admin_selectors.workspace_get(slug=args.workspace)
    membership = services.membership_set(
        workspace=workspace, username=args.username, role=args.role, existing_only=existing_only
    )
    verb = "is now" if existing_only else "added as"
    return _emit_one(
        args,
        _member_json(membership),
        f"{membership.user.username} {verb} {membership.role} of {workspace.slug}.",
    )


def members_add(args: argparse.Namespace) -> int:
    return _members_set(args, existing_only=False)


def members_role(args: argparse.Namespace) -> int:
    return _members_set(args, existing_only=True)


def members_remove(args: argparse.Namespace) -> int:
    _setup()
    from contexts.tenancy import admin_selectors, services

    workspace = admin_selectors.workspace_get(slug=args.workspace)
    services.membership_remove(workspace=workspace, username=args.username)
    record = {"workspace": workspace.slug, "username": args.username, "removed": True}
    return _emit_one(args, record, f"{args.username} removed from {workspace.slug}.")


# --- keys ------------------------------------------------------------------------


def keys_list(args: argparse.Namespace) -> int:
    _setup()
    from contexts.tenancy import admin_selectors

    keys = admin_selectors.apikey_list_all(
        user=admin_selectors.user_get(username=args.user) if args.user else None,
        workspace=admin_selectors.workspace_get(slug=args.workspace) if args.workspace else None,
        include_revoked=args.all,
    )
    records = [_key_json(k) for k in keys]
    return _emit(
        args,
        records,
        ["ID", "PREFIX", "USER", "SCOPE", "WORKSPACE", "NAME", "CREATED", "LAST USED", "REVOKED"],
        lambda r: (
            r["id"],
            r["prefix"] + "…",
            r["user"],
            r["scope"],
            r["workspace"] or "(all)",
            r["name"] or "-",
            (r["created_at"] or "-")[:16].replace("T", " "),
            (r["last_used_at"] or "-")[:16].replace("T", " "),
            (r["revoked_at"] or "-")[:16].replace("T", " "),
        ),
        "No keys" + ("" if args.all else " in use (--all lists revoked ones too)") + ".",
    )


def keys_revoke(args: argparse.Namespace) -> int:
    _setup()
    from contexts.tenancy import admin_selectors, services

    key = admin_selectors.apikey_get(key_id=args.key_id)
    was_active = key.revoked_at is None
    key = services.apikey_revoke(user=key.user, key_id=key.pk)
    message = (
        f"Revoked key {key.pk} ({key.prefix}…) of {key.user.username}."
        if was_active
        else f"Key {key.pk} ({key.prefix}…) was already revoked on {_short(key.revoked_at)}."
    )
    return _emit_one(args, _key_json(key), message)


# --- the parser ------------------------------------------------------------------


def _json_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="JSON on stdout instead of a table")


def _commands(
    parser: argparse.ArgumentParser, actions: dict[str, tuple[Handler, str]]
) -> dict[str, argparse.ArgumentParser]:
    verbs = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    made = {}
    for verb, (func, verb_help) in actions.items():
        made[verb] = verbs.add_parser(verb, help=verb_help, description=verb_help)
        made[verb].set_defaults(func=func)
        _json_flag(made[verb])
    return made


def _users_parser(parser: argparse.ArgumentParser) -> None:
    users = _commands(
        parser,
        {
            "list": (users_list, "every user, with workspaces and live keys"),
            "deactivate": (users_deactivate, "refuse the user's logins and API keys"),
            "activate": (users_activate, "let a deactivated user in again"),
            "set-password": (
                users_set_password,
                "a new password, asked at the terminal or read from stdin's first line",
            ),
        },
    )
    for verb in ("deactivate", "activate", "set-password"):
        users[verb].add_argument("username")


def _workspaces_parser(parser: argparse.ArgumentParser) -> None:
    spaces = _commands(
        parser,
        {
            "list": (workspaces_list, "every workspace, with owners, members and memories"),
            "create": (workspaces_create, "a workspace owned by --owner"),
            "rename": (workspaces_rename, "a new display NAME and/or a new --slug"),
            "delete": (workspaces_delete, "delete a workspace and everything in it"),
        },
    )
    spaces["create"].add_argument("slug")
    spaces["create"].add_argument("--owner", required=True, help="the user who owns it")
    spaces["create"].add_argument("--name", help="display name (default: the slug)")
    spaces["rename"].add_argument("workspace", metavar="SLUG")
    spaces["rename"].add_argument("name", nargs="?", metavar="NAME", help="the new display name")
    spaces["rename"].add_argument("--slug", help="a new slug (clients must then use it)")
    spaces["delete"].add_argument("workspace", metavar="SLUG")
    spaces["delete"].add_argument("--yes", action="store_true", help="do not ask to confirm")


def _members_parser(parser: argparse.ArgumentParser) -> None:
    members = _commands(
        parser,
        {
            "list": (members_list, "the members of a workspace and their roles"),
            "add": (members_add, "add a user to a workspace"),
            "remove": (members_remove, "remove a user (a workspace keeps one owner)"),
            "role": (members_role, "change a member's role (a workspace keeps one owner)"),
        },
    )
    for verb, verb_parser in members.items():
        verb_parser.add_argument("workspace", metavar="SLUG")
        if verb != "list":
            verb_parser.add_argument("username")
    members["add"].add_argument("--role", choices=ROLES, default="editor")
    members["role"].add_argument("role", choices=ROLES)


def _keys_parser(parser: argparse.ArgumentParser) -> None:
    keys = _commands(
        parser,
        {
            "list": (keys_list, "live keys (--all: revoked ones too), newest first"),
            "revoke": (keys_revoke, "revoke a key by its ID"),
        },
    )
    keys["list"].add_argument("--user", help="only this user's keys")
    keys["list"].add_argument("--workspace", help="only keys restricted to this workspace")
    keys["list"].add_argument("--all", action="store_true", help="revoked keys too")
    keys["revoke"].add_argument("key_id", type=int, metavar="ID")


GROUPS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None]]] = {
    "users": (
        "list users, deactivate or activate one, set a password (server admin)",
        _users_parser,
    ),
    "workspaces": (
        "list, create, rename or delete workspaces (server admin)",
        _workspaces_parser,
    ),
    "members": (
        "list a workspace's members, add or remove one, change a role (server admin)",
        _members_parser,
    ),
    "keys": (
        "list API keys or revoke one (server admin; raw keys are never shown)",
        _keys_parser,
    ),
}


def group_parser(group: str) -> argparse.ArgumentParser:
    help_text, build = GROUPS[group]
    parser = argparse.ArgumentParser(prog=f"memflow {group}", description=help_text)
    build(parser)
    return parser


def _dispatch(args: argparse.Namespace) -> int:
    parsed = group_parser(args.admin_group).parse_args(args.admin_argv)
    return int(parsed.func(parsed) or 0)


def register(sub: Any) -> None:
    """Add the four command groups to `memflow`'s sub-commands.

    Each group's own parser is built only when it runs: every hook builds
    `memflow`'s parser, and a dozen sub-parsers more would double its cost.
    So the group takes its words as they are (`prefix_chars="+"`: `--json`
    and `--help` are words to it) and hands them to `group_parser`.
    """
    for group, (help_text, _) in GROUPS.items():
        parser = sub.add_parser(group, help=help_text, add_help=False, prefix_chars="+")
        parser.add_argument("admin_argv", nargs=argparse.REMAINDER)
        parser.set_defaults(func=_dispatch, admin_group=group)
