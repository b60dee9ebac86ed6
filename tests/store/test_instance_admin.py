import json

import pytest

from store.models import ServiceInstance, ServiceInterface
from tests.factories import make_instances
from tests.store.helpers import instance_body
from tests.subscriptions.helpers import feed_skip, feed_unread

pytestmark = pytest.mark.django_db

ADD = "/admin/store/serviceinstance/add/"
CHANGELIST = "/admin/store/serviceinstance/"
HTTP_PROPERTIES = {"accessAddresses": ["LocalHost"], "accessPort": 8080, "basePath": "/t"}


def form(interfaces: list[dict], **fields) -> dict:
    data = {"provider": "temperature-provider", "service_definition": "temperature_info",
            "version": "2", "expires_at_0": "", "expires_at_1": "",
            "metadata": json.dumps({"unit": "celsius"}),
            "interfaces-TOTAL_FORMS": len(interfaces), "interfaces-INITIAL_FORMS": 0,
            "interfaces-MIN_NUM_FORMS": 1, "interfaces-MAX_NUM_FORMS": 1000}
    for index, interface in enumerate(interfaces):
        for key, value in interface.items():
            data[f"interfaces-{index}-{key}"] = value
    data.update(fields)
    return data


def http(**overrides) -> dict:
    interface = {"template_name": "generic_http", "protocol": "", "policy": "NONE",
                 "properties": json.dumps(HTTP_PROPERTIES)}
    interface.update(overrides)
    return interface


def errors(response) -> str:
    assert response.status_code == 200
    return response.content.decode()


class ServiceInstanceAdminTests:
    def test_it_adds_a_normalized_instance_with_interfaces(self, admin_client):
        response = admin_client.post(ADD, form([http(), http(template_name="custom_opc",
                                                             protocol="opc.tcp",
                                                             properties="{}")]))
        assert response.status_code == 302, response.content.decode()[:3000]
        instance = ServiceInstance.objects.get()
        assert instance.service_instance_id == "TemperatureProvider|temperatureInfo|2.0.0"
        assert instance.created_at == instance.updated_at
        interfaces = list(instance.interfaces.all())
        assert [(i.position, i.template_name, i.protocol) for i in interfaces] == [
            (0, "generic_http", "http"), (1, "custom_opc", "opc.tcp")]
        assert interfaces[0].properties["accessAddresses"] == ["localhost"]

    @pytest.mark.parametrize("interfaces, fields, message", [
        ([http()], {"provider": "inv@lid"},
         "The specified system name does not match the naming convention: Inv@lid"),
        ([http()], {"metadata": json.dumps({"a.b": 1})},
         "Invalid metadata key: a.b, it should not contain . character"),
        ([http(protocol="https")], {}, "https protocol is invalid for generic_http"),
        ([http(properties=json.dumps({"accessPort": 1, "basePath": "/"}))], {},
         "accessAddresses interface property is missing for generic_http"),
        ([], {}, "Please submit at least 1 form."),
    ])
    def test_it_refuses_what_the_api_refuses(self, admin_client, interfaces, fields, message):
        assert message in errors(admin_client.post(ADD, form(interfaces, **fields)))
        assert not ServiceInstance.objects.exists()

    def test_it_refuses_a_second_instance_with_the_same_id(self, admin_client):
        make_instances(instance_body("TemperatureProvider", "temperatureInfo", "2.0.0"))
        page = errors(admin_client.post(ADD, form([http()])))
        assert "Service instance TemperatureProvider|temperatureInfo|2.0.0 already exists" in page
        assert ServiceInstance.objects.count() == 1

    def test_it_lists_and_filters_by_provider(self, admin_client):
        make_instances(instance_body("Alpha"), instance_body("Beta"))
        response = admin_client.get(CHANGELIST, {"provider": "alpha"})
        assert [i.provider for i in response.context["cl"].result_list] == ["Alpha"]

    def test_it_edits_interfaces_keeping_their_order(self, admin_client):
        instance = make_instances(instance_body("Alpha"))[0]
        first = instance.interfaces.get()
        data = form([http(id=first.pk, instance=instance.pk, DELETE="on"),
                     http(template_name="custom_b", protocol="b", properties="{}"),
                     http(template_name="custom_c", protocol="c", properties="{}")],
                    provider="Alpha", service_definition="temperatureInfo", version="1.0.0")
        data["interfaces-INITIAL_FORMS"] = 1
        response = admin_client.post(f"/admin/store/serviceinstance/{instance.pk}/change/", data)
        assert response.status_code == 302, response.content.decode()[-3000:]
        stored = ServiceInterface.objects.filter(instance=instance).order_by("position")
        assert [(i.position, i.template_name) for i in stored] == [
            (0, "custom_b"), (1, "custom_c")]
        instance.refresh_from_db()
        assert instance.updated_at > instance.created_at

    def test_it_records_added_and_changed_instances_for_subscriptions(self, admin_client):
        # The subscriptions learn of the instance (the change feed).
        response = admin_client.post(ADD, form([http()]))
        assert response.status_code == 302, response.content.decode()[:3000]
        instance = ServiceInstance.objects.get()
        assert {c.service_instance_id for c in feed_unread()} == {
            "TemperatureProvider|temperatureInfo|2.0.0"}
        feed_skip()
        data = form([http(id=instance.interfaces.get().pk, instance=instance.pk)],
                    metadata=json.dumps({"unit": "kelvin"}))
        data["interfaces-INITIAL_FORMS"] = 1
        response = admin_client.post(f"/admin/store/serviceinstance/{instance.pk}/change/", data)
        assert response.status_code == 302, response.content.decode()[-3000:]
        assert {c.service_instance_id for c in feed_unread()} == {
            "TemperatureProvider|temperatureInfo|2.0.0"}
        instance.refresh_from_db()
        assert instance.metadata == {"unit": "kelvin"}

    def test_it_keeps_the_id_of_a_changed_instance(self, admin_client):
        instance = make_instances(instance_body("Alpha"))[0]
        data = form([http(id=instance.interfaces.get().pk, instance=instance.pk)],
                    provider="Beta")
        data["interfaces-INITIAL_FORMS"] = 1
        response = admin_client.post(f"/admin/store/serviceinstance/{instance.pk}/change/", data)
        assert response.status_code == 302, response.content.decode()[-3000:]
        assert ServiceInstance.objects.get().service_instance_id == instance.service_instance_id
