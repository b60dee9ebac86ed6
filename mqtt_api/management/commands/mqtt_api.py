"""`manage.py mqtt_api` (`make mqtt-api`): serve every operation over the MQTT broker."""
import signal

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from mqtt_api.server import MqttApiServer
from orchestration.snapshot import snapshot_start


class Command(BaseCommand):
    help = "Serve the operations over MQTT (MQTT_API_ENABLED=true) until stopped."

    def handle(self, *args, **options) -> None:
        if not settings.MQTT_API_ENABLED:
            raise CommandError("The MQTT interface is off: set MQTT_API_ENABLED=true")
        if not settings.MQTT_BROKER_URL:
            raise CommandError("The MQTT interface needs MQTT_BROKER_URL")
        server = MqttApiServer()
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *args: server.stop())
        snapshot_start()  # pulls answered from the snapshot, as in a web worker
        self.stdout.write(f"MQTT interface on {settings.MQTT_BROKER_URL}, topics under "
                          f"{settings.MQTT_API_BASE_TOPIC}", ending="\n")
        self.stdout.flush()
        server.serve_forever()
