from collections.abc import Iterator

import pytest

pytest.register_assert_rewrite("tests.helpers", "tests.store.helpers")

from rest_framework.test import APIClient  # noqa: E402

from config.celery import app as celery_app  # noqa: E402
from tests import services  # noqa: E402
from tests.endpoints import HttpSink, MqttReceiver  # noqa: E402
from tests.worker import celery_worker  # noqa: E402,F401  (fixture)


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix: None) -> None:
    """Runs before the test database is created: fail clearly when PostgreSQL is not there."""
    services.require_postgres()


@pytest.fixture(autouse=True)
def celery_mode(request) -> Iterator[None]:
    """Tasks run in the test's thread, as without a broker (nothing is left in the shared
    Redis), unless the test uses the real worker (`celery_worker`)."""
    eager = "celery_worker" not in request.fixturenames
    previous = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = eager
    yield
    celery_app.conf.task_always_eager = previous


@pytest.fixture
def api() -> APIClient:
    return APIClient()


@pytest.fixture
def mqtt_broker() -> tuple[str, int]:
    return services.require_mqtt()


@pytest.fixture
def mqtt_receiver(mqtt_broker: tuple[str, int]) -> Iterator[MqttReceiver]:
    receiver = MqttReceiver(*mqtt_broker)
    yield receiver
    receiver.close()


@pytest.fixture
def http_sink() -> Iterator[HttpSink]:
    sink = HttpSink()
    yield sink
    sink.close()
