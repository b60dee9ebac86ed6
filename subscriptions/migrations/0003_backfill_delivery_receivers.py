from django.db import migrations


def _backfill(apps, schema_editor) -> None:
    """Deliveries written before they recorded their receiver get their subscription's
    target (notifications knows nothing of subscriptions, so it is done here)."""
    Subscription = apps.get_model("subscriptions", "Subscription")
    NotificationDelivery = apps.get_model("notifications", "NotificationDelivery")
    for subscription_id, target in Subscription.objects.values_list("id", "target").iterator():
        NotificationDelivery.objects.filter(subscription_id=subscription_id, receiver="").update(
            receiver=target)


class Migration(migrations.Migration):

    dependencies = [
        ("subscriptions", "0002_identity_includes_target"),
        ("notifications", "0003_delivery_receiver"),
    ]

    operations = [migrations.RunPython(_backfill, migrations.RunPython.noop)]
