"""The state part of a scrape (docs/metrics.md): two grouped queries, bounded by what is live
rather than by history. Every status and protocol is shown, zero included, so that series do
not appear and vanish; when the database cannot answer, `serviceorchestration_state_up` is 0
instead. The apps register the reads (observability/registry.py): SUBSCRIPTIONS the
subscriptions app, NOTIFICATION_BACKLOG the notifications app.
"""
import logging
from collections.abc import Iterator

from django.db import DatabaseError
from django.utils import timezone
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric

from observability.metrics import PREFIX
from observability.registry import state_read

logger = logging.getLogger(__name__)

# now → {notify protocol: live subscriptions}, every protocol (zero included) in its order.
SUBSCRIPTIONS = "subscriptions"
# now → {(status, protocol): the group's count, due and oldest_created_at}, every unfinished
# status (PENDING, SENDING) and protocol in their order, empty groups included (0, 0, None).
NOTIFICATION_BACKLOG = "notification_backlog"
_UP = "1 when the database answered this scrape's state queries, else 0."


class StateCollector:
    def collect(self) -> Iterator[Metric]:
        now = timezone.now()
        try:
            subscriptions = state_read(SUBSCRIPTIONS)(now)
            backlog = state_read(NOTIFICATION_BACKLOG)(now)
        except DatabaseError as error:
            logger.warning("Metrics: the database did not answer: %s", error)
            yield GaugeMetricFamily(f"{PREFIX}_state_up", _UP, value=0)
            return
        yield GaugeMetricFamily(f"{PREFIX}_state_up", _UP, value=1)
        family = GaugeMetricFamily(f"{PREFIX}_subscriptions",
                                   "Live subscriptions by notify protocol.",
                                   labels=["notify_protocol"])
        for protocol, count in subscriptions.items():
            family.add_metric([protocol], count)
        yield family
        family = GaugeMetricFamily(
            f"{PREFIX}_notification_backlog",
            "Unfinished notification deliveries by status (PENDING: waiting for their first "
            "or next attempt; SENDING: a sender has them) and protocol.",
            labels=["status", "protocol"])
        for (status, protocol), group in backlog.items():
            family.add_metric([status, protocol], group.count)
        yield family
        yield GaugeMetricFamily(f"{PREFIX}_notification_backlog_due",
                                "PENDING deliveries due now: waiting for a sender only.",
                                value=sum(group.due for group in backlog.values()))
        oldest = min((group.oldest_created_at for group in backlog.values()
                      if group.oldest_created_at is not None), default=None)
        yield GaugeMetricFamily(f"{PREFIX}_notification_backlog_oldest_seconds",
                                "Age of the oldest unfinished delivery; 0 when there is none.",
                                value=(now - oldest).total_seconds() if oldest else 0)
