import pytest
from rest_framework.test import APIClient

from tests import services


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix: None) -> None:
    """Runs before the test database is created: fail clearly when PostgreSQL is not there."""
    services.require_postgres()


@pytest.fixture
def api() -> APIClient:
    return APIClient()
