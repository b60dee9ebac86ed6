from django.db import migrations, models


def _rewrite_keys(apps, schema_editor) -> None:
    """The identity of a subscription is now (owner, target, service definition): rewrite the
    keys of existing rows. The new key is finer than the old one, so it stays unique."""
    Subscription = apps.get_model("subscriptions", "Subscription")
    for subscription in Subscription.objects.only("id", "owner", "target",
                                                   "service_definition").iterator():
        key = (f"{subscription.owner}|{subscription.target}|"
               f"{subscription.service_definition or ''}")
        Subscription.objects.filter(pk=subscription.pk).update(identity_key=key)


def _restore_keys(apps, schema_editor) -> None:
    """Fails (unique key) once an owner has subscriptions of one service definition for
    several targets, which the old identity cannot tell apart."""
    Subscription = apps.get_model("subscriptions", "Subscription")
    for subscription in Subscription.objects.only("id", "owner",
                                                   "service_definition").iterator():
        key = f"{subscription.owner}|{subscription.service_definition or ''}"
        Subscription.objects.filter(pk=subscription.pk).update(identity_key=key)


class Migration(migrations.Migration):

    dependencies = [
        ('subscriptions', '0001_initial'),
    ]

    operations = [
        migrations.AlterField(
            model_name='subscription',
            name='identity_key',
            field=models.CharField(editable=False, max_length=192, unique=True),
        ),
        migrations.RunPython(_rewrite_keys, _restore_keys),
        migrations.AddIndex(
            model_name='subscription',
            index=models.Index(fields=['owner'], name='subscription_owner'),
        ),
        migrations.AddIndex(
            model_name='subscription',
            index=models.Index(fields=['created_at'], name='subscription_created_at'),
        ),
    ]
