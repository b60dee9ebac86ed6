"""The subscriptions' feed cursor records when the burst of changes waiting for evaluation
began (`pending_since`): the round flags a change at once and evaluates once the burst has
settled, no later than SUBSCRIPTION_MAX_DELAY_SECONDS after it began
(subscriptions/services/evaluation.py `flags_settling`)."""
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('subscriptions', '0006_evaluation_flags'),
    ]

    operations = [
        migrations.AddField(
            model_name='feedcursor',
            name='pending_since',
            field=models.DateTimeField(null=True),
        ),
    ]
