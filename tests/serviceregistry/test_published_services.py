"""What is registered in the ServiceRegistry: the exact Java DTOs, and operations that are
exactly the paths and methods this service serves (checked against the URL configuration)."""
import io
import os
import re
import subprocess
import sys
import uuid

import pytest
from django.core.management import call_command
from django.urls import URLResolver, get_resolver, resolve

from api.operations import SERVICES, operation, served_operation
from api.views import NotFoundApi
from serviceregistry.published import (
    public_key_base64,
    service_register_bodies,
    system_register_body,
)

ORCHESTRATION = "/serviceorchestration/orchestration"


def operations(*entries: tuple[str, str, str]) -> dict[str, dict[str, str]]:
    return {name: {"path": path, "method": method} for name, method, path in entries}


def interface(base_path: str, ops: dict, template: str = "generic_http",
              policy: str = "NONE") -> list[dict]:
    return [{"templateName": template, "protocol": template.removeprefix("generic_"),
             "policy": policy,
             "properties": {"accessAddresses": ["orchestrator.local"], "accessPort": 9443,
                            "basePath": base_path, "operations": ops}}]


def expected_bodies(**kwargs) -> list[dict]:
    services = [
        ("generalManagement", {}, "/serviceorchestration/general/mgmt",
         operations(("get-log", "POST", "/logs"), ("get-config", "GET", "/get-config"))),
        ("serviceOrchestrationPushManagement", {}, f"{ORCHESTRATION}/mgmt/push",
         operations(("subscribe", "POST", "/subscribe"),
                    ("unsubscribe", "DELETE", "/unsubscribe/{id}"),
                    ("trigger", "POST", "/trigger"), ("query", "POST", "/query"))),
        ("serviceOrchestrationSimpleStoreManagement", {}, f"{ORCHESTRATION}/mgmt/simple-store",
         operations(("query", "POST", "/query"), ("create", "POST", "/create"),
                    ("modify-priorities", "PUT", "/modify-priorities"),
                    ("remove", "DELETE", "/remove"))),
        ("serviceOrchestrationLockManagement", {}, f"{ORCHESTRATION}/mgmt/lock",
         operations(("query", "POST", "/query"), ("remove", "DELETE", "/remove/{owner}"),
                    ("create", "POST", "/create"))),
        ("serviceOrchestrationHistoryManagement", {}, f"{ORCHESTRATION}/mgmt/history",
         operations(("query", "POST", "/query"))),
        ("serviceOrchestrationServiceInstanceManagement", {},
         f"{ORCHESTRATION}/mgmt/service-instances",
         operations(("create", "POST", "/create"), ("update", "PUT", "/update"),
                    ("query", "POST", "/query"), ("remove", "DELETE", "/remove"))),
        ("serviceOrchestration",
         {"orchestrationStrategy": "simpleStore", "unrestrictedDiscovery": True},
         ORCHESTRATION,
         operations(("pull", "POST", "/pull"), ("subscribe", "POST", "/subscribe"),
                    ("unsubscribe", "DELETE", "/unsubscribe/{id}"))),
    ]
    return [{"serviceDefinitionName": name, "version": "1.0.0", "expiresAt": None,
             "metadata": metadata, "interfaces": interface(base, ops, **kwargs)}
            for name, metadata, base, ops in services]


@pytest.fixture
def published(settings):
    settings.SERVICE_ADDRESS, settings.PORT = "orchestrator.local", 9443
    settings.TLS_CERT_FILE = ""
    settings.AUTHENTICATION_POLICY = "declared"
    return settings


class PublishedServiceTests:
    def test_it_registers_the_java_systems_five_services_and_the_instance_catalog(self, published):
        assert service_register_bodies() == expected_bodies()

    def test_the_flexible_store_registers_its_own_management_and_strategy(self, published):
        published.ORCHESTRATION_STRATEGY = "flexible-store"
        expected = [body for body in expected_bodies() if body["serviceDefinitionName"]
                    != "serviceOrchestrationSimpleStoreManagement"]
        expected.insert(2, {
            "serviceDefinitionName": "serviceOrchestrationFlexibleStoreManagement",
            "version": "1.0.0", "expiresAt": None, "metadata": {},
            "interfaces": interface(f"{ORCHESTRATION}/mgmt/flexible-store", operations(
                ("query", "POST", "/query"), ("create", "POST", "/create"),
                ("remove", "DELETE", "/remove")))})
        expected[-1]["metadata"] = {"orchestrationStrategy": "flexibleStore",
                                    "unrestrictedDiscovery": True}
        assert service_register_bodies() == expected

    def test_the_strategy_names_the_system_by_default(self):
        def system_name(**environment: str) -> str:
            code = ("import django; django.setup(); from django.conf import settings; "
                    "print(settings.SYSTEM_NAME)")
            return subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, check=True,
                env={**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings",
                     **environment}).stdout.strip()

        assert system_name(ORCHESTRATION_STRATEGY="flexible_store") == \
            "FlexibleServiceOrchestration"
        assert system_name(ORCHESTRATION_STRATEGY="simple-store") == \
            "SimpleStoreServiceOrchestration"
        assert system_name(ORCHESTRATION_STRATEGY="flexible-store", SYSTEM_NAME="Mine") == "Mine"

    def test_it_registers_generic_https_when_it_serves_tls(self, published):
        published.TLS_CERT_FILE, published.TLS_KEY_FILE = "cert.pem", "key.pem"
        assert service_register_bodies() == expected_bodies(template="generic_https")

    def test_it_registers_cert_auth_interfaces_under_the_certificate_policy(self, published):
        published.TLS_CERT_FILE, published.TLS_KEY_FILE = "cert.pem", "key.pem"
        published.AUTHENTICATION_POLICY = "certificate"
        assert service_register_bodies() == expected_bodies(template="generic_https",
                                                            policy="CERT_AUTH")

    def test_it_registers_the_system_with_the_framework_version(self, published):
        assert system_register_body() == {"metadata": {}, "version": "5.2.0",
                                          "addresses": ["orchestrator.local"],
                                          "deviceName": None}

    def test_it_adds_the_public_key_under_the_certificate_policy(self, published, tmp_path):
        call_command("make_certificates", str(tmp_path), stdout=io.StringIO())
        certificate = tmp_path / "SimpleStoreServiceOrchestration.pem"
        published.TLS_CERT_FILE, published.AUTHENTICATION_POLICY = str(certificate), "certificate"
        pem = subprocess.run(["openssl", "x509", "-in", str(certificate), "-pubkey", "-noout"],
                             capture_output=True, text=True, check=True).stdout
        key = "".join(line for line in pem.splitlines() if not line.startswith("-----"))
        assert public_key_base64(str(certificate)) == key
        assert system_register_body()["metadata"] == {"x509PublicKey": key}


def served_paths() -> list[tuple[str, str, str, str]]:
    return [(service.definition, name, operation.method,
             service.base_path + re.sub(r"\{\w+\}", str(uuid.uuid4()), operation.path))
            for service in SERVICES for name, operation in service.operations.items()]


def java_client_paths() -> list[tuple[str, str, str, str]]:
    """The paths the Java common library calls for operations with a path parameter: the
    registered path as it is, `{id}` included, and the parameter appended as a segment."""
    return [(service.definition, name, operation.method,
             service.base_path + operation.path + "/" + str(uuid.uuid4()))
            for service in SERVICES for name, operation in service.operations.items()
            if "{" in operation.path]


def api_views() -> list[tuple[str, type]]:
    """(route, view class) of every DRF view in the URL configuration."""
    found = []

    def walk(patterns, prefix: str) -> None:
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                walk(pattern.url_patterns, prefix + str(pattern.pattern))
            elif getattr(pattern.callback, "view_class", None) is not None:
                found.append((prefix + str(pattern.pattern), pattern.callback.view_class))

    walk(get_resolver().url_patterns, "/")
    return found


def served_methods(view: type) -> list[str]:
    return [method.upper() for method in ("get", "post", "put", "patch", "delete")
            if hasattr(view, method)]


class OperationTableTests:
    @pytest.mark.parametrize("definition, name, method, path", served_paths())
    def test_it_registers_only_paths_and_methods_it_serves(self, definition, name, method,
                                                           path):
        view = resolve(path).func.view_class
        assert view is not NotFoundApi, f"{definition}: {path} is not served"
        assert hasattr(view, method.lower()), f"{definition}: {path} does not serve {method}"
        assert served_operation(view, method) == operation(definition, name), \
            f"{path} does not declare {definition}/{name} for {method}"

    @pytest.mark.parametrize("definition, name, method, path", java_client_paths())
    def test_it_serves_the_paths_java_clients_make_of_path_parameters(self, definition, name,
                                                                       method, path):
        view = resolve(path).func.view_class
        assert view is not NotFoundApi, f"{definition}: {path} is not served"
        assert served_operation(view, method) == operation(definition, name)

    def test_every_management_path_declares_a_management_operation(self):
        """The management check follows the declarations, so a `/mgmt/` view without one
        would be open to everybody."""
        management = [(route, view) for route, view in api_views()
                      if "mgmt/" in route and view is not NotFoundApi]
        assert len(management) >= 15
        for route, view in management:
            for method in served_methods(view):
                declared = served_operation(view, method)
                assert declared is not None and declared.is_management, (route, method)

    def test_only_management_paths_declare_management_operations(self):
        for route, view in api_views():
            for method in served_methods(view):
                declared = served_operation(view, method)
                if declared is not None and declared.is_management:
                    assert "mgmt/" in route, (route, method)


class MqttInterfaceTests:
    def test_with_the_mqtt_interface_the_java_services_also_register_generic_mqtt(
            self, settings):
        settings.MQTT_API_ENABLED = True
        settings.MQTT_BROKER_URL = "mqtt://broker.local:1884"
        bodies = {body["serviceDefinitionName"]: body for body in service_register_bodies()}
        mqtt = {name: body["interfaces"][1] for name, body in bodies.items()
                if len(body["interfaces"]) == 2}
        assert set(mqtt) == {"generalManagement", "serviceOrchestrationPushManagement",
                             "serviceOrchestrationSimpleStoreManagement",
                             "serviceOrchestrationHistoryManagement", "serviceOrchestration"}
        assert mqtt["serviceOrchestration"] == {
            "templateName": "generic_mqtt", "protocol": "tcp", "policy": "NONE",
            "properties": {"accessAddresses": ["broker.local"], "accessPort": 1884,
                           "baseTopic": "arrowhead/serviceorchestration/orchestration/",
                           "operations": ["pull", "subscribe", "unsubscribe"]}}
        settings.MQTT_BROKER_URL = "mqtts://broker.local"
        secure = service_register_bodies()[0]["interfaces"][1]
        assert (secure["templateName"], secure["protocol"], secure["properties"]["accessPort"]) \
            == ("generic_mqtts", "ssl", 8883)

    def test_every_registered_mqtt_operation_is_served_on_its_topic(self):
        from mqtt_api.operations import OPERATIONS

        registered = {service.mqtt_base + name for service in SERVICES
                      if service.mqtt_base is not None for name in service.operations}
        assert registered == set(OPERATIONS)

    def test_without_it_only_http_is_registered(self, settings):
        settings.MQTT_API_ENABLED = False
        assert all(len(body["interfaces"]) == 1 for body in service_register_bodies())
