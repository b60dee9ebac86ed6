import pytest

pytest.register_assert_rewrite("tests.helpers", "tests.store.helpers")

from rest_framework.test import APIClient  # noqa: E402

from tests import services  # noqa: E402


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix: None) -> None:
    """Runs before the test database is created: fail clearly when PostgreSQL is not there."""
    services.require_postgres()


@pytest.fixture
def api() -> APIClient:
    return APIClient()
