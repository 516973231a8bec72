"""Skills, versions, uses, proposals, nudges and the evolution log."""

from __future__ import annotations

import django.db.models.deletion
import django.utils.timezone
import pgvector.django.vector
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("contexts", "0001_initial"),
        # The vector extension the embedding column needs.
        ("memories", "0001_extensions"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="Skill",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("name", models.CharField(max_length=64)),
                ("description", models.CharField(max_length=1024)),
                ("body", models.TextField()),
                ("metadata", models.JSONField(blank=True, default=dict)),
                (
                    "status",
                    models.CharField(
                        choices=[
                            ("active", "Active"),
                            ("stale", "Stale"),
                            ("archived", "Archived"),
                        ],
                        default="active",
                        max_length=16,
                    ),
                ),
                ("version", models.PositiveIntegerField(default=1)),
                (
                    "origin",
                    models.CharField(
                        choices=[
                            ("person", "Person or agent, through the API"),
                            ("generator", "Generated from a trajectory"),
                            ("optimizer", "Rewritten from feedback"),
                            ("curator", "Merged by the curator"),
                            ("import", "Imported from a skills folder"),
                        ],
                        default="person",
                        max_length=16,
                    ),
                ),
                (
                    "embedding",
                    pgvector.django.vector.VectorField(blank=True, dimensions=384, null=True),
                ),
                ("use_count", models.PositiveIntegerField(default=0)),
                ("success_count", models.PositiveIntegerField(default=0)),
                ("failure_count", models.PositiveIntegerField(default=0)),
                ("last_used_at", models.DateTimeField(blank=True, null=True)),
                ("active_at", models.DateTimeField(default=django.utils.timezone.now)),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                ("updated_at", models.DateTimeField(default=django.utils.timezone.now)),
                (
                    "created_by",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "merged_into",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="absorbed",
                        to="skills.skill",
                    ),
                ),
                (
                    "owner",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="global_skills",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "workspace",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="skills",
                        to="contexts.workspace",
                    ),
                ),
            ],
            options={
                "ordering": ["name"],
            },
        ),
        migrations.CreateModel(
            name="SkillProposal",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("turn", models.PositiveIntegerField()),
                ("triggers", models.JSONField(default=list)),
                ("mode", models.CharField(max_length=16)),
                (
                    "status",
                    models.CharField(
                        choices=[
                            ("pending", "Waiting for confirmation"),
                            ("queued", "Queued"),
                            ("drafting", "Being drafted"),
                            ("applied", "Applied"),
                            ("failed", "Failed"),
                        ],
                        max_length=16,
                    ),
                ),
                (
                    "builder",
                    models.CharField(
                        blank=True,
                        choices=[("llm", "LLM"), ("deterministic", "Deterministic")],
                        max_length=16,
                    ),
                ),
                ("draft_name", models.CharField(blank=True, max_length=64)),
                ("draft_description", models.CharField(blank=True, max_length=1024)),
                ("draft_body", models.TextField(blank=True)),
                ("outcome", models.CharField(blank=True, max_length=16)),
                ("similarity", models.FloatField(blank=True, null=True)),
                ("error", models.TextField(blank=True)),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                ("claimed_at", models.DateTimeField(blank=True, null=True)),
                ("processed_at", models.DateTimeField(blank=True, null=True)),
                (
                    "session",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="skill_proposals",
                        to="contexts.agentsession",
                    ),
                ),
                (
                    "skill",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="proposals",
                        to="skills.skill",
                    ),
                ),
                (
                    "workspace",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="skill_proposals",
                        to="contexts.workspace",
                    ),
                ),
            ],
            options={
                "ordering": ["-created_at", "-id"],
            },
        ),
        migrations.CreateModel(
            name="SkillEvent",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "kind",
                    models.CharField(
                        choices=[
                            ("proposed", "Proposed from a turn"),
                            ("accepted", "Proposal accepted"),
                            ("created", "Created"),
                            ("versioned", "New version"),
                            ("optimized", "Optimized from feedback"),
                            ("staled", "Marked stale"),
                            ("revived", "Used again"),
                            ("archived", "Archived"),
                            ("restored", "Restored"),
                            ("merged", "Merged"),
                            ("nudged", "Nudge queued"),
                            ("nudge_shown", "Nudge shown"),
                            ("failed", "Failed"),
                        ],
                        max_length=16,
                    ),
                ),
                ("reason", models.TextField()),
                ("data", models.JSONField(blank=True, default=dict)),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                (
                    "actor",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "owner",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "session",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to="contexts.agentsession",
                    ),
                ),
                (
                    "skill",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="events",
                        to="skills.skill",
                    ),
                ),
                (
                    "workspace",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="skill_events",
                        to="contexts.workspace",
                    ),
                ),
                (
                    "proposal",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="events",
                        to="skills.skillproposal",
                    ),
                ),
            ],
            options={
                "ordering": ["-created_at", "-id"],
            },
        ),
        migrations.CreateModel(
            name="Nudge",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("text", models.TextField()),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                ("delivered_at", models.DateTimeField(blank=True, null=True)),
                ("delivered_turn", models.PositiveIntegerField(blank=True, null=True)),
                (
                    "session",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="skill_nudges",
                        to="contexts.agentsession",
                    ),
                ),
                (
                    "workspace",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="skill_nudges",
                        to="contexts.workspace",
                    ),
                ),
                (
                    "proposal",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="nudge",
                        to="skills.skillproposal",
                    ),
                ),
            ],
            options={
                "ordering": ["created_at", "id"],
            },
        ),
        migrations.CreateModel(
            name="SkillUse",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("version", models.PositiveIntegerField()),
                (
                    "outcome",
                    models.CharField(
                        choices=[
                            ("pending", "Pending"),
                            ("success", "Success"),
                            ("failure", "Failure"),
                        ],
                        default="pending",
                        max_length=16,
                    ),
                ),
                ("feedback", models.TextField(blank=True)),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                ("rated_at", models.DateTimeField(blank=True, null=True)),
                (
                    "session",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="skill_uses",
                        to="contexts.agentsession",
                    ),
                ),
                (
                    "skill",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="uses",
                        to="skills.skill",
                    ),
                ),
                (
                    "user",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "ordering": ["-created_at", "-id"],
            },
        ),
        migrations.CreateModel(
            name="SkillVersion",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("version", models.PositiveIntegerField()),
                ("description", models.CharField(max_length=1024)),
                ("body", models.TextField()),
                ("why", models.TextField()),
                (
                    "source",
                    models.CharField(
                        choices=[
                            ("person", "Person or agent, through the API"),
                            ("generator", "Generated from a trajectory"),
                            ("optimizer", "Rewritten from feedback"),
                            ("curator", "Merged by the curator"),
                            ("import", "Imported from a skills folder"),
                        ],
                        max_length=16,
                    ),
                ),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                (
                    "created_by",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "merged_from",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to="skills.skill",
                    ),
                ),
                (
                    "session",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to="contexts.agentsession",
                    ),
                ),
                (
                    "skill",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="versions",
                        to="skills.skill",
                    ),
                ),
            ],
            options={
                "ordering": ["skill", "version"],
            },
        ),
        migrations.AddIndex(
            model_name="skill",
            index=models.Index(
                fields=["workspace", "status", "active_at"], name="skill_curator_idx"
            ),
        ),
        migrations.AddConstraint(
            model_name="skill",
            constraint=models.UniqueConstraint(
                condition=models.Q(("workspace__isnull", False)),
                fields=("workspace", "name"),
                name="skill_name_unique_in_workspace",
            ),
        ),
        migrations.AddConstraint(
            model_name="skill",
            constraint=models.UniqueConstraint(
                condition=models.Q(("workspace__isnull", True)),
                fields=("owner", "name"),
                name="skill_name_unique_for_owner",
            ),
        ),
        migrations.AddConstraint(
            model_name="skill",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    models.Q(("owner__isnull", True), ("workspace__isnull", False)),
                    models.Q(("owner__isnull", False), ("workspace__isnull", True)),
                    _connector="OR",
                ),
                name="skill_one_scope",
            ),
        ),
        migrations.AddConstraint(
            model_name="skill",
            constraint=models.CheckConstraint(
                condition=models.Q(("name__regex", "^[a-z0-9]+(-[a-z0-9]+)*$")),
                name="skill_name_slug",
            ),
        ),
        migrations.AddConstraint(
            model_name="skill",
            constraint=models.CheckConstraint(
                condition=models.Q(("status__in", ["active", "stale", "archived"])),
                name="skill_status_valid",
            ),
        ),
        migrations.AddConstraint(
            model_name="skill",
            constraint=models.CheckConstraint(
                condition=models.Q(("version__gte", 1)), name="skill_version_positive"
            ),
        ),
        migrations.AddConstraint(
            model_name="skill",
            constraint=models.CheckConstraint(
                condition=models.Q(("merged_into", models.F("id")), _negated=True),
                name="skill_not_merged_into_itself",
            ),
        ),
        migrations.AddIndex(
            model_name="skillproposal",
            index=models.Index(
                fields=["workspace", "-created_at"], name="skillproposal_recent_idx"
            ),
        ),
        migrations.AddConstraint(
            model_name="skillproposal",
            constraint=models.UniqueConstraint(
                fields=("session", "turn"), name="skillproposal_turn_unique"
            ),
        ),
        migrations.AddConstraint(
            model_name="skillproposal",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    ("status__in", ["pending", "queued", "drafting", "applied", "failed"])
                ),
                name="skillproposal_status_valid",
            ),
        ),
        migrations.AddIndex(
            model_name="skillevent",
            index=models.Index(fields=["workspace", "-created_at"], name="skillevent_recent_idx"),
        ),
        migrations.AddIndex(
            model_name="skillevent",
            index=models.Index(fields=["skill", "-created_at"], name="skillevent_skill_idx"),
        ),
        migrations.AddConstraint(
            model_name="skillevent",
            constraint=models.CheckConstraint(
                condition=models.Q(("reason", ""), _negated=True), name="skillevent_has_reason"
            ),
        ),
        migrations.AddIndex(
            model_name="nudge",
            index=models.Index(
                condition=models.Q(("delivered_at__isnull", True)),
                fields=["session"],
                name="nudge_pending_idx",
            ),
        ),
        migrations.AddConstraint(
            model_name="nudge",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    models.Q(("delivered_at__isnull", True), ("delivered_turn__isnull", True)),
                    models.Q(("delivered_at__isnull", False), ("delivered_turn__isnull", False)),
                    _connector="OR",
                ),
                name="nudge_delivery_complete",
            ),
        ),
        migrations.AddIndex(
            model_name="skilluse",
            index=models.Index(
                condition=models.Q(("feedback", ""), _negated=True),
                fields=["skill", "version"],
                name="skilluse_feedback_idx",
            ),
        ),
        migrations.AddIndex(
            model_name="skilluse",
            index=models.Index(
                condition=models.Q(("outcome", "pending")),
                fields=["skill", "session"],
                name="skilluse_pending_idx",
            ),
        ),
        migrations.AddConstraint(
            model_name="skilluse",
            constraint=models.CheckConstraint(
                condition=models.Q(("outcome__in", ["pending", "success", "failure"])),
                name="skilluse_outcome_valid",
            ),
        ),
        migrations.AddConstraint(
            model_name="skillversion",
            constraint=models.UniqueConstraint(
                fields=("skill", "version"), name="skillversion_unique"
            ),
        ),
        migrations.AddConstraint(
            model_name="skillversion",
            constraint=models.CheckConstraint(
                condition=models.Q(("why", ""), _negated=True), name="skillversion_has_why"
            ),
        ),
    ]
