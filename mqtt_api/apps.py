from django.apps import AppConfig


class MqttApiConfig(AppConfig):
    name = "mqtt_api"
    verbose_name = "MQTT interface"
