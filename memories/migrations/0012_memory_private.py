from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0011_forget_tombstone_triage"),
    ]

    operations = [
        migrations.AddField(
            model_name="memory",
            name="private",
            field=models.BooleanField(default=False),
        ),
    ]
