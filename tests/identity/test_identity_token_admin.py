"""Issuing identity tokens from the admin: the command's service, the secret shown once."""
import datetime as dt
import re

import pytest
from django.utils import timezone

from identity.models import IdentityToken, User
from tests.helpers import with_token
from tests.store.helpers import QUERY

pytestmark = pytest.mark.django_db

TOKENS = "/admin/identity/identitytoken/"
ADD = f"{TOKENS}add/"


def issued_token(response) -> str:
    assert response.status_code == 200
    found = re.findall(r'id="issued-token"[^>]* value="([^"]+)"', response.content.decode())
    assert len(found) == 1
    return found[0]


class IdentityTokenAdminTests:
    def test_it_offers_the_issue_form_with_help(self, admin_client, settings):
        settings.IDENTITY_TOKEN_TTL_SECONDS = 3600
        html = admin_client.get(ADD).content.decode()
        assert 'name="system_name"' in html and 'value="3600"' in html
        assert "The system the token identifies" in html

    def test_it_shows_the_secret_once_and_it_authenticates_api_calls(self, admin_client,
                                                                     settings, api):
        response = admin_client.post(ADD, {"system_name": "plant-operator", "operator": "on",
                                           "ttl_seconds": 600, "description": "line 3"})
        raw = issued_token(response)
        assert "no-store" in response["Cache-Control"]
        token = IdentityToken.objects.get()
        assert (token.user.username, token.user.is_operator, token.description) == (
            "PlantOperator", True, "line 3")
        assert raw.startswith(token.hint) and raw not in token.token_hash
        assert token.expires_at <= timezone.now() + dt.timedelta(seconds=600)
        for page in (TOKENS, f"{TOKENS}{token.pk}/change/"):
            assert raw not in admin_client.get(page).content.decode()
        settings.AUTHENTICATION_POLICY = "token"
        answer = api.post(QUERY, {}, format="json", **with_token(raw))
        assert answer.status_code == 200, answer.content

    def test_it_refuses_an_invalid_name_or_validity_and_issues_nothing(self, admin_client):
        response = admin_client.post(ADD, {"system_name": "inv@lid", "ttl_seconds": 0})
        assert response.status_code == 200
        assert response.context["form"].errors == {
            "system_name": ["The specified system name does not match the naming convention: "
                            "Inv@lid"],
            "ttl_seconds": ["The validity must be a positive number of seconds"]}
        assert not IdentityToken.objects.exists() and not User.objects.filter(
            username="Inv@lid").exists()

    def test_it_needs_the_add_permission(self, client, django_user_model):
        staff = django_user_model.objects.create_user("Viewer", password="pw", is_staff=True)
        client.force_login(staff)
        assert client.post(ADD, {"system_name": "X", "ttl_seconds": 60}).status_code == 403
        assert not IdentityToken.objects.exists()
