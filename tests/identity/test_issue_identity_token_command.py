import datetime as dt
import io

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from identity.models import IdentityToken, User
from identity.selectors import identity_token_owner

pytestmark = pytest.mark.django_db


def issue(*args: str) -> str:
    out = io.StringIO()
    call_command("issue_identity_token", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue().strip()


class IssueIdentityTokenCommandTests:
    def test_it_prints_a_token_for_a_new_normalized_system(self):
        raw = issue("temperature-consumer")
        owner = identity_token_owner(raw)
        assert owner is not None and owner.username == "TemperatureConsumer"
        assert owner.is_operator is False
        assert not owner.has_usable_password()

    def test_it_marks_an_operator(self):
        raw = issue("plant-operator", "--operator")
        assert identity_token_owner(raw).is_operator is True

    def test_it_reuses_the_existing_identity(self):
        issue("Consumer")
        issue("Consumer", "--operator")
        assert User.objects.filter(username="Consumer").count() == 1
        assert IdentityToken.objects.count() == 2

    def test_it_sets_the_expiry_from_ttl(self):
        before = timezone.now()
        issue("Consumer", "--ttl", "120")
        token = IdentityToken.objects.get()
        assert before + dt.timedelta(seconds=119) < token.expires_at
        assert token.expires_at <= timezone.now() + dt.timedelta(seconds=120)

    def test_it_defaults_the_ttl_to_the_setting(self, settings):
        settings.IDENTITY_TOKEN_TTL_SECONDS = 7200
        # The default is read when the parser is built, i.e. per call.
        issue("Consumer")
        remaining = IdentityToken.objects.get().expires_at - timezone.now()
        assert dt.timedelta(seconds=7100) < remaining <= dt.timedelta(seconds=7200)

    def test_it_refuses_an_invalid_name(self):
        with pytest.raises(CommandError, match="does not match the naming convention: Inv@lid"):
            issue("inv@lid")
        assert not User.objects.exists()

    def test_it_refuses_a_non_positive_ttl(self):
        with pytest.raises(CommandError, match="--ttl must be a positive"):
            issue("Consumer", "--ttl", "0")
        assert not IdentityToken.objects.exists()
