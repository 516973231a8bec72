"""Per-workspace embedders: the serving choice, a re-embed in progress, the resume schedule.

`Memory.embedding_next` holds the new model's vector while a workspace
re-embeds; recall keeps using `embedding` until every row has one. The
schedule resumes a re-embed whose worker died and starts one for a workspace
whose `settings["embedder"]` was changed without asking for it.
"""

from __future__ import annotations

import django.db.models.deletion
import pgvector.django.vector
from django.db import migrations, models

FUNC = "memories.tasks.reembed_resume_all"


def add_schedule(apps, schema_editor):
    Schedule = apps.get_model("django_q", "Schedule")
    Schedule.objects.get_or_create(
        func=FUNC,
        defaults={
            "name": "memflow: resume re-embedding",
            "schedule_type": "I",
            "minutes": 5,
            "repeats": -1,
        },
    )


def remove_schedule(apps, schema_editor):
    apps.get_model("django_q", "Schedule").objects.filter(func=FUNC).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("contexts", "0004_compression_cleanup_schedule"),
        ("memories", "0007_memory_fillfactor"),
        ("django_q", "0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more"),
    ]

    operations = [
        migrations.CreateModel(
            name="WorkspaceEmbedder",
            fields=[
                (
                    "workspace",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="+",
                        serialize=False,
                        to="contexts.workspace",
                    ),
                ),
                ("backend", models.CharField(max_length=32)),
                ("target_backend", models.CharField(blank=True, default="", max_length=32)),
                ("target_model", models.CharField(blank=True, default="", max_length=200)),
                ("generation", models.PositiveIntegerField(default=0)),
                ("cursor", models.BigIntegerField(default=0)),
                ("swapping", models.BooleanField(default=False)),
                ("total", models.PositiveIntegerField(default=0)),
                ("done", models.PositiveIntegerField(default=0)),
                ("started_at", models.DateTimeField(blank=True, null=True)),
                ("heartbeat_at", models.DateTimeField(blank=True, null=True)),
                ("finished_at", models.DateTimeField(blank=True, null=True)),
                ("error", models.TextField(blank=True, default="")),
            ],
        ),
        migrations.AddField(
            model_name="memory",
            name="embedding_next",
            field=pgvector.django.vector.VectorField(blank=True, dimensions=384, null=True),
        ),
        migrations.AddField(
            model_name="memory",
            name="embedding_next_model",
            field=models.CharField(blank=True, default="", max_length=200),
        ),
        migrations.RunPython(add_schedule, remove_schedule),
    ]
