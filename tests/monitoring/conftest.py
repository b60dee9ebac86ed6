"""What the monitoring files may name: the series the service really exports, read from a
scrape of /metrics with METRICS_ENABLED (so a metric renamed in the code fails the checks of
the dashboard and of the alert rules, not a hand-kept list)."""
import pytest
from prometheus_client.parser import text_string_to_metric_families

from observability.metrics import PREFIX

# The series of each metric type, as a query names them.
SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_count", "_sum"),
            "gauge": ("",)}


@pytest.fixture
def exported_series(api, settings, db) -> set[str]:
    settings.METRICS_ENABLED = True
    settings.METRICS_TOKEN = ""
    response = api.get("/metrics")
    assert response.status_code == 200, response.content
    families = list(text_string_to_metric_families(response.content.decode()))
    # Only the service's own, and no `_created` series: the test process's registry also
    # holds prometheus_client's process and platform collectors and the creation times of its
    # counters, which a server's scrape (multiprocess mode) does not show.
    names = {f"{family.name}{suffix}" for family in families
             if family.name.startswith(f"{PREFIX}_") and not family.name.endswith("_created")
             for suffix in SUFFIXES[family.type]}
    assert f"{PREFIX}_requests_total" in names and f"{PREFIX}_state_up" in names
    return names
