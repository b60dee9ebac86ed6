"""Bulk rule writes record one change meaning everything (database/bulk_write.py). Undone by
defining the rule trigger's function as migration 0005 did."""
import re

from django.db import migrations

from orchestration.migrations.sql import _DIRECTORY, sql_file_migration

_forward, _ = sql_file_migration('0010_feed_bulk_writes')


def _backward(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    original = (_DIRECTORY / "0005_feed.postgresql.sql").read_text()
    function = re.search(r"CREATE OR REPLACE FUNCTION orchestration_snapshot_rules\(\).*?END \$\$;",
                         original, re.DOTALL)[0]
    schema_editor.execute(function, params=None)
    schema_editor.execute("DROP FUNCTION IF EXISTS orchestration_feed_bulk_write()", params=None)


class Migration(migrations.Migration):

    dependencies = [
        ('orchestration', '0009_feed_written_at'),
    ]

    operations = [
        migrations.RunPython(_forward, _backward),
    ]
