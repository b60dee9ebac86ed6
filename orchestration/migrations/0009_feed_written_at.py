"""The change feed's rows say when they were written (`written_at`), so that change
processing can wait for a burst of changes to end (subscriptions/services/evaluation.py).

PostgreSQL: a column defaulting to the writing statement's start. SQLite can neither add a
column with such a default nor rebuild the table under the triggers that write into it, so
the column is added without one and a trigger of the feed's own stamps each new row."""
from django.db import migrations, models
from django.db.models.functions import Now

_SQL = {
    "postgresql": (
        ["ALTER TABLE orchestration_snapshotchange ADD COLUMN written_at timestamp with time "
         "zone NOT NULL DEFAULT STATEMENT_TIMESTAMP()"],
        ["ALTER TABLE orchestration_snapshotchange DROP COLUMN written_at"]),
    "sqlite": (
        ["ALTER TABLE orchestration_snapshotchange ADD COLUMN written_at datetime NULL",
         "CREATE TRIGGER feed_written_at AFTER INSERT ON orchestration_snapshotchange "
         "WHEN NEW.written_at IS NULL BEGIN UPDATE orchestration_snapshotchange SET "
         "written_at = STRFTIME('%Y-%m-%d %H:%M:%f', 'NOW') WHERE id = NEW.id; END"],
        ["DROP TRIGGER IF EXISTS feed_written_at",
         "ALTER TABLE orchestration_snapshotchange DROP COLUMN written_at"]),
}


def _runner(direction: int):
    def run(apps, schema_editor):
        for statement in _SQL.get(schema_editor.connection.vendor, ([], []))[direction]:
            schema_editor.execute(statement, params=None)
    return run


class Migration(migrations.Migration):

    dependencies = [
        ('orchestration', '0008_feed_polled_systems'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.AddField(
                model_name='snapshotchange',
                name='written_at',
                field=models.DateTimeField(db_default=Now()),
            )],
            database_operations=[migrations.RunPython(_runner(0), _runner(1))],
        ),
    ]
