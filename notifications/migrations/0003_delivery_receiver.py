from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('notifications', '0002_destination_limits_and_heartbeat'),
    ]

    operations = [
        migrations.AddField(
            model_name='notificationdelivery',
            name='receiver',
            field=models.CharField(blank=True, db_index=True, default='', help_text='The consumer the notification is for (given by the caller; empty on rows written before it was recorded).', max_length=63),
        ),
    ]
