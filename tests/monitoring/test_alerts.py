"""The Prometheus files of deploy/monitoring/ (docs/metrics.md, "Alerts"): promtool accepts the
rules and the configuration, the rules' unit tests (alerts.test.yml) pass and make every alert
fire and stay quiet at least once, the rules read only metrics the service exports, and every
alert has its severity, its texts and a runbook section that exists."""
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.monitoring.promql import PROMETHEUS_SERIES, metric_names
from tests.private_servers import find_binary
from tests.worker import ROOT

MONITORING = ROOT / "deploy" / "monitoring"
RULES = MONITORING / "prometheus-alerts.yml"
CONFIG = MONITORING / "prometheus.yml"
# The same job on Kubernetes: the web pods found through the API (docs/metrics.md).
CONFIGS = (CONFIG, MONITORING / "prometheus-kubernetes.yml")
RULE_TESTS = Path(__file__).parent / "alerts.test.yml"
SEVERITIES = {"critical", "warning"}


# Debian's prometheus is built without Kubernetes discovery: its promtool refuses the field.
WITHOUT_KUBERNETES = "field kubernetes_sd_configs not found in type config.ScrapeConfig"


def without_kubernetes(path: Path) -> str:
    """For a promtool that knows no Kubernetes discovery: the configuration with its pod
    discovery (whose fields are checked here) replaced by a file of targets, so that promtool
    checks everything else (TLS, token, relabelling, rules). Its path."""
    config = yaml.safe_load(path.read_text())
    [job] = config["scrape_configs"]
    [discovery] = job.pop("kubernetes_sd_configs")
    assert set(discovery) == {"role", "namespaces"} and discovery["role"] == "pod"
    assert set(discovery["namespaces"]) == {"names"}
    assert all(isinstance(name, str) for name in discovery["namespaces"]["names"])
    # The meta labels the relabelling reads are those of the pod role.
    for rule in job["relabel_configs"]:
        assert all(label.startswith("__meta_kubernetes_") for label in rule["source_labels"])
    targets = path.with_name("targets.json")
    targets.write_text('[{"targets": ["10.1.2.3:8465"]}]')
    job["file_sd_configs"] = [{"files": [str(targets)]}]
    path.write_text(yaml.safe_dump(config))
    return str(path)


def promtool(*arguments: str) -> subprocess.CompletedProcess:
    program = find_binary("promtool")
    assert program, "promtool is missing: install the package prometheus (make test does)"
    return subprocess.run([program, *arguments], capture_output=True, text=True, timeout=120)


def alerting_rules() -> list[dict]:
    groups = yaml.safe_load(RULES.read_text())["groups"]
    return [rule for group in groups for rule in group["rules"]]


def anchors(markdown: str) -> set[str]:
    """The anchors GitHub gives the headings of a Markdown file (not the comments of its code
    blocks)."""
    prose = re.sub(r"^```.*?^```", "", markdown, flags=re.MULTILINE | re.DOTALL)
    headings = re.findall(r"^#+\s+(.+?)\s*$", prose, re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-") for heading in headings}


class PromtoolTests:
    def test_promtool_accepts_the_rules(self):
        result = promtool("check", "rules", str(RULES))
        assert result.returncode == 0, result.stdout + result.stderr
        assert f"SUCCESS: {len(alerting_rules())} rules found" in result.stdout

    def test_the_rules_unit_tests_pass(self):
        result = promtool("test", "rules", str(RULE_TESTS))
        assert result.returncode == 0, result.stdout + result.stderr
        assert "SUCCESS" in result.stdout

    def test_the_unit_tests_catch_a_changed_threshold(self, tmp_path):
        """The cases are close enough to the thresholds that a laxer rule fails them."""
        copy = tmp_path / "deploy" / "monitoring"
        copy.mkdir(parents=True)
        (copy / RULES.name).write_text(RULES.read_text().replace(") > 0.05", ") > 0.1"))
        (tmp_path / "tests").mkdir()
        shutil.copy(RULE_TESTS, tmp_path / "tests" / RULE_TESTS.name)
        text = (tmp_path / "tests" / RULE_TESTS.name).read_text()
        (tmp_path / "tests" / RULE_TESTS.name).write_text(
            text.replace("../../deploy/monitoring/", "../deploy/monitoring/"))
        result = promtool("test", "rules", str(tmp_path / "tests" / RULE_TESTS.name))
        assert result.returncode == 1
        assert "alertname: ServiceOrchestrationPullErrors, time: 10m" in result.stdout + \
            result.stderr

    @pytest.mark.parametrize("config", CONFIGS, ids=lambda path: path.name)
    def test_promtool_accepts_the_configuration_with_its_rule_file(self, tmp_path, config):
        """Each configuration as shipped, with its token and CA files pointed at files that
        exist. Both scrape over HTTPS, as every deployment file serves."""
        text = config.read_text()
        for name, content in (("serviceorchestration.token", "scrape-secret\n"),
                              ("serviceorchestration-ca.pem", "")):
            assert f"/etc/prometheus/{name}" in text
            (tmp_path / name).write_text(content)
            text = text.replace(f"/etc/prometheus/{name}", str(tmp_path / name))
        (tmp_path / config.name).write_text(text)
        shutil.copy(RULES, tmp_path / RULES.name)
        result = promtool("check", "config", str(tmp_path / config.name))
        if WITHOUT_KUBERNETES in result.stdout + result.stderr:
            result = promtool("check", "config", without_kubernetes(tmp_path / config.name))
        assert result.returncode == 0, result.stdout + result.stderr
        assert "SUCCESS: 1 rule files found" in result.stdout
        [job] = yaml.safe_load(config.read_text())["scrape_configs"]
        assert job["scheme"] == "https" and "ca_file" in job["tls_config"]


class RulesTests:
    def test_every_alert_fires_and_stays_quiet_in_the_unit_tests(self):
        cases = [case for test in yaml.safe_load(RULE_TESTS.read_text())["tests"]
                 for case in test["alert_rule_test"]]
        for rule in alerting_rules():
            own = [case for case in cases if case["alertname"] == rule["alert"]]
            assert any(case["exp_alerts"] for case in own), f"{rule['alert']} never fires"
            assert any(not case["exp_alerts"] for case in own), f"{rule['alert']} never quiet"

    def test_every_alert_has_a_wait_a_severity_and_its_texts(self):
        for rule in alerting_rules():
            assert re.fullmatch(r"\d+m", rule["for"]), rule["alert"]
            assert rule["labels"]["severity"] in SEVERITIES, rule["alert"]
            assert set(rule["annotations"]) == {"summary", "description", "runbook_url"}
            assert all(text.strip() for text in rule["annotations"].values()), rule["alert"]

    def test_every_runbook_is_a_section_of_the_metrics_page(self):
        sections = anchors((ROOT / "docs" / "metrics.md").read_text())
        for rule in alerting_rules():
            page, _, anchor = rule["annotations"]["runbook_url"].partition("#")
            assert page == "docs/metrics.md"
            assert anchor == rule["alert"].lower() and anchor in sections, rule["alert"]

    def test_the_rules_read_only_exported_metrics(self, exported_series):
        for rule in alerting_rules():
            names = metric_names(rule["expr"])
            assert names, rule["alert"]
            assert names <= exported_series | PROMETHEUS_SERIES, (rule["alert"], names)

    @pytest.mark.parametrize("config", CONFIGS, ids=lambda path: path.name)
    def test_the_rules_name_the_job_of_the_configuration(self, config):
        jobs = {job["job_name"] for job in yaml.safe_load(config.read_text())["scrape_configs"]}
        named = set(re.findall(r'job="([^"]+)"', RULES.read_text()))
        assert named == jobs == {"serviceorchestration"}


class NameCheckTests:
    """The check of the names finds what it must, so that it cannot pass by finding none."""

    @pytest.mark.parametrize(("expr", "names"), [
        ('sum by (route, le) (rate(a_bucket{route="/x/y", job=~"$job"}[$__rate_interval]))',
         {"a_bucket"}),
        ("histogram_quantile(0.99, sum without (instance) (rate(b_bucket[5m]))) > 0.5",
         {"b_bucket"}),
        ('up{job="j"} == 0 or absent(up{job="j"})', {"up"}),
        ("x / on (system) group_left y and z offset 5m unless bool w", {"x", "y", "z", "w"}),
    ])
    def test_it_finds_the_metric_names(self, expr, names):
        assert metric_names(expr) == names

    def test_a_renamed_metric_is_not_exported(self, exported_series):
        renamed = metric_names("rate(serviceorchestration_request_total[5m])")
        assert not renamed <= exported_series | PROMETHEUS_SERIES
