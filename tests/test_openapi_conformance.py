"""Bounded schema-driven fuzzing (issue 10): every operation of `/api/schema/`, as the operator
and as a consumer, against the app in-process and the test PostgreSQL. Each generated request
must get an answer the schema documents (status, content type, body shape), never a 5xx, and
a request the schema calls invalid must be refused.

For the operations whose success does not depend on stored data, a request the schema calls
valid must also succeed (positive data acceptance): the schema is exact there. Elsewhere a
valid-looking request can rightly be a 400 (a duplicate rule, a rule id that does not exist, a
name that does not normalize to the naming convention), which the schema describes in words.

The run is reproducible (derandomized, no example database) and bounded by EXAMPLES per
operation and identity, so that it stays within a few minutes on a small machine."""
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
# Operations whose success depends only on the request: a request the schema calls valid must
# succeed. (Rule query: `minPriority` above `maxPriority`; creates: interface templates and
# existing data; update and modify-priorities: existing entries; pull and subscribe: flags that
# need other fields, QOS_ENABLED, the requester as target. OpenAPI 3.0 cannot say those.)
EXACT_OPERATIONS = {"echo", "authorizationTokenVerify", "unsubscribe", "simpleStoreRemove",
                    "simpleStoreRemoveAtQuery", "simpleStoreRemoveAtStore",
                    "serviceInstanceRemove", "serviceInstanceQuery",
                    "generalManagementGetConfig"}

schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", application)
# The identity is sent by the test, not generated: a random bearer value is only ever a 401.
schema.config.generation.update(with_security_parameters=False)
# NUL is refused anywhere in a request by the input gate (config.input_safety, its own hostile
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
    exact = case.operation.definition.raw.get("operationId") in EXACT_OPERATIONS
    case.call_and_validate(headers={"Authorization": authorization},
                           checks=CHECKS + [positive_data_acceptance] if exact else CHECKS)
