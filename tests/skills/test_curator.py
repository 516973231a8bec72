"""The curator, with a controlled clock: stale, archive, merge duplicates, the skill limit."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django_q.models import Schedule

from skills import services, tasks
from skills.models import Skill, SkillEvent, SkillVersion
from skills.services import maintenance

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def days(n: float) -> datetime:
    return T0 + timedelta(days=n)


@pytest.fixture
def make(acme, bob):
    def create(name: str, description: str, body: str = "1. do it", **extra) -> Skill:
        return services.skill_create(
            workspace=acme,
            user=bob,
            name=name,
            description=description,
            body=body,
            now=extra.pop("now", T0),
            **extra,
        )

    return create


def statuses() -> dict[str, str]:
    return dict(Skill.objects.values_list("name", "status"))


def test_unused_skills_go_stale_after_30_days_and_archived_after_90(acme, make):
    make("rotate-staging-credentials", "Rotate the staging database credentials")
    assert services.skills_curate(workspace=acme, now=days(29)).changed == 0
    report = services.skills_curate(workspace=acme, now=days(30))
    assert report.staled == ["rotate-staging-credentials"]
    assert statuses() == {"rotate-staging-credentials": "stale"}
    event = SkillEvent.objects.get(kind="staled")
    assert event.reason == "Unused for 30 days (since 2026-03-01; stale after 30)."
    # Running again changes nothing: a stale skill stays stale until 90 days.
    assert services.skills_curate(workspace=acme, now=days(60)).changed == 0
    report = services.skills_curate(workspace=acme, now=days(90))
    assert report.archived == ["rotate-staging-credentials"]
    assert statuses() == {"rotate-staging-credentials": "archived"}
    assert SkillEvent.objects.get(kind="archived").reason == (
        "Unused for 90 days (since 2026-03-01; archive after 90)."
    )


def test_a_use_revives_a_stale_skill_and_restarts_its_clock(acme, make, bob):
    skill = make("rotate-staging-credentials", "Rotate the staging database credentials")
    services.skills_curate(workspace=acme, now=days(31))
    services.skill_use_record(skill=skill, session=None, user=bob, now=days(40))
    assert statuses() == {"rotate-staging-credentials": "active"}
    assert (
        SkillEvent.objects.get(kind="revived").reason == "Used again while stale: back to active."
    )
    assert services.skills_curate(workspace=acme, now=days(69)).changed == 0
    assert services.skills_curate(workspace=acme, now=days(70)).staled == [
        "rotate-staging-credentials"
    ]


def test_a_restored_skill_is_not_archived_again_the_next_day(acme, make, bob):
    skill = make("rotate-staging-credentials", "Rotate the staging database credentials")
    services.skills_curate(workspace=acme, now=days(95))
    services.skill_restore(skill=skill, user=bob, now=days(96))
    assert services.skills_curate(workspace=acme, now=days(97)).changed == 0
    assert statuses() == {"rotate-staging-credentials": "active"}


def test_the_thresholds_are_per_workspace(acme, make):
    acme.settings = {"skills_stale_days": 7, "skills_archive_days": 14}
    acme.save()
    make("rotate-staging-credentials", "Rotate the staging database credentials")
    assert services.skills_curate(workspace=acme, now=days(7)).staled
    assert services.skills_curate(workspace=acme, now=days(14)).archived
    acme.settings = {"skills_curator": False}
    acme.save()
    make("bump-deps", "Bump the dependencies", now=T0)
    assert services.skills_curate(workspace=acme, now=days(400)).changed == 0


def test_semantic_duplicates_merge_into_the_more_used_and_both_histories_stay(acme, make, bob):
    kept = make(
        "release-python-package",
        "Release the Python package to PyPI",
        "## Steps\n1. `uv build`\n2. `uv publish`",
    )
    gone = make(
        "release-python-package-to-pypi",
        "Release the Python package to PyPI",
        "## Steps\n1. `uv build`\n2. `uv publish`\n\n## Pitfalls\n- set UV_PUBLISH_TOKEN first",
    )
    services.skill_edit(skill=gone, user=bob, why="typo", body=gone.body + "\n- tag first")
    for _ in range(3):
        services.skill_use_record(skill=kept, session=None, user=bob, now=days(1))
    services.skill_use_record(skill=gone, session=None, user=bob, now=days(1))
    report = services.skills_curate(workspace=acme, now=days(2))
    assert report.merged == [("release-python-package-to-pypi", "release-python-package")]

    kept.refresh_from_db()
    gone.refresh_from_db()
    assert (kept.status, kept.version, kept.use_count) == ("active", 2, 4)
    assert (gone.status, gone.merged_into) == ("archived", kept)
    # The kept body gained what only the other had; nothing of its own was lost.
    assert kept.body == (
        "## Steps\n1. `uv build`\n2. `uv publish`\n\n"
        "## Pitfalls\n- set UV_PUBLISH_TOKEN first\n- tag first"
    )
    merge = SkillVersion.objects.get(skill=kept, version=2)
    assert merge.source == "curator" and merge.merged_from == gone
    assert merge.why.startswith("Merged with `release-python-package-to-pypi` (cosine 0.9")
    # The absorbed skill keeps its own versions.
    assert list(
        SkillVersion.objects.filter(skill=gone).order_by("version").values_list("version", "why")
    ) == [(1, "Created by bob."), (2, "typo")]
    reasons = dict(SkillEvent.objects.filter(kind="merged").values_list("skill__name", "reason"))
    assert reasons["release-python-package-to-pypi"].startswith(
        "Merged into `release-python-package`"
    )


def test_different_skills_are_not_merged(acme, make):
    make("release-python-package", "Release the Python package to PyPI")
    make("release-npm-package", "Release the npm package to the npm registry")
    assert services.skills_curate(workspace=acme, now=days(1)).merged == []


def test_beyond_max_skills_the_least_used_are_archived(acme, make, bob):
    acme.settings = {"skills_max": 2}
    acme.save()
    names = {
        "rotate-staging-credentials": ("Rotate the staging database credentials", 5),
        "bump-deps": ("Bump the dependencies every week", 0),
        "profile-invoice-export": ("Profile the slow invoice export", 2),
    }
    for name, (description, uses) in names.items():
        skill = make(name, description)
        for _ in range(uses):
            services.skill_use_record(skill=skill, session=None, user=bob, now=days(1))
    report = services.skills_curate(workspace=acme, now=days(2))
    assert report.over_limit == ["bump-deps"]
    assert statuses()["bump-deps"] == "archived"
    reason = SkillEvent.objects.get(kind="archived").reason
    assert reason == "Over the limit of 2 skills: among the least used (0 uses, never used)."


def test_a_users_global_skills_are_curated_with_the_defaults(acme, make, bob):
    make("my-git-aliases", "My git aliases", scope="user")
    report = services.skills_curate(workspace=None, owner=bob, now=days(30))
    assert report.staled == ["my-git-aliases"]
    event = SkillEvent.objects.get(kind="staled")
    assert event.workspace is None and event.owner == bob


def test_the_curator_runs_daily_over_every_workspace(acme, make, bob, migrated_schedules):
    schedule = Schedule.objects.get(func="skills.tasks.curate_all")
    assert schedule.schedule_type == Schedule.DAILY and schedule.repeats == -1
    # Created long ago by the real clock the schedule uses.
    make("rotate-staging-credentials", "Rotate the staging database credentials", now=days(-400))
    make("my-git-aliases", "My git aliases", scope="user", now=days(-400))
    make("bump-deps", "Bump the dependencies", now=datetime.now(UTC))
    assert tasks.curate_all() == 2
    assert statuses() == {
        "rotate-staging-credentials": "archived",
        "my-git-aliases": "archived",
        "bump-deps": "active",
    }


def test_a_merge_is_housekeeping_not_a_use(acme, make):
    make("release-python-package", "Release the Python package to PyPI")
    make("release-python-package-to-pypi", "Release the Python package to PyPI")
    assert services.skills_curate(workspace=acme, now=days(10)).merged
    # The merged skill's idle clock still runs from its creation.
    report = services.skills_curate(workspace=acme, now=days(30))
    assert report.staled == ["release-python-package"]


def test_a_skill_used_while_the_curator_ran_is_left_alone(acme, make, bob):
    skill = make("rotate-staging-credentials", "Rotate the staging database credentials")
    read_by_curator = Skill.objects.get(pk=skill.pk)
    services.skill_use_record(skill=skill, session=None, user=bob, now=days(31))
    moved = maintenance._set_status(
        read_by_curator,
        status=Skill.Status.STALE,
        now=days(31),
        kind=SkillEvent.Kind.STALED,
        reason="Unused for 31 days.",
    )
    assert moved is False
    assert statuses() == {"rotate-staging-credentials": "active"}
    assert not SkillEvent.objects.filter(kind="staled").exists()
