"""`manage.py mqtt_api` (`make mqtt-api`): serve every operation over the MQTT broker."""
import logging
import signal

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from config.processes import mqtt_interface_start
from identity.exposure import declared_refusal, policy_record
from mqtt_api.server import MqttApiServer
from notifications.mqtt_broker import broker_address
from notifications.transport_errors import TransportError


class Command(BaseCommand):
    help = "Serve the operations over MQTT (MQTT_API_ENABLED=true) until stopped."

    def handle(self, *args, **options) -> None:
        if not settings.MQTT_API_ENABLED:
            raise CommandError("The MQTT interface is off: set MQTT_API_ENABLED=true")
        if not settings.MQTT_BROKER_URL:
            raise CommandError("The MQTT interface needs MQTT_BROKER_URL")
        try:
            broker = broker_address(settings.MQTT_BROKER_URL)
        except TransportError as exc:
            raise CommandError(str(exc)) from exc
        if settings.AUTHENTICATION_POLICY == "certificate" and not broker.tls:
            # Only a TLS broker can admit just the cloud's certificate holders (mqtt-api.md).
            raise CommandError("The certificate policy over MQTT needs a TLS broker: "
                               "MQTT_BROKER_URL=mqtts://…")
        # Whoever can publish on the broker sends requests: it is where this process listens.
        shown = f"{'mqtts' if broker.tls else 'mqtt'}://{broker.host}:{broker.port}"
        if refusal := declared_refusal(shown, broker.host):
            raise CommandError(refusal)
        logging.getLogger("mqtt_api").log(*policy_record(shown, broker.host))
        server = MqttApiServer()
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *args: server.stop())
        mqtt_interface_start()
        self.stdout.write(f"MQTT interface on {broker_address(settings.MQTT_BROKER_URL)}, "
                          f"topics under {settings.MQTT_API_BASE_TOPIC}", ending="\n")
        self.stdout.flush()
        server.serve_forever()
