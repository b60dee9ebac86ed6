"""Who an MQTT topic belongs to (issue 29, item 1; docs/subscriptions.md, "Whose notify
topic"), so that one system's pushes and answers never reach another system's topic: a notify
topic belongs to the target of its subscriptions, the topics under MQTT_API_BASE_TOPIC to the
service, and with MQTT_SYSTEM_TOPIC_ROOT a system's topics are those under `<root><its name>/`.
The MQTT interface answers a requester only on a topic it may receive on by the same rules
(`topic_refusal`).
"""
from collections.abc import Sequence
from typing import Any

from django.conf import settings

from conventions.exceptions import InvalidParameter
from subscriptions.models import MQTT_PROTOCOLS
from subscriptions.selectors import topic_users

# The advisory-lock namespace of notify topics.
TOPIC_LOCK_NAMESPACE = "notify-topic"


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


def topic_refusal(topic: str, *, receiver: str) -> str | None:
    """Why the MQTT interface may not answer `receiver` on `topic` (None: it may)."""
    if interface_topic(topic):
        return "it is one of the MQTT interface's own topics"
    if (outside := system_topic_refusal(topic, receiver)) is not None:
        return outside
    if topic_users([topic]).get(topic, {receiver}) != {receiver}:
        return "it is another system's notify topic"
    return None


def notify_topics_wanted(subscribes: Sequence[Any]) -> dict[str, str]:
    """The MQTT notify topics of `subscribes` (subscriptions/requests.py SubscribeRequest,
    which imports this module), each with the target it would notify; InvalidParameter when
    two of them would share a topic for different targets. The subscribe then locks them
    (TOPIC_LOCK_NAMESPACE) and, under the lock, reads who uses them for `notify_topics_check`:
    of two concurrent subscribes on one free topic the second reads the first one's committed
    row and is refused."""
    wanted: dict[str, str] = {}
    for subscribe in subscribes:
        if subscribe.protocol in MQTT_PROTOCOLS:
            topic = subscribe.properties["topic"]
            if wanted.setdefault(topic, subscribe.target) != subscribe.target:
                raise _taken(topic)
    return wanted


def notify_topics_check(wanted: dict[str, str], users: dict[str, set[str]]) -> None:
    """Refuse (InvalidParameter) a wanted topic that another target uses (`users`: the
    targets using each topic, read under the topics' locks)."""
    for topic, targets in users.items():
        if topic in wanted and targets != {wanted[topic]}:
            raise _taken(topic)


def _taken(topic: str) -> InvalidParameter:
    return InvalidParameter(f"Notify property topic {topic} is the notify topic of another "
                            "system: a notify topic belongs to the system it notifies")
