"""AuditLog.actor_label (a CLI write's "cli:<os user>") and ApiToken.expires_at (optional)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("memory", "0012_buffer_untimed")]

    operations = [
        migrations.AddField(
            model_name="auditlog",
            name="actor_label",
            field=models.TextField(blank=True, default=""),
        ),
        migrations.AddField(
            model_name="apitoken",
            name="expires_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
