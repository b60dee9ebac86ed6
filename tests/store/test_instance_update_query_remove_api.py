import datetime as dt

import pytest
from django.utils import timezone

from store.models import ServiceInstance
from tests.helpers import SYSOP, as_system, assert_error, assert_refused
from tests.factories import make_instances
from tests.store.helpers import (
    I_QUERY,
    I_REMOVE,
    I_UPDATE,
    http_interface,
    instance_body,
    mqtt_interface,
    post,
    stored_instances,
)

pytestmark = pytest.mark.django_db


def utc(moment: dt.datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def update(api, *items, **kwargs):
    return api.put(I_UPDATE, {"instances": list(items)}, format="json", **kwargs.get(
        "headers", SYSOP))


def ids(response) -> list[str]:
    assert response.status_code == 200, response.content
    return [entry["instanceId"] for entry in response.json()["entries"]]


@pytest.fixture
def catalog():
    soon = utc(timezone.now() + dt.timedelta(hours=1))
    later = utc(timezone.now() + dt.timedelta(days=10))
    return make_instances(
        instance_body("Alpha", "temperatureInfo", "1.0.0", expiresAt=soon,
                      metadata={"unit": "celsius", "accuracy": 0.5, "zones": ["a", "b"]}),
        instance_body("Beta", "temperatureInfo", "2.0.0", expiresAt=later,
                      metadata={"unit": "kelvin", "accuracy": 0.1}),
        instance_body("Alpha", "pressureInfo", "1.0.0", metadata={"unit": "bar"}),
    )


class InstanceUpdateApiTests:
    def test_it_replaces_expiry_metadata_and_interfaces(self, api, catalog):
        expires = utc(timezone.now() + dt.timedelta(days=2))
        response = update(api, {"instanceId": "alpha|temperature_info|1", "expiresAt": expires,
                                "metadata": {"unit": "fahrenheit"},
                                "interfaces": [mqtt_interface(), http_interface()]})
        assert response.status_code == 200, response.content
        entry = response.json()["entries"][0]
        assert entry["instanceId"] == "Alpha|temperatureInfo|1.0.0"
        assert entry["expiresAt"] == expires
        assert entry["metadata"] == {"unit": "fahrenheit"}
        assert [i["templateName"] for i in entry["interfaces"]] == ["generic_mqtt",
                                                                    "generic_http"]
        assert entry["updatedAt"] > entry["createdAt"]
        assert response.json()["count"] == 1

    def test_it_clears_the_expiry_when_absent(self, api, catalog):
        response = update(api, {"instanceId": "Alpha|temperatureInfo|1.0.0",
                                "interfaces": [http_interface()]})
        assert response.json()["entries"][0]["expiresAt"] is None
        assert response.json()["entries"][0]["metadata"] == {}

    @pytest.mark.parametrize("items, message", [
        ([], "Instance list is empty"),
        ([{"interfaces": [http_interface()]}], "Instance id is empty"),
        ([{"instanceId": " ", "interfaces": [http_interface()]}], "Instance id is empty"),
        ([{"instanceId": "Nobody|svc|1.0.0", "interfaces": [http_interface()]}],
         "Instance id does not exist: Nobody|svc|1.0.0"),
        ([{"instanceId": "Alpha|pressureInfo|1.0.0", "interfaces": [http_interface()]},
          {"instanceId": "alpha|pressure_info|1", "interfaces": [http_interface()]}],
         "Duplicated instance id: Alpha|pressureInfo|1.0.0"),
        ([{"instanceId": "Alpha||1.0.0", "interfaces": [http_interface()]}],
         "The specified service instance identifier does not match the naming convention: "
         "Alpha||1.0.0"),
        ([{"instanceId": "Alpha|pressureInfo|1.0.0", "interfaces": []}],
         "Service interface list is empty"),
        ([{"instanceId": "Alpha|pressureInfo|1.0.0", "interfaces": [http_interface()],
           "expiresAt": "2001-01-01T00:00:00Z"}], "Expiration time is in the past"),
    ])
    def test_it_refuses_invalid_updates_and_changes_nothing(self, api, catalog, items, message):
        assert_refused(lambda: update(api, *items), message, f"PUT {I_UPDATE}",
                       state=stored_instances)

    def test_it_needs_the_change_permission(self, api, catalog):
        response = update(api, {"instanceId": "Alpha|pressureInfo|1.0.0",
                                "interfaces": [http_interface()]},
                          headers=as_system("Manager"))
        assert response.status_code == 403


class InstanceQueryApiTests:
    def test_it_lists_every_instance_by_id_for_an_empty_query(self, api, catalog):
        response = post(api, I_QUERY, {})
        assert ids(response) == ["Alpha|pressureInfo|1.0.0", "Alpha|temperatureInfo|1.0.0",
                                 "Beta|temperatureInfo|2.0.0"]
        assert response.json()["count"] == 3
        assert response.json()["entries"][0]["interfaces"][0]["templateName"] == "generic_http"

    def test_it_filters_by_normalized_names_ids_and_versions(self, api, catalog):
        assert ids(post(api, I_QUERY, {"providerNames": ["alpha"]})) == [
            "Alpha|pressureInfo|1.0.0", "Alpha|temperatureInfo|1.0.0"]
        assert ids(post(api, I_QUERY, {"serviceDefinitionNames": ["temperature_info"],
                                       "versions": ["2"]})) == ["Beta|temperatureInfo|2.0.0"]
        assert ids(post(api, I_QUERY, {"instanceIds": ["alpha|pressure-info|1"]})) == [
            "Alpha|pressureInfo|1.0.0"]

    def test_it_filters_by_alive_time(self, api, catalog):
        in_a_day = utc(timezone.now() + dt.timedelta(days=1))
        assert ids(post(api, I_QUERY, {"alivesAt": in_a_day})) == [
            "Alpha|pressureInfo|1.0.0", "Beta|temperatureInfo|2.0.0"]

    def test_it_never_returns_an_expired_instance_for_an_alive_time(self, api, catalog):
        ServiceInstance.objects.filter(provider="Beta").update(
            expires_at=timezone.now() - dt.timedelta(seconds=1))
        an_hour_ago = utc(timezone.now() - dt.timedelta(hours=1))
        assert "Beta|temperatureInfo|2.0.0" not in ids(post(api, I_QUERY,
                                                            {"alivesAt": an_hour_ago}))
        assert "Beta|temperatureInfo|2.0.0" in ids(post(api, I_QUERY, {}))

    def test_it_filters_by_metadata_requirements_or_of_ands(self, api, catalog):
        body = {"metadataRequirementsList": [
            {"unit": "kelvin"},
            {"unit": "celsius", "accuracy": {"op": "LESS_THAN", "value": 1}},
        ]}
        response = post(api, I_QUERY, body)
        assert ids(response) == ["Alpha|temperatureInfo|1.0.0", "Beta|temperatureInfo|2.0.0"]
        assert response.json()["count"] == 2
        contains = {"metadataRequirementsList": [{"zones": {"op": "CONTAINS", "value": "b"}}]}
        assert ids(post(api, I_QUERY, contains)) == ["Alpha|temperatureInfo|1.0.0"]

    def test_it_pages_metadata_matches_and_counts_them_all(self, api, catalog):
        body = {"metadataRequirementsList": [{"unit": {"op": "INCLUDES", "value": "l"}}],
                "pagination": {"page": 1, "size": 1, "direction": "DESC",
                               "sortField": "instanceId"}}
        response = post(api, I_QUERY, body)
        assert ids(response) == ["Alpha|temperatureInfo|1.0.0"]
        assert response.json()["count"] == 2

    @pytest.mark.parametrize("sort_field", ["instanceId", "provider", "serviceDefinition",
                                            "version", "expiresAt", "createdAt", "updatedAt"])
    def test_it_sorts_by_every_allowed_field(self, api, catalog, sort_field):
        from store.selectors.instances import SORT_COLUMNS

        column = SORT_COLUMNS[sort_field]
        for direction, sign in (("ASC", ""), ("DESC", "-")):
            body = {"pagination": {"sortField": sort_field, "direction": direction}}
            expected = list(ServiceInstance.objects.order_by(f"{sign}{column}", f"{sign}pk")
                            .values_list("service_instance_id", flat=True))
            assert ids(post(api, I_QUERY, body)) == expected

    def test_it_sorts_by_version_descending(self, api, catalog):
        body = {"pagination": {"sortField": "version", "direction": "desc"}}
        assert ids(post(api, I_QUERY, body))[0] == "Beta|temperatureInfo|2.0.0"

    @pytest.mark.parametrize("body, message", [
        ({"instanceIds": [""]}, "Instance id list contains null or empty element"),
        ({"providerNames": [None]}, "Provider name list contains null or empty element"),
        ({"serviceDefinitionNames": [" "]},
         "Service definition name list contains null or empty element"),
        ({"versions": [""]}, "Version list contains null or empty element"),
        ({"versions": ["1.x"]}, "Version verification failure: the version should only contain "
                                "numbers and separator . characters"),
        ({"alivesAt": "tomorrow"}, "Alive time has an invalid time format, UTC string expected "
                                   "(example: 2024-10-11T14:30:00Z)"),
        ({"metadataRequirementsList": [{"unit": {"op": "LIKE", "value": "c"}}]},
         "Invalid metadata operation requirement: LIKE"),
        ({"metadataRequirementsList": [None]}, "metadataRequirementsList contains null element"),
        ({"metadataRequirementsList": ["unit"]},
         "metadataRequirementsList contains an invalid element: it should be a JSON object"),
        ({"pagination": {"sortField": "name"}},
         "Sort field is invalid. Only the following are allowed: [instanceId, provider, "
         "serviceDefinition, version, expiresAt, createdAt, updatedAt]"),
        ({"providerNames": ["inv@lid"]},
         "The specified system name does not match the naming convention: Inv@lid"),
    ])
    def test_it_refuses_invalid_queries(self, api, catalog, body, message):
        assert_error(post(api, I_QUERY, body), 400, "INVALID_PARAMETER", message,
                     f"POST {I_QUERY}")

    def test_it_needs_the_view_permission(self, api, catalog):
        assert post(api, I_QUERY, {}, headers=as_system("Manager")).status_code == 403


class InstanceRemoveApiTests:
    def test_it_removes_listed_instances_and_ignores_unknown_ones(self, api, catalog):
        response = api.delete(f"{I_REMOVE}?ids=alpha|pressure_info|1&ids=Nobody|svc|1.0.0",
                              **SYSOP)
        assert (response.status_code, response.content) == (200, b"")
        assert ServiceInstance.objects.count() == 2

    def test_it_accepts_comma_separated_ids(self, api, catalog):
        response = api.delete(
            f"{I_REMOVE}?ids=Alpha|pressureInfo|1.0.0,Beta|temperatureInfo|2.0.0", **SYSOP)
        assert response.status_code == 200
        assert list(ServiceInstance.objects.values_list("service_instance_id", flat=True)) == [
            "Alpha|temperatureInfo|1.0.0"]

    @pytest.mark.parametrize("query, message", [
        ("", "Instance id list is empty"),
        ("?ids=", "Instance id list is empty"),
        ("?ids=Alpha|pressureInfo|1.0.0&ids=A||1", "The specified service instance identifier "
                                                   "does not match the naming convention: A||1"),
    ])
    def test_it_refuses_missing_or_invalid_ids(self, api, catalog, query, message):
        assert_error(api.delete(f"{I_REMOVE}{query}", **SYSOP), 400, "INVALID_PARAMETER",
                     message, f"DELETE {I_REMOVE}")
        assert ServiceInstance.objects.count() == 3

    def test_it_needs_the_delete_permission(self, api, catalog):
        response = api.delete(f"{I_REMOVE}?ids=Alpha|pressureInfo|1.0.0",
                              **as_system("Manager"))
        assert response.status_code == 403
