"""Where the MQTT interface may publish an answer (issue 29, item 1). Over HTTP an answer goes
back to whoever sent the request; over MQTT it goes to the request's `responseTopic`, which
anyone can name. So an answer is published only for a request whose `authentication`
identified a system, and only on a topic that system may receive on: not one of the
interface's own topics, not another system's notify topic (subscriptions/notify_topics.py).
Every other answer is only logged: an anonymous sender learns nothing over MQTT (over HTTP it
would learn no more than a 401), and cannot make the interface publish someone's `traceId`,
an error or a result on a topic of its choosing.
"""
from mqtt_api.front_door import Answer
from mqtt_api.messages import MqttRequest
from subscriptions.notify_topics import topic_refusal


def answer_refusal(request: MqttRequest, reply: Answer) -> str | None:
    """Why `reply` may not be published on the request's response topic (None: it may)."""
    if request.response_topic is None:
        return "the request named no response topic"
    if reply.receiver is None:
        return "no requester was identified"
    refusal = topic_refusal(request.response_topic, receiver=reply.receiver)
    return None if refusal is None else f"its response topic is refused: {refusal}"
