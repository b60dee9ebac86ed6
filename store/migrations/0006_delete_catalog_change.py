from django.db import migrations


class Migration(migrations.Migration):
    """The change feed is written by database triggers (orchestration_snapshotchange); what
    was pending here is covered by the subscriptions' first read of it, which evaluates every
    live subscription (subscriptions.FeedCursor starts unread)."""

    dependencies = [
        ('store', '0005_deferrable_rule_priority'),
    ]

    operations = [
        migrations.DeleteModel(name='CatalogChange'),
    ]
