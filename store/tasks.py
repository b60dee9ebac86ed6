from celery import shared_task


@shared_task(name="store.remove_expired_instances")
def remove_expired_instances_task() -> int:
    """Periodic (Celery beat, INSTANCE_CLEANUP_INTERVAL_SECONDS): purge expired instances.
    Pull never offers them in the meantime."""
    from store.services.instances import instance_remove_expired

    return instance_remove_expired()
