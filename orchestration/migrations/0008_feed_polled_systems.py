from django.db import migrations

from orchestration.migrations.sql import sql_file_migration


class Migration(migrations.Migration):

    dependencies = [
        ('orchestration', '0007_feed_flexible_rules'),
        ('serviceregistry', '0002_polled_system'),
    ]

    operations = [
        migrations.RunPython(*sql_file_migration('0008_feed_polled_systems')),
    ]
