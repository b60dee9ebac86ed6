import pytest
from django.contrib.auth.models import Group, Permission

from identity.models import User
from identity.services import identity_token_issue
from tests.factories import grant
from tests.helpers import SYSOP, as_system, assert_forbidden, with_token
from tests.probe_urls import PROBE

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.probe_urls")]

WITH_PERMISSION = f"{PROBE}/mgmt/with-permission"
WITHOUT_PERMISSION = f"{PROBE}/mgmt/without-permission"
UNKNOWN_MGMT_PATH = "/serviceorchestration/orchestration/mgmt/unknown"

POLICIES = ["sysop-only", "whitelist", "permission"]


class ManagementPolicyTests:
    @pytest.mark.parametrize("policy", POLICIES)
    def test_it_lets_the_operator_manage_under_every_policy(self, api, settings, policy):
        settings.MANAGEMENT_POLICY = policy
        assert api.get(WITH_PERMISSION, **SYSOP).status_code == 200
        assert api.get(WITHOUT_PERMISSION, **SYSOP).status_code == 200

    @pytest.mark.parametrize("policy", POLICIES)
    def test_it_refuses_an_ordinary_system_under_every_policy(self, api, settings, policy):
        settings.MANAGEMENT_POLICY = policy
        assert_forbidden(api.get(WITH_PERMISSION, **as_system("Manager")),
                         f"GET {WITH_PERMISSION}")
        assert_forbidden(api.get(WITHOUT_PERMISSION, **as_system("Manager")),
                         f"GET {WITHOUT_PERMISSION}")

    @pytest.mark.parametrize("policy", POLICIES)
    def test_it_checks_permission_before_answering_an_unknown_management_path(
            self, api, settings, policy):
        settings.MANAGEMENT_POLICY = policy
        assert_forbidden(api.get(UNKNOWN_MGMT_PATH, **as_system("Manager")),
                         f"GET {UNKNOWN_MGMT_PATH}")
        assert api.get(UNKNOWN_MGMT_PATH, **SYSOP).status_code == 404

    def test_it_does_not_guard_paths_without_mgmt(self, api, settings):
        settings.MANAGEMENT_POLICY = "sysop-only"
        assert api.get(f"{PROBE}/whoami", **as_system("Manager")).status_code == 200

    def test_it_refuses_upper_case_sysop(self, api, settings):
        settings.MANAGEMENT_POLICY = "sysop-only"
        assert_forbidden(api.get(WITH_PERMISSION, **as_system("SYSOP")), f"GET {WITH_PERMISSION}")

    @pytest.mark.parametrize("policy", ["whitelist", "permission"])
    def test_it_lets_whitelisted_systems_manage(self, api, settings, policy):
        settings.MANAGEMENT_POLICY = policy
        settings.MANAGEMENT_WHITELIST = ["manager", "other-system"]
        assert api.get(WITHOUT_PERMISSION, **as_system("Manager")).status_code == 200
        assert api.get(WITHOUT_PERMISSION, **as_system("OtherSystem")).status_code == 200
        assert_forbidden(api.get(WITHOUT_PERMISSION, **as_system("Stranger")),
                         f"GET {WITHOUT_PERMISSION}")

    def test_it_ignores_the_whitelist_under_sysop_only(self, api, settings):
        settings.MANAGEMENT_POLICY = "sysop-only"
        settings.MANAGEMENT_WHITELIST = ["Manager"]
        assert_forbidden(api.get(WITHOUT_PERMISSION, **as_system("Manager")),
                         f"GET {WITHOUT_PERMISSION}")

    def test_it_lets_a_system_holding_the_operation_permission_manage(self, api, settings):
        settings.MANAGEMENT_POLICY = "permission"
        grant("Manager", "view_identitytoken")
        assert api.get(WITH_PERMISSION, **as_system("Manager")).status_code == 200
        # The permission grants that operation only.
        assert_forbidden(api.get(WITHOUT_PERMISSION, **as_system("Manager")),
                         f"GET {WITHOUT_PERMISSION}")

    def test_it_grants_through_a_group(self, api, settings):
        settings.MANAGEMENT_POLICY = "permission"
        group = Group.objects.create(name="store managers")
        group.permissions.add(Permission.objects.get(codename="view_identitytoken"))
        User.objects.create(username="Manager").groups.add(group)
        assert api.get(WITH_PERMISSION, **as_system("Manager")).status_code == 200

    def test_it_ignores_other_permissions(self, api, settings):
        settings.MANAGEMENT_POLICY = "permission"
        grant("Manager", "add_identitytoken")
        assert_forbidden(api.get(WITH_PERMISSION, **as_system("Manager")),
                         f"GET {WITH_PERMISSION}")

    def test_it_ignores_permissions_of_a_deactivated_identity(self, api, settings):
        settings.MANAGEMENT_POLICY = "permission"
        grant("Manager", "view_identitytoken")
        User.objects.filter(username="Manager").update(is_active=False)
        assert_forbidden(api.get(WITH_PERMISSION, **as_system("Manager")),
                         f"GET {WITH_PERMISSION}")

    def test_it_never_lends_a_persons_permissions_to_a_system_of_that_name(self, api, settings):
        settings.MANAGEMENT_POLICY = "permission"
        User.objects.create(username="Admin", is_staff=True, is_superuser=True)
        assert_forbidden(api.get(WITH_PERMISSION, **as_system("Admin")), f"GET {WITH_PERMISSION}")

    def test_it_ignores_the_permission_under_the_whitelist_policy(self, api, settings):
        settings.MANAGEMENT_POLICY = "whitelist"
        grant("Manager", "view_identitytoken")
        assert_forbidden(api.get(WITH_PERMISSION, **as_system("Manager")),
                         f"GET {WITH_PERMISSION}")


class ManagementUnderTokenPolicyTests:
    @pytest.fixture(autouse=True)
    def token_policy(self, settings):
        settings.AUTHENTICATION_POLICY = "token"
        settings.MANAGEMENT_POLICY = "sysop-only"

    def test_it_lets_an_operator_identity_manage(self, api):
        raw, _ = identity_token_issue(system_name="PlantOperator", operator=True,
                                      ttl_seconds=60)
        assert api.get(WITHOUT_PERMISSION, **with_token(raw)).status_code == 200

    def test_it_refuses_a_non_operator_identity_even_named_sysop(self, api):
        raw, _ = identity_token_issue(system_name="Sysop", operator=False, ttl_seconds=60)
        assert_forbidden(api.get(WITHOUT_PERMISSION, **with_token(raw)),
                         f"GET {WITHOUT_PERMISSION}")

    def test_it_uses_the_permissions_of_the_token_identity(self, api, settings):
        settings.MANAGEMENT_POLICY = "permission"
        raw, token = identity_token_issue(system_name="Manager", operator=False,
                                          ttl_seconds=60)
        grant(token.user.username, "view_identitytoken")
        assert api.get(WITH_PERMISSION, **with_token(raw)).status_code == 200
