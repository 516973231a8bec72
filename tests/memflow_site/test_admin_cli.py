"""`memflow users|workspaces|members|keys`, run for real against this run's
test database (DATABASE_URL), with what they did checked in the database and
through the REST API."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.conf.global_settings import PASSWORD_HASHERS
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from contexts import services
from contexts.models import ApiKey, Membership, Workspace
from memories.models import Memory
from tests.memflow_site.helpers import env_for, memflow
from tests.reliability.conftest import database_url_for_tests

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
]


@pytest.fixture
def env(tmp_path: Any) -> dict[str, str]:
    return env_for(tmp_path / "data", database_url=database_url_for_tests())


def run_json(*args: str, env: dict[str, str]) -> Any:
    return json.loads(memflow(*args, "--json", env=env).stdout)


def refused(*args: str, env: dict[str, str], input: str | None = None) -> str:
    """The one line a refused command says; it must exit non-zero."""
    result = memflow(*args, env=env, check=False, input=input)
    assert result.returncode == 1, (result.returncode, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("memflow: "), result.stderr
    assert result.stdout == ""
    return lines[0]


def key_status(raw_key: str) -> int:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw_key}")
    return int(client.get("/api/v1/workspaces/").status_code)


def test_users_are_listed_deactivated_activated_and_given_a_password(
    env, alice, bob, acme, settings
):
    raw = services.apikey_create(user=bob).raw

    users = {u["username"]: u for u in run_json("users", "list", env=env)}
    assert users["alice"]["workspaces"] == 1 and users["alice"]["active_keys"] == 0
    assert users["bob"]["workspaces"] == 1 and users["bob"]["active_keys"] == 1
    assert users["bob"]["active"] is True
    table = memflow("users", "list", env=env).stdout.splitlines()
    assert table[0].split()[:3] == ["USERNAME", "ACTIVE", "ADMIN"]
    assert any(line.split()[:2] == ["victor", "yes"] for line in table[1:])

    memflow("users", "deactivate", "BOB", env=env)  # names are matched in any case
    bob.refresh_from_db()
    assert not bob.is_active
    assert key_status(raw) in (401, 403)  # the key stops working with the user
    assert run_json("users", "activate", "bob", env=env)["active"] is True
    assert key_status(raw) == 200

    memflow("users", "set-password", "alice", env=env, input="a-long-new-password\n")
    # The command hashed it as a server does; this process hashes fast, but must read that.
    settings.PASSWORD_HASHERS = [*settings.PASSWORD_HASHERS, *PASSWORD_HASHERS]
    alice.refresh_from_db()
    assert alice.check_password("a-long-new-password")
    assert "too short" in refused("users", "set-password", "alice", env=env, input="short\n")
    assert "No password" in refused("users", "set-password", "alice", env=env)
    # Never a password in argv, where `ps` and shell history would show it.
    in_argv = memflow("users", "set-password", "alice", "hunter2-hunter2", env=env, check=False)
    assert in_argv.returncode == 2 and "unrecognized arguments" in in_argv.stderr
    alice.refresh_from_db()
    assert alice.check_password("a-long-new-password")

    assert refused("users", "deactivate", "nobody", env=env) == (
        "memflow: There is no user 'nobody'."
    )


def test_workspaces_are_created_listed_renamed_and_deleted(env, alice, bob, acme):
    created = run_json("workspaces", "create", "team", "--owner", "bob", "--name", "Team", env=env)
    assert created["slug"] == "team" and created["owners"] == ["bob"]
    Memory.objects.create(workspace=acme, text="Deploys go through staging", norm_hash="x")

    listed = {w["slug"]: w for w in run_json("workspaces", "list", env=env)}
    assert listed["acme"]["owners"] == ["alice"]
    assert listed["acme"]["members"] == 3 and listed["acme"]["memories"] == 1
    assert listed["team"]["members"] == 1 and listed["team"]["memories"] == 0
    assert "is taken" in refused("workspaces", "create", "team", "--owner", "bob", env=env)
    assert "lower-case letters" in refused(
        "workspaces", "create", "Not A Slug", "--owner", "bob", env=env
    )
    assert "no user 'nobody'" in refused("workspaces", "create", "x", "--owner", "nobody", env=env)

    memflow("workspaces", "rename", "team", "Team Rockets", env=env)
    assert Workspace.objects.get(slug="team").name == "Team Rockets"
    renamed = memflow("workspaces", "rename", "team", "--slug", "rockets", env=env)
    assert "MEMFLOW_WORKSPACE" in renamed.stderr  # clients naming the old slug must change
    assert Workspace.objects.get(slug="rockets").memberships.get().user == bob
    assert "is taken" in refused("workspaces", "rename", "rockets", "--slug", "acme", env=env)
    assert "Give a new NAME" in refused("workspaces", "rename", "rockets", env=env)

    assert "--yes" in refused("workspaces", "delete", "acme", env=env)  # no terminal to ask on
    assert Memory.objects.filter(workspace=acme).exists()
    memflow("workspaces", "delete", "acme", "--yes", env=env)
    assert not Workspace.objects.filter(slug="acme").exists()
    assert not Memory.objects.filter(text="Deploys go through staging").exists()
    assert "no workspace 'acme'" in refused("workspaces", "delete", "acme", "--yes", env=env)


def test_members_are_added_changed_and_removed_and_one_owner_stays(env, alice, bob, mallory):
    services.workspace_create(user=alice, slug="lab")
    added = run_json("members", "add", "lab", "bob", "--role", "viewer", env=env)
    assert added == {**added, "workspace": "lab", "username": "bob", "role": "viewer"}
    assert "already a member" in refused("members", "add", "lab", "bob", env=env)
    assert "not a member" in refused("members", "role", "lab", "mallory", "editor", env=env)

    memflow("members", "role", "lab", "bob", "owner", env=env)
    memflow("members", "role", "lab", "alice", "editor", env=env)  # bob owns it now
    last_owner = "memflow: A workspace must keep at least one owner."
    assert refused("members", "role", "lab", "bob", "viewer", env=env) == last_owner
    assert refused("members", "remove", "lab", "bob", env=env) == last_owner

    memflow("members", "remove", "lab", "alice", env=env)
    assert [(m["username"], m["role"]) for m in run_json("members", "list", "lab", env=env)] == [
        ("bob", "owner")
    ]
    assert Membership.objects.filter(workspace__slug="lab").count() == 1
    table = memflow("members", "list", "lab", env=env).stdout.splitlines()
    assert table[0].split() == ["USERNAME", "ROLE", "SINCE"] and table[1].split()[:2] == [
        "bob",
        "owner",
    ]
    bad_role = memflow("members", "role", "lab", "bob", "king", env=env, check=False)
    assert bad_role.returncode == 2 and "invalid choice: 'king'" in bad_role.stderr


def test_keys_are_listed_and_revoked_and_no_raw_key_is_ever_printed(env, alice, bob, acme):
    alices = services.apikey_create(user=alice, name="laptop", scope=ApiKey.Scope.ADMIN)
    bobs = services.apikey_create(user=bob, name="ci", workspace=acme, scope=ApiKey.Scope.READ)

    listed = memflow("keys", "list", "--json", env=env)
    keys = {k["id"]: k for k in json.loads(listed.stdout)}
    assert set(keys) == {alices.key.pk, bobs.key.pk}
    assert keys[bobs.key.pk] == {
        **keys[bobs.key.pk],
        "user": "bob",
        "scope": "read",
        "workspace": "acme",
        "name": "ci",
        "revoked_at": None,
    }
    table = memflow("keys", "list", env=env)
    for output in (listed, table):
        assert alices.raw not in output.stdout + output.stderr
        assert bobs.raw not in output.stdout + output.stderr
    assert alices.key.prefix in table.stdout
    assert [k["id"] for k in run_json("keys", "list", "--user", "bob", env=env)] == [bobs.key.pk]

    revoked = run_json("keys", "revoke", str(bobs.key.pk), env=env)
    assert revoked["revoked_at"] is not None and bobs.raw not in json.dumps(revoked)
    assert key_status(bobs.raw) in (401, 403)
    assert key_status(alices.raw) == 200
    assert [k["id"] for k in run_json("keys", "list", env=env)] == [alices.key.pk]
    everything = run_json("keys", "list", "--all", env=env)
    assert {k["id"] for k in everything} == {alices.key.pk, bobs.key.pk}
    again = memflow("keys", "revoke", str(bobs.key.pk), env=env)
    assert "already revoked" in again.stderr
    assert refused("keys", "revoke", "999999", env=env) == "memflow: There is no key 999999."
    assert User.objects.get(username="bob").is_active  # revoking a key leaves its user be
