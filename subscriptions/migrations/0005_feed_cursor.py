from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('subscriptions', '0004_notify_topic_index'),
    ]

    operations = [
        migrations.CreateModel(
            name='FeedCursor',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('last_id', models.BigIntegerField(default=0)),
                ('running', models.JSONField(default=list)),
                ('read_at', models.DateTimeField(null=True)),
            ],
        ),
    ]
