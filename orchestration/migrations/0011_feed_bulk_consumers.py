"""A bulk write lists the consumers whose rules it changed (BulkChangeConsumer), so that the
pull snapshots read again only theirs. Undone by running migration 0010's SQL again."""
from django.db import migrations, models

from orchestration.migrations.sql import _DIRECTORY, sql_file_migration

_forward, _ = sql_file_migration('0011_feed_bulk_consumers')


def _backward(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for statement in schema_editor.connection.ops.prepare_sql_script(
            (_DIRECTORY / "0010_feed_bulk_writes.postgresql.sql").read_text()):
        schema_editor.execute(statement, params=None)
    schema_editor.execute("DROP FUNCTION IF EXISTS orchestration_feed_bulk_change()",
                          params=None)


class Migration(migrations.Migration):

    dependencies = [
        ('orchestration', '0010_feed_bulk_writes'),
    ]

    operations = [
        migrations.CreateModel(
            name='BulkChangeConsumer',
            fields=[
                ('pk', models.CompositePrimaryKey('change_id', 'consumer', blank=True,
                                                  editable=False, primary_key=True,
                                                  serialize=False)),
                ('change_id', models.BigIntegerField()),
                ('consumer', models.CharField(max_length=63)),
            ],
        ),
        migrations.RunPython(_forward, _backward),
    ]
