"""The state part of a scrape (docs/metrics.md): figures read from the database when
Prometheus asks, so they are right whichever process or machine did the work. Two grouped
queries per scrape, each bounded by what is live rather than by history: subscriptions per
notify protocol, and the outbox backlog (unfinished deliveries) per status and protocol.

Every status and protocol is shown, zero included, so that series do not appear and vanish.
When the database cannot answer, the scrape still shows the event metrics, with
`serviceorchestration_state_up` 0 instead of these figures.
"""
import logging
from collections.abc import Iterator

from django.db import DatabaseError
from django.utils import timezone
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric

from notifications.models import NotificationDelivery
from notifications.selectors import delivery_backlog
from observability.metrics import PREFIX
from subscriptions.models import Subscription
from subscriptions.selectors import subscription_counts_by_protocol

logger = logging.getLogger(__name__)

UNFINISHED = (NotificationDelivery.Status.PENDING, NotificationDelivery.Status.SENDING)
_UP = "1 when the database answered this scrape's state queries, else 0."


class StateCollector:
    def collect(self) -> Iterator[Metric]:
        now = timezone.now()
        try:
            subscriptions = subscription_counts_by_protocol(now=now)
            backlog = delivery_backlog(now=now)
        except DatabaseError as error:
            logger.warning("Metrics: the database did not answer: %s", error)
            yield GaugeMetricFamily(f"{PREFIX}_state_up", _UP, value=0)
            return
        yield GaugeMetricFamily(f"{PREFIX}_state_up", _UP, value=1)
        family = GaugeMetricFamily(f"{PREFIX}_subscriptions",
                                   "Live subscriptions by notify protocol.",
                                   labels=["notify_protocol"])
        for protocol in Subscription.Protocol.values:
            family.add_metric([protocol], subscriptions.get(protocol, 0))
        yield family
        family = GaugeMetricFamily(
            f"{PREFIX}_notification_backlog",
            "Unfinished notification deliveries by status (PENDING: waiting for their first "
            "or next attempt; SENDING: a sender has them) and protocol.",
            labels=["status", "protocol"])
        for status in UNFINISHED:
            for protocol in NotificationDelivery.Protocol.values:
                group = backlog.get((status, protocol))
                family.add_metric([status, protocol], group.count if group else 0)
        yield family
        yield GaugeMetricFamily(f"{PREFIX}_notification_backlog_due",
                                "PENDING deliveries due now: waiting for a sender only.",
                                value=sum(group.due for group in backlog.values()))
        oldest = min((group.oldest_created_at for group in backlog.values()), default=None)
        yield GaugeMetricFamily(f"{PREFIX}_notification_backlog_oldest_seconds",
                                "Age of the oldest unfinished delivery; 0 when there is none.",
                                value=(now - oldest).total_seconds() if oldest else 0)
