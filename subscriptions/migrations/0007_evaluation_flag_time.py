"""An evaluation flag records when it was set, so that a burst of changes is evaluated no later
than SUBSCRIPTION_MAX_DELAY_SECONDS after its oldest flag: the round flags at once and waits
for the quiet moment afterwards (subscriptions/services/evaluation.py `flags_settling`).
Flags already set get the migration's time."""
import django.db.models.functions.datetime
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('subscriptions', '0006_evaluation_flags'),
    ]

    operations = [
        migrations.AddField(
            model_name='evaluationflag',
            name='flagged_at',
            field=models.DateTimeField(db_default=django.db.models.functions.datetime.Now()),
        ),
        migrations.AddIndex(
            model_name='evaluationflag',
            index=models.Index(fields=['flagged_at'], name='evaluation_flag_flagged_at'),
        ),
    ]
