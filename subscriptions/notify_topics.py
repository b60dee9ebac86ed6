"""Who an MQTT topic belongs to (issue 29, item 1; docs/subscriptions.md, "Whose notify
topic"), so that one system's pushes and answers never reach another system's topic: a notify
topic belongs to the target of its subscriptions, the topics under MQTT_API_BASE_TOPIC to the
service, and with MQTT_SYSTEM_TOPIC_ROOT a system's topics are those under `<root><its name>/`.
The MQTT interface answers a requester only on a topic it may receive on by the same rules
(`topic_refusal`).
"""
import json
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from django.conf import settings
from django.db import connection

from conventions.exceptions import InvalidParameter
from database.advisory_locks import advisory_locks
from subscriptions.models import MQTT_PROTOCOLS, Subscription

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


# A notify topic in SQL: (as selected, as compared, the placeholder compared with, the
# parameter's form). PostgreSQL compares the jsonb value, the expression of the index
# subscription_notify_topic, whose condition the literal protocol list lets the planner prove.
_TOPIC_SQL = {"postgresql": ("notify_properties ->> 'topic'", "notify_properties -> 'topic'",
                             "%s::jsonb", json.dumps),
              "sqlite": ("JSON_EXTRACT(notify_properties, '$.topic')",
                         "JSON_EXTRACT(notify_properties, '$.topic')", "%s", str)}


def topic_targets(topics: Iterable[str]) -> dict[str, set[str]]:
    """The targets of the MQTT subscriptions notifying on each of `topics` (used ones only).
    One plain statement: every MQTT subscribe and every MQTT interface answer reads it, and
    building the ORM's JSON lookup cost five times the statement (docs/performance.md)."""
    wanted = sorted(set(topics))
    if not wanted:
        return {}
    shown, compared, placeholder, parameter = _TOPIC_SQL[connection.vendor]
    protocols = ", ".join(f"'{protocol}'" for protocol in MQTT_PROTOCOLS)
    table = connection.ops.quote_name(Subscription._meta.db_table)
    targets: dict[str, set[str]] = defaultdict(set)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT DISTINCT {shown}, target FROM {table} "
                       f"WHERE notify_protocol IN ({protocols}) AND {compared} IN "
                       f"({', '.join([placeholder] * len(wanted))})",
                       [parameter(topic) for topic in wanted])
        for topic, target in cursor.fetchall():
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


def notify_topics_claim(subscribes: Sequence[Any]) -> None:
    """Inside the subscribe's transaction: lock the MQTT notify topics of `subscribes`
    (subscriptions/requests.py SubscribeRequest, which imports this module) and refuse
    (InvalidParameter) one that another target uses or that two of them share. Each takes the
    topics' advisory locks before it reads who uses them, so of two concurrent subscribes on
    one free topic the second reads the first one's committed row and is refused."""
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
