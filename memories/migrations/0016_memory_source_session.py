# A memory's source may be `session`: what a session did, kept from its handoff notes.

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0015_memory_project"),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name="memory",
            name="memory_source_valid",
        ),
        migrations.AlterField(
            model_name="memory",
            name="source",
            field=models.CharField(
                choices=[
                    ("model", "Model"),
                    ("hook", "Hook"),
                    ("import", "Import"),
                    ("consolidation", "Consolidation"),
                    ("session", "Session"),
                ],
                default="model",
                max_length=16,
            ),
        ),
        migrations.AddConstraint(
            model_name="memory",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    ("source__in", ["model", "hook", "import", "consolidation", "session"])
                ),
                name="memory_source_valid",
            ),
        ),
    ]
