"""`memflow users|workspaces|members|keys`, the server administrator's commands.

The installed `memflow` runs for real against this run's test database
(DATABASE_URL) once per command it is worth a process for; the many refusals
run through the same entry point (`cli.main`) in this process, where each
costs no Django start-up. What the commands did is checked in the database and
through the REST API.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from typing import Any

import pytest
from django.conf.global_settings import PASSWORD_HASHERS
from rest_framework.test import APIClient

from contexts.models import ApiKey, Membership, Workspace
from contexts.tenancy import services
from memflow_site.cli import main as cli
from memories.models import Memory
from tests.memflow_site.helpers import env_for, memflow
from tests.reliability.conftest import database_url_for_tests

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")


def key_status(raw_key: str) -> int:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw_key}")
    return int(client.get("/api/v1/workspaces/").status_code)


@dataclass
class Ran:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


@pytest.fixture
def run(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Any) -> Any:
    """`memflow ARGS` through its entry point in this process, on this test's database."""
    monkeypatch.setenv("MEMFLOW_DATA_DIR", str(tmp_path / "data"))

    def run(*args: str, input: str = "") -> Ran:
        monkeypatch.setattr("sys.stdin", io.StringIO(input))
        capsys.readouterr()
        try:
            code = cli.main(list(args))
        except SystemExit as exc:  # argparse's refusals
            code = int(exc.code or 0)
        out, err = capsys.readouterr()
        return Ran(code, out, err)

    return run


def refusal(ran: Ran) -> str:
    """The one line a refused command says; it must have exited 1 and printed nothing else."""
    lines = ran.err.strip().splitlines()
    assert ran.code == 1 and ran.out == "", ran
    assert len(lines) == 1 and lines[0].startswith("memflow: "), ran.err
    return lines[0].removeprefix("memflow: ")


@pytest.mark.django_db(transaction=True)
def test_the_installed_command_manages_users_and_keys(tmp_path, alice, bob, acme, settings):
    env = env_for(tmp_path / "data", database_url=database_url_for_tests())
    raw = services.apikey_create(user=bob, name="ci", workspace=acme).raw

    table = memflow("users", "list", env=env).stdout.splitlines()
    assert table[0].split()[:5] == ["USERNAME", "ACTIVE", "ADMIN", "WORKSPACES", "KEYS"]
    rows = {line.split()[0]: line.split()[1:4] for line in table[1:]}
    assert rows["alice"] == ["yes", "1", "0"] and rows["bob"] == ["yes", "1", "1"]

    memflow("users", "deactivate", "BOB", env=env)  # names match in any case
    assert key_status(raw) == 401  # the key stops working with its user

    memflow("users", "set-password", "alice", env=env, input="a-long-new-password\n")
    # Hashed as a server does; this process hashes fast, but must be able to read it.
    settings.PASSWORD_HASHERS = [*settings.PASSWORD_HASHERS, *PASSWORD_HASHERS]
    alice.refresh_from_db()
    assert alice.check_password("a-long-new-password")
    # Never a password in argv, where `ps` and shell history would show it.
    in_argv = memflow("users", "set-password", "alice", "hunter2-hunter2", env=env, check=False)
    assert in_argv.returncode == 2 and "unrecognized arguments" in in_argv.stderr

    listed = memflow("keys", "list", "--json", env=env)
    assert [(k["user"], k["workspace"], k["name"]) for k in json.loads(listed.stdout)] == [
        ("bob", "acme", "ci")
    ]
    assert raw not in listed.stdout + listed.stderr
    key_id = json.loads(listed.stdout)[0]["id"]
    memflow("keys", "revoke", str(key_id), env=env)
    memflow("users", "activate", "bob", env=env)
    assert key_status(raw) == 401  # its user is back, the revoked key is not

    unknown = memflow("members", "add", "acme", "nobody", env=env, check=False)
    assert (unknown.returncode, unknown.stdout, unknown.stderr) == (
        1,
        "",
        "memflow: No user 'nobody'.\n",
    )


@pytest.mark.django_db
def test_users_deactivate_activate_and_password_refusals(run, alice, bob):
    raw = services.apikey_create(user=bob).raw
    deactivated = run("users", "deactivate", "bob", "--json")
    assert deactivated.json()["active"] is False and "refused" in deactivated.err
    assert run("users", "list", "--json").json()[1] == {
        **run("users", "list", "--json").json()[1],
        "username": "bob",
        "active": False,
        "active_keys": 1,
    }
    assert key_status(raw) == 401
    assert run("users", "activate", "bob").code == 0
    assert key_status(raw) == 200

    assert "too short" in refusal(run("users", "set-password", "alice", input="short\n"))
    assert "No password" in refusal(run("users", "set-password", "alice", input=""))
    assert refusal(run("users", "deactivate", "nobody")) == "There is no user 'nobody'."
    alice.refresh_from_db()
    assert alice.check_password("alice-password")  # refused means unchanged


@pytest.mark.django_db
def test_workspaces_are_created_listed_renamed_and_deleted(run, alice, bob, acme):
    created = run("workspaces", "create", "team", "--owner", "bob", "--name", "Team", "--json")
    assert created.json()["slug"] == "team" and created.json()["owners"] == ["bob"]
    Memory.objects.create(workspace=acme, text="Deploys go through staging", norm_hash="x")

    listed = {w["slug"]: w for w in run("workspaces", "list", "--json").json()}
    assert listed["acme"]["owners"] == ["alice"]
    assert listed["acme"]["members"] == 3 and listed["acme"]["memories"] == 1
    assert listed["team"]["members"] == 1 and listed["team"]["memories"] == 0
    table = run("workspaces", "list").out.splitlines()
    assert table[0].split() == ["SLUG", "NAME", "OWNERS", "MEMBERS", "MEMORIES", "CREATED"]
    assert table[1].split()[:6] == ["acme", "Acme", "Rockets", "alice", "3", "1"]

    assert "is taken" in refusal(run("workspaces", "create", "team", "--owner", "bob"))
    assert "lower-case letters" in refusal(
        run("workspaces", "create", "Not A Slug", "--owner", "bob")
    )
    assert "no user 'nobody'" in refusal(run("workspaces", "create", "x", "--owner", "nobody"))

    assert run("workspaces", "rename", "team", "Team Rockets").code == 0
    assert Workspace.objects.get(slug="team").name == "Team Rockets"
    renamed = run("workspaces", "rename", "team", "--slug", "rockets")
    assert "MEMFLOW_WORKSPACE" in renamed.err  # clients naming the old slug must change
    assert Workspace.objects.get(slug="rockets").memberships.get().user == bob
    assert "is taken" in refusal(run("workspaces", "rename", "rockets", "--slug", "ACME"))
    assert "Give a new NAME" in refusal(run("workspaces", "rename", "rockets"))

    assert "--yes" in refusal(run("workspaces", "delete", "acme"))  # no terminal to ask on
    assert Memory.objects.filter(workspace=acme).exists()
    assert run("workspaces", "delete", "acme", "--yes").code == 0
    assert not Workspace.objects.filter(slug="acme").exists()
    assert not Memory.objects.filter(text="Deploys go through staging").exists()
    assert "no workspace 'acme'" in refusal(run("workspaces", "delete", "acme", "--yes"))


@pytest.mark.django_db
def test_members_are_added_changed_and_removed_and_one_owner_stays(run, alice, bob, mallory):
    services.workspace_create(user=alice, slug="lab")
    added = run("members", "add", "lab", "bob", "--role", "viewer", "--json").json()
    assert (added["workspace"], added["username"], added["role"]) == ("lab", "bob", "viewer")
    assert "already a member" in refusal(run("members", "add", "lab", "bob"))
    assert "not a member" in refusal(run("members", "role", "lab", "mallory", "editor"))

    assert run("members", "role", "lab", "bob", "owner").code == 0
    assert run("members", "role", "lab", "alice", "editor").code == 0  # bob owns it now
    last_owner = "A workspace must keep at least one owner."
    assert refusal(run("members", "role", "lab", "bob", "viewer")) == last_owner
    assert refusal(run("members", "remove", "lab", "bob")) == last_owner

    assert run("members", "remove", "lab", "alice").code == 0
    members = run("members", "list", "lab", "--json").json()
    assert [(m["username"], m["role"]) for m in members] == [("bob", "owner")]
    assert Membership.objects.filter(workspace__slug="lab").count() == 1
    table = run("members", "list", "lab").out.splitlines()
    assert table[0].split() == ["USERNAME", "ROLE", "SINCE"]
    assert table[1].split()[:2] == ["bob", "owner"]
    bad_role = run("members", "role", "lab", "bob", "king")
    assert bad_role.code == 2 and "invalid choice: 'king'" in bad_role.err
    assert "not a member" in refusal(run("members", "remove", "lab", "alice"))


@pytest.mark.django_db
def test_keys_are_listed_and_revoked_and_no_raw_key_is_ever_printed(run, alice, bob, acme):
    alices = services.apikey_create(user=alice, name="laptop", scope=ApiKey.Scope.ADMIN)
    bobs = services.apikey_create(user=bob, name="ci", workspace=acme, scope=ApiKey.Scope.READ)

    listed = run("keys", "list", "--json")
    keys = {k["id"]: k for k in listed.json()}
    assert set(keys) == {alices.key.pk, bobs.key.pk}
    bob_key = keys[bobs.key.pk]
    assert (bob_key["user"], bob_key["scope"], bob_key["workspace"]) == ("bob", "read", "acme")
    table = run("keys", "list")
    assert table.out.splitlines()[0].split()[:4] == ["ID", "PREFIX", "USER", "SCOPE"]
    assert alices.key.prefix in table.out
    for output in (listed, table):
        assert alices.raw not in output.out + output.err
        assert bobs.raw not in output.out + output.err
    assert [k["id"] for k in run("keys", "list", "--user", "bob", "--json").json()] == [bobs.key.pk]
    assert [k["id"] for k in run("keys", "list", "--workspace", "acme", "--json").json()] == [
        bobs.key.pk
    ]

    revoked = run("keys", "revoke", str(bobs.key.pk), "--json")
    assert revoked.json()["revoked_at"] is not None and bobs.raw not in revoked.out
    assert key_status(bobs.raw) == 401
    assert key_status(alices.raw) == 200
    assert [k["id"] for k in run("keys", "list", "--json").json()] == [alices.key.pk]
    everything = run("keys", "list", "--all", "--json").json()
    assert {k["id"] for k in everything} == {alices.key.pk, bobs.key.pk}
    assert "already revoked" in run("keys", "revoke", str(bobs.key.pk)).err
    assert refusal(run("keys", "revoke", "999999")) == "There is no key 999999."
    bob.refresh_from_db()
    assert bob.is_active  # revoking a key leaves its user be
