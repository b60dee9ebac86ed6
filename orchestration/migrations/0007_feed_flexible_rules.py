from django.db import migrations

from orchestration.migrations.sql import sql_file_migration


class Migration(migrations.Migration):

    dependencies = [
        ('orchestration', '0006_feed_polled_instances'),
        ('store', '0007_flexible_rule'),
    ]

    operations = [
        migrations.RunPython(*sql_file_migration('0007_feed_flexible_rules')),
    ]
