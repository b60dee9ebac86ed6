"""The admin's JSON text areas (instance metadata, interface properties) get the same check
as API bodies: a form error, not a database error (500), for what cannot be stored."""
import json

import pytest

from store.models import ServiceInstance
from tests.store.test_instance_admin import ADD, HTTP_PROPERTIES, form, http

pytestmark = pytest.mark.django_db

REFUSED = [
    ('{"a": "\\u0000"}', "a: NUL characters (U+0000) are not allowed."),
    ('{"a": ["\\ud800"]}', "a[0]: Unpaired surrogates (U+D800 to U+DFFF) are not allowed."),
    ('{"a\\u0000": 1}', "Field name: NUL characters (U+0000) are not allowed."),
    ('{"a": 1e999}', "a: Number out of range."),
]


@pytest.fixture
def admin(admin_client):
    admin_client.raise_request_exception = False
    return admin_client


@pytest.mark.parametrize("text, message", REFUSED)
def test_metadata_it_cannot_store_is_a_form_error(admin, text, message):
    response = admin.post(ADD, form([http()], metadata=text))
    assert response.status_code == 200
    assert message in response.content.decode()
    assert not ServiceInstance.objects.exists()


@pytest.mark.parametrize("text, message", REFUSED)
def test_interface_properties_it_cannot_store_are_a_form_error(admin, text, message):
    properties = json.dumps(HTTP_PROPERTIES)[:-1] + ", " + text[1:]
    response = admin.post(ADD, form([http(properties=properties)]))
    assert response.status_code == 200
    assert message in response.content.decode()
    assert not ServiceInstance.objects.exists()
