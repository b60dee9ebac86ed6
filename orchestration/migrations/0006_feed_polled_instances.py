from django.db import migrations

from orchestration.migrations.sql import sql_file_migration


class Migration(migrations.Migration):

    dependencies = [
        ('orchestration', '0005_pull_snapshot_changes'),
        ('serviceregistry', '0001_polled_instance'),
    ]

    operations = [
        migrations.RunPython(*sql_file_migration('0006_feed_polled_instances')),
    ]
