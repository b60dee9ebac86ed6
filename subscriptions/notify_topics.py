"""Who an MQTT topic belongs to (issue 29, item 1), so that one system's pushes and answers
never reach another system's topic.

- A notify topic belongs to the system its subscriptions push to: their target (the
  consumer itself, or the system push management subscribed for). A subscribe naming a topic
  that a subscription of another target already uses is refused, whoever subscribes.
- The MQTT interface's topics (everything under MQTT_API_BASE_TOPIC: the request topics
  and whatever the interface may add there) belong to the service: never a notify topic,
  never a response topic.
- With MQTT_SYSTEM_TOPIC_ROOT set, a system's topics are those under `<root><its name>/`
  (the shipped broker's ACL lets it read nothing else): a notify topic elsewhere is refused.
- The MQTT interface answers a requester only on a topic it may receive on by the same rules:
  not the interface's, under its own root when set, not another system's notify topic
  (`topic_refusal`).

Concurrent subscribes on one free topic by different targets: each takes the topic's advisory
lock (database/advisory_locks.py) in its transaction before it reads who uses the topic, so
the second one reads the first one's committed row and is refused.
"""
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from django.conf import settings

from conventions.exceptions import InvalidParameter
from database.advisory_locks import advisory_locks
from subscriptions.models import MQTT_PROTOCOLS, Subscription

# The advisory-lock namespace of notify topics.
TOPIC_LOCK_NAMESPACE = "notify-topic"


class NotifyClaim(Protocol):
    """What claiming a notify topic reads of a subscribe (subscriptions/requests.py
    SubscribeRequest, which checks its topic with the functions here: described, not
    imported, so the two modules do not import each other)."""

    @property
    def protocol(self) -> str: ...

    @property
    def properties(self) -> Mapping[str, Any]: ...

    @property
    def target(self) -> str: ...


def interface_topic(topic: str) -> bool:
    """Whether `topic` is one of the MQTT interface's (its base topic or under it)."""
    base = settings.MQTT_API_BASE_TOPIC
    return topic.startswith(base) or topic == base.rstrip("/")


def system_topic_refusal(topic: str, system: str) -> str | None:
    """Why `topic` is not one of `system`'s under MQTT_SYSTEM_TOPIC_ROOT (None: it is, or
    the setting is empty)."""
    root = settings.MQTT_SYSTEM_TOPIC_ROOT
    if root and not topic.startswith(f"{root}{system}/"):
        return f"it is not under {root}{system}/ (MQTT_SYSTEM_TOPIC_ROOT)"
    return None


def topic_targets(topics: Iterable[str]) -> dict[str, set[str]]:
    """The targets of the MQTT subscriptions notifying on each of `topics` (used ones only)."""
    rows = (Subscription.objects.filter(notify_protocol__in=MQTT_PROTOCOLS,
                                        notify_properties__topic__in=sorted(set(topics)))
            .values_list("notify_properties__topic", "target").distinct())
    targets: dict[str, set[str]] = defaultdict(set)
    for topic, target in rows:
        targets[topic].add(target)
    return targets


def topic_refusal(topic: str, *, receiver: str) -> str | None:
    """Why the MQTT interface may not answer `receiver` on `topic` (None: it may)."""
    if interface_topic(topic):
        return "it is one of the MQTT interface's own topics"
    if (outside := system_topic_refusal(topic, receiver)) is not None:
        return outside
    if topic_targets([topic]).get(topic, {receiver}) != {receiver}:
        return "it is another system's notify topic"
    return None


def notify_topics_claim(subscribes: Sequence[NotifyClaim]) -> None:
    """Inside the subscribe's transaction: lock the MQTT notify topics of `subscribes` and
    refuse (InvalidParameter) one that another target uses or that two of them share."""
    claimed: dict[str, str] = {}
    for subscribe in subscribes:
        if subscribe.protocol in MQTT_PROTOCOLS:
            topic = subscribe.properties["topic"]
            if claimed.setdefault(topic, subscribe.target) != subscribe.target:
                raise _taken(topic)
    if not claimed:
        return
    advisory_locks(TOPIC_LOCK_NAMESPACE, claimed)
    for topic, targets in topic_targets(claimed).items():
        if targets != {claimed[topic]}:
            raise _taken(topic)


def _taken(topic: str) -> InvalidParameter:
    return InvalidParameter(f"Notify property topic {topic} is the notify topic of another "
                            "system: a notify topic belongs to the system it notifies")
