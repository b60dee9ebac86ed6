"""Bounded schema-driven fuzzing (issue 10): every operation of `/api/schema/`, as the operator
and as a consumer, against the app in-process and the test PostgreSQL. Each generated request
must get an answer the schema documents (status, content type, body shape), never a 5xx, and
a request the schema calls invalid must be refused.

A request the schema calls valid must also succeed (positive data acceptance), on every
operation: the schema says what the service refuses. The only exceptions are the refusals
OpenAPI 3.0 cannot express (they depend on stored data, on the requester, or on more than one
field), listed per operation in LISTED_REFUSALS by their message, with the reasons in
docs/openapi.md ("What the schema cannot say"): any other refusal of a valid request fails.

The run is reproducible (derandomized, no example database) and bounded by EXAMPLES per
operation and identity, so that it stays within a few minutes on a small machine."""
import json
import re
from collections.abc import Iterator

import pytest
import schemathesis
from django.core import signals
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.config._checks import (
    NEGATIVE_DATA_REJECTION_EXPECTED_STATUSES,
    NegativeDataRejectionConfig,
)
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    positive_data_acceptance,
    response_schema_conformance,
    status_code_conformance,
)

from config.wsgi import application

EXAMPLES = 50
OPERATOR = "Bearer SYSTEM//Sysop"
CONSUMER = "Bearer SYSTEM//SomeConsumer"
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance,
          response_schema_conformance, negative_data_rejection]

# The refusals of a schema-valid request that the schema cannot say, per operation id: the
# status and a regular expression the whole message must match (docs/openapi.md, "What the
# schema cannot say"). Any other refusal of a schema-valid request fails the run.
# Interface template names, likewise (extended normalization joins separator runs into one
# `_`).
_TEMPLATE_NAMES = (
    r"The specified interface template name does not match the naming convention: .*",)
_FLAGS = (
    # Flag names are read in any case: OpenAPI 3.0 has no `propertyNames`.
    r"Invalid orchestration flag: .*",
    # More than one field: ONLY_PREFERRED needs preferred providers.
    r"ONLY_PREFERRED flag is present, but no preferred provider is defined",
    # An operation's 63 characters count each run of separators as one, next to the letters:
    # beyond what a regular expression can count.
    r"The specified service operation name does not match the naming convention: .*",
    *_TEMPLATE_NAMES,
)
_SUBSCRIPTION = (*_FLAGS,
    # The notify properties a protocol needs and their values depend on the protocol (more
    # than one field); their names on nothing OpenAPI 3.0 can say (no `propertyNames`); the
    # address and topic rules on configuration, name resolution and other systems
    # (subscriptions.notify_targets).
    r"Notify properties (are missing|contains empty (key|value))",
    r"Notify properties has no \w+ (property|member)",
    r"Notify property \w+ should be a string",
    r"Notify port (is not a number|is out of the valid range)",
    r"Unsupported notify HTTP method: .*",
    r"Notify property (address|path|topic)\b.*",
    # Where an HTTP notify address may point depends on configuration
    # (NOTIFY_HTTP_ALLOWED_NETWORKS, the service's own addresses) and on name resolution
    # (notifications.address_policy).
    r"Notify address .*",
)
_INSTANCES = (
    *_TEMPLATE_NAMES,
    # The interface template decides the protocol and the properties (more than one field).
    r"Interface protocol is missing",
    r".* protocol is invalid for .*",
    r"\w+ interface property is missing for .*",
    r"(accessAddresses|accessPort|basePath|baseTopic|operations): .*",
    # Key names (no `propertyNames`) and the clock (an expiry in the past).
    r"Invalid (metadata|interface property) key: .*",
    r"Expiration time is in the past",
    # Two spellings of one instance (more than one element).
    r"Duplicated instance.*",
)
_RULE_IDS = (
    # Map keys: rule ids that do not exist (stored data); OpenAPI 3.0 has no `propertyNames`,
    # so a key that is no UUID, or two keys for one UUID, cannot be excluded either.
    r"(Not existing|Invalid|Duplicate) UUID: .*",
)
LISTED_REFUSALS: dict[str, tuple[str, ...]] = {
    # One of two fields, not both: OpenAPI 3.0 cannot say it with `null` meaning absent.
    # Stored data: a rule for the consumer, service and priority exists.
    "simpleStoreCreate": (r"Give either entries or candidates, not both",
                          r"Request payload is empty",
                          r"There is already an existing entity with .*",
                          # Two entries for one rule (more than one element).
                          r"Conflicting rules, the combination of the following fields should "
                          r"be unique: .*"),
    "simpleStoreQuery": (r"Minimum priority should not be greater than maximum priority",),
    "simpleStoreModifyPriorities": _RULE_IDS,
    "simpleStoreModifyPrioritiesPost": _RULE_IDS,
    "serviceInstanceCreate": _INSTANCES,
    # Stored data: the instance to update must exist.
    "serviceInstanceUpdate": (*_INSTANCES, r"Instance id does not exist: .*"),
    "pull": _FLAGS,
    # The requester: a consumer subscribes only for itself.
    "subscribe": (*_SUBSCRIPTION,
                  r"Target system cannot be different than the requester system"),
    # More than one element: two subscriptions for one target and service; stored data: the
    # target's subscription count.
    "pushSubscribe": (*_SUBSCRIPTION, r"Duplicated subscription request for system .*",
                      r"Too many subscriptions: .*"),
    # The clock (an expiry in the past), stored data (a live lock or reservation), more than
    # one element (one instance twice).
    "lockCreate": (r"Expires at is in the past: .*", r"Already locked: .*",
                   r"Duplicate service instance id: .*"),
    # One of two fields; two spellings of one value.
    "pushTrigger": (r"Target system list and subscription id list are both empty",
                    r"Duplicated (subscription id|target system name): .*"),
}


def _listed_refusal(case, response) -> bool:
    listed = LISTED_REFUSALS.get(case.operation.definition.raw.get("operationId"), ())
    if response.status_code != 400:
        return False
    try:
        message = json.loads(response.content).get("errorMessage", "")
    except (ValueError, AttributeError):
        return False
    return any(re.fullmatch(pattern, message, re.DOTALL) for pattern in listed)


@schemathesis.check
def positive_data_accepted_unless_listed(ctx, response, case) -> bool | None:
    """positive_data_acceptance, except for the refusals listed for the operation."""
    if _listed_refusal(case, response):
        return None
    return positive_data_acceptance(ctx, response, case)


schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", application)
# The identity is sent by the test, not generated: a random bearer value is only ever a 401.
schema.config.generation.update(with_security_parameters=False)
# NUL is refused anywhere in a request by the input gate (api.input_safety, its own hostile
# input tests), also inside free-form JSON and unknown property names, where no schema can
# exclude it; generating it would only test that gate again.
schema.config.generation.update(allow_x00=False)
# Invalid data may be too large a body (a list far over its maxItems): the documented 413.
schema.config.checks.negative_data_rejection = NegativeDataRejectionConfig(
    expected_statuses=[*NEGATIVE_DATA_REJECTION_EXPECTED_STATUSES, "413"])


@pytest.fixture
def connection_kept_across_requests() -> Iterator[None]:
    """The WSGI handler closes the database connection after every request, which would end
    the test's transaction; keep it open, as Django's test client does. Every example of an
    operation then runs inside that one transaction, rolled back at the end: nothing is left
    for other tests, and nothing is committed, so no notification is ever sent to a generated
    (non-loopback) address."""
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


@pytest.mark.django_db
@pytest.mark.usefixtures("connection_kept_across_requests")
@pytest.mark.parametrize("authorization", [OPERATOR, CONSUMER], ids=["operator", "consumer"])
@schema.parametrize()
@settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None,
          suppress_health_check=list(HealthCheck))
def test_operation_conforms_to_schema(case, authorization: str) -> None:
    case.call_and_validate(headers={"Authorization": authorization},
                           checks=[*CHECKS, positive_data_accepted_unless_listed])
