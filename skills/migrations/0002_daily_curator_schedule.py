"""Schedule the daily skill curator (django-q2 runs it on any worker)."""

from __future__ import annotations

from django.db import migrations

FUNC = "skills.tasks.curate_all"


def add_schedule(apps, schema_editor):
    Schedule = apps.get_model("django_q", "Schedule")
    Schedule.objects.get_or_create(
        func=FUNC,
        defaults={"name": "memflow: daily skill curator", "schedule_type": "D", "repeats": -1},
    )


def remove_schedule(apps, schema_editor):
    apps.get_model("django_q", "Schedule").objects.filter(func=FUNC).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("skills", "0001_initial"),
        ("django_q", "0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more"),
    ]

    operations = [migrations.RunPython(add_schedule, remove_schedule)]
