import logging

from celery import shared_task

logger = logging.getLogger(__name__)


@shared_task(name="serviceregistry.poll_instances")
def poll_instances_task() -> int:
    """Periodic (Celery beat, SERVICE_REGISTRY_POLL_SECONDS, scheduled only with
    SERVICE_REGISTRY_URL): record the ServiceRegistry instances behind live subscriptions that
    changed since the last poll as catalog changes. Returns how many changed; a failing
    ServiceRegistry is logged and the next poll tries again (nothing is lost)."""
    from serviceregistry.client import ServiceRegistryUnavailable
    from serviceregistry.polling import instances_poll

    try:
        return instances_poll()
    except ServiceRegistryUnavailable as error:
        logger.warning("ServiceRegistry poll failed (next in %s s): %s",
                       _interval(), error.message)
        return 0


def _interval() -> int:
    from django.conf import settings

    return settings.SERVICE_REGISTRY_POLL_SECONDS
