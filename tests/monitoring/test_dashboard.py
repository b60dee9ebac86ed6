"""The Grafana dashboard deploy/monitoring/grafana-dashboard.json (docs/metrics.md,
"Dashboard"): it loads, imports into any Grafana (the data source is a variable, no uid of
ours), its panels have unique ids and places that do not overlap, and every query reads only
metrics the service exports."""
import json
from itertools import combinations

import pytest

from tests.monitoring.promql import PROMETHEUS_SERIES, metric_names, variable_metric_names
from tests.worker import ROOT

DASHBOARD = ROOT / "deploy" / "monitoring" / "grafana-dashboard.json"
DATA_SOURCE = {"type": "prometheus", "uid": "${datasource}"}
GRID_WIDTH = 24


@pytest.fixture(scope="module")
def dashboard() -> dict:
    return json.loads(DASHBOARD.read_text())


def all_panels(dashboard: dict) -> list[dict]:
    """Every panel, those inside collapsed rows too."""
    return [panel for top in dashboard["panels"] for panel in [top, *top.get("panels", [])]]


def queries(dashboard: dict) -> list[dict]:
    return [panel for panel in all_panels(dashboard) if panel["type"] != "row"]


def data_source_references(node: object) -> list[object]:
    if isinstance(node, dict):
        found = [node["datasource"]] if "datasource" in node else []
        return found + [ref for value in node.values() for ref in data_source_references(value)]
    if isinstance(node, list):
        return [ref for value in node for ref in data_source_references(value)]
    return []


class DashboardTests:
    def test_it_is_a_dashboard_grafana_imports(self, dashboard):
        assert dashboard["title"] == "Service Orchestration"
        assert dashboard["uid"] and dashboard["id"] is None  # an id is given on import
        assert isinstance(dashboard["schemaVersion"], int)
        required = {item["id"] for item in dashboard["__requires"] if item["type"] == "panel"}
        assert {panel["type"] for panel in queries(dashboard)} <= required

    def test_the_data_source_is_a_variable_of_the_importer(self, dashboard):
        variables = {variable["name"]: variable for variable in
                     dashboard["templating"]["list"]}
        assert variables["datasource"]["type"] == "datasource"
        assert variables["datasource"]["query"] == "prometheus"
        for reference in data_source_references(dashboard):
            assert reference in (DATA_SOURCE, {"type": "grafana", "uid": "-- Grafana --"})

    def test_every_panel_queries_through_the_variable(self, dashboard):
        assert len(queries(dashboard)) >= 15
        for panel in queries(dashboard):
            assert panel["datasource"] == DATA_SOURCE, panel["title"]
            assert panel["targets"], panel["title"]
            refs = [target["refId"] for target in panel["targets"]]
            assert len(set(refs)) == len(refs), panel["title"]
            for target in panel["targets"]:
                assert target["datasource"] == DATA_SOURCE, panel["title"]

    def test_panel_ids_are_unique(self, dashboard):
        ids = [panel["id"] for panel in all_panels(dashboard)]
        assert len(ids) == len(set(ids)) and all(isinstance(i, int) for i in ids)

    def test_every_panel_has_a_place_on_the_grid_and_none_overlap(self, dashboard):
        places = []
        for panel in all_panels(dashboard):
            grid = panel["gridPos"]
            assert {"h", "w", "x", "y"} <= set(grid), panel["title"]
            assert grid["w"] > 0 and grid["h"] > 0, panel["title"]
            assert 0 <= grid["x"] and grid["x"] + grid["w"] <= GRID_WIDTH, panel["title"]
            places.append((panel["title"], grid))
        for (first, a), (second, b) in combinations(places, 2):
            apart = (a["x"] + a["w"] <= b["x"] or b["x"] + b["w"] <= a["x"]
                     or a["y"] + a["h"] <= b["y"] or b["y"] + b["h"] <= a["y"])
            assert apart, (first, second)

    def test_the_queries_read_only_exported_metrics(self, dashboard, exported_series):
        allowed = exported_series | PROMETHEUS_SERIES
        read = set()
        for panel in queries(dashboard):
            for target in panel["targets"]:
                names = metric_names(target["expr"])
                assert names and names <= allowed, (panel["title"], names - allowed)
                read |= names
        for variable in dashboard["templating"]["list"]:
            if variable["type"] == "query":
                assert variable_metric_names(variable["query"]["query"]) <= allowed
        # Every metric of the service is on the dashboard somewhere.
        families = {name.removesuffix("_total").removesuffix("_bucket") for name in
                    exported_series if not name.endswith(("_count", "_sum"))}
        assert families <= {name.removesuffix("_total").removesuffix("_bucket")
                            for name in read}
