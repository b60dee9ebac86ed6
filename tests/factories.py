"""Builders of stored test data, one per entity: rules, service instances, subscriptions and
identities with permissions. Rules and instances go through the services, subscriptions
through the API (as a client makes them)."""
from django.contrib.auth.models import Permission

from identity.models import User
from store.models import Rule
from store.services.rules import RuleDraft, rule_create_many
from tests.subscriptions.helpers import push_element, push_subscribe, subscribe, subscription_body


def make_rules(*specs: tuple[str, str, int], requester: str = "Sysop") -> list[Rule]:
    """Store rules given as (consumer, serviceInstanceId, priority) through the service."""
    return rule_create_many(drafts=[RuleDraft(*spec) for spec in specs], requester=requester,
                            limit=None)


def make_instances(*bodies: dict):
    """Store instances (create-request shape, see `tests.store.helpers.instance_body`)
    through the service."""
    from store.serializers.instances import InstanceCreateSerializer, instance_drafts_from
    from store.services.instances import instance_create_many

    serializer = InstanceCreateSerializer(data={"instances": list(bodies)})
    serializer.is_valid(raise_exception=True)
    return instance_create_many(drafts=instance_drafts_from(serializer.validated_data),
                                limit=None)


def make_subscription(api, body: dict | None = None, consumer: str = "TemperatureConsumer",
                      query: str = "") -> str:
    """Subscribe `consumer` (default body: `subscription_body()`); returns the id."""
    response = subscribe(api, subscription_body() if body is None else body, consumer, query)
    assert response.status_code in (200, 201), response.content
    return response.content.decode()


def make_push_subscription(api, target: str = "TemperatureConsumer",
                           service_definition: str | None = "temperatureInfo",
                           owner: str = "Sysop", **fields) -> str:
    """Subscribe `target` through push management as `owner`; returns the id."""
    response = push_subscribe(api, push_element(target, service_definition, **fields),
                              owner=owner)
    assert response.status_code == 201, response.content
    return response.json()["entries"][0]["id"]


def grant(name: str, *permissions: str, **fields) -> User:
    """The identity `name` (created with `fields` if new) holding `permissions` besides those
    it has, each a codename ("view_rule"), with its app where the codename is ambiguous
    ("general.view_logentry")."""
    user, _ = User.objects.get_or_create(username=name, defaults=fields)
    user.user_permissions.add(*(_permission(permission) for permission in permissions))
    return user


def _permission(name: str) -> Permission:
    app_label, _, codename = name.rpartition(".")
    if app_label:
        return Permission.objects.get(codename=codename, content_type__app_label=app_label)
    return Permission.objects.get(codename=codename)
