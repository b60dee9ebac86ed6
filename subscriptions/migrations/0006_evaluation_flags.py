"""The evaluation flag moves from a column of the subscription (in a partial index) to a
table of its own (models.py `EvaluationFlag`), so that the UPDATE recording a pushed
result sets no indexed column and PostgreSQL can make it HOT; the subscription table gets
room on its pages for that (fillfactor). Existing flags are kept."""
import django.db.models.deletion
from django.db import migrations, models

# Free room left on each page of the subscription table for HOT updates (PostgreSQL). It
# applies to pages written from now on; `VACUUM FULL subscriptions_subscription` (which
# locks the table) repacks the existing ones.
FILLFACTOR = 85

COPY = ("INSERT INTO subscriptions_evaluationflag (subscription_id) "
        "SELECT id FROM subscriptions_subscription WHERE needs_evaluation")
COPY_BACK = ("UPDATE subscriptions_subscription SET needs_evaluation = true "
             "WHERE id IN (SELECT subscription_id FROM subscriptions_evaluationflag)")


def fillfactor_set(apps, schema_editor) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            f"ALTER TABLE subscriptions_subscription SET (fillfactor = {FILLFACTOR})")


def fillfactor_reset(apps, schema_editor) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("ALTER TABLE subscriptions_subscription RESET (fillfactor)")


class Migration(migrations.Migration):

    dependencies = [
        ('subscriptions', '0005_feed_cursor'),
    ]

    operations = [
        migrations.CreateModel(
            name='EvaluationFlag',
            fields=[
                ('subscription', models.OneToOneField(
                    db_constraint=False, on_delete=django.db.models.deletion.CASCADE,
                    primary_key=True, related_name='evaluation_flag', serialize=False,
                    to='subscriptions.subscription')),
            ],
        ),
        migrations.RunSQL(COPY, COPY_BACK),
        migrations.RemoveIndex(
            model_name='subscription',
            name='subscription_needs_evaluation',
        ),
        migrations.RemoveField(
            model_name='subscription',
            name='needs_evaluation',
        ),
        migrations.RunPython(fillfactor_set, fillfactor_reset),
    ]
