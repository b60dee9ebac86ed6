"""The Kubernetes manifests (deploy/kubernetes/; docs/deployment.md, "Kubernetes") are valid
for the Kubernetes versions they are written for (kubernetes-validate's schemas, strict: an
unknown field is an error; no cluster, no network), and the README's processes: each
Deployment runs its make target's steps (those the image's build has not run), with
documented settings the settings accept, probes on the health endpoints, as a non-root user
with resources for the memory docs/performance.md measured."""
import re
import secrets
from functools import cache
from pathlib import Path

import kubernetes_validate
import pytest
import yaml
from django.test import Client, override_settings
from django.urls import resolve

from tests.deployment_files import (
    PROCESSES,
    Step,
    check,
    command_step,
    dockerfile,
    documented_settings,
    image_steps,
    makefile,
)
from tests.test_deployment_units import unit_name, value
from tests.worker import ROOT

MANIFESTS = ROOT / "deploy" / "kubernetes"
KUSTOMIZATION = MANIFESTS / "kustomization.yaml"
# Not in the kustomization's resources: placeholders that would overwrite the operator's
# Secret, and the MQTT interface, which is wanted only sometimes (docs/deployment.md).
NOT_KUSTOMIZED = {"secret.example.yaml": "", "mqtt-api.yaml": "# - mqtt-api.yaml"}
PROMETHEUS = ROOT / "deploy" / "monitoring" / "prometheus-kubernetes.yml"
# What the downward API gives the web's POD_IP, for the checks.
POD_IP = "10.1.2.3"
# The oldest version they are written for and the newest the validator ships.
KUBERNETES_VERSIONS = ("1.30.0", "1.37.0")
NAME = "serviceorchestration"
# A web, MQTT interface or Celery process with a large catalog holds up to this much
# (docs/performance.md, "The snapshot's memory": 198 MiB at 901 000 rules); the gunicorn
# master, nginx or Celery's own process beside them take about this much more.
PROCESS_MIB, BESIDE_MIB = 200, 128
ECHO, HEALTH = "/serviceorchestration/monitor/echo", "/serviceorchestration/monitor/health"


def manifests() -> list[Path]:
    """The files of resources: every YAML file but the kustomization, which is none."""
    return [path for path in sorted(MANIFESTS.glob("*.yaml")) if path != KUSTOMIZATION]


@cache
def documents() -> dict[tuple[str, str], dict]:
    """(kind, name) → the resource, from every file."""
    found = {}
    for path in manifests():
        for document in yaml.safe_load_all(path.read_text()):
            found[document["kind"], document["metadata"]["name"]] = document
    return found


def deployment(process: str) -> dict:
    return documents()["Deployment", f"{NAME}-{process}"]


def pod(process: str) -> dict:
    return deployment(process)["spec"]["template"]["spec"]


def container(process: str) -> dict:
    [only] = pod(process)["containers"]
    return only


def config_map() -> dict[str, str]:
    return documents()["ConfigMap", NAME]["data"]


def secret() -> dict[str, str]:
    return documents()["Secret", NAME]["stringData"]


def expand(text: str, env: dict[str, str]) -> str:
    """$(NAME) as the kubelet expands it, from the variables defined before."""
    return re.sub(r"\$\((\w+)\)", lambda match: env[match[1]], text)


def environment(process: str, of: dict | None = None) -> dict[str, str]:
    """A container's environment as the kubelet builds it: the ConfigMap's and the Secret's
    (envFrom), then its own in order, each value's $(NAME) expanded from those before it."""
    of = of or container(process)
    assert of["envFrom"] == [{"configMapRef": {"name": NAME}}, {"secretRef": {"name": NAME}}]
    env = {**config_map(), **secret()}
    for variable in of.get("env", []):
        if "valueFrom" in variable:
            assert variable["valueFrom"] == {"fieldRef": {"fieldPath": "status.podIP"}}
            env[variable["name"]] = POD_IP
        else:
            env[variable["name"]] = expand(variable["value"], env)
    return env


def pod_steps(process: str) -> list[Step]:
    """The commands of the init containers, then the container's, with $(NAME) expanded from
    the container's environment as the kubelet does."""
    steps = []
    for each in pod(process).get("initContainers", []) + [container(process)]:
        env = environment(process, each)
        words = [expand(word, env) for word in each["command"]]
        steps.append(command_step(words))
    return steps


def mebibytes(quantity: str) -> int:
    number, unit = re.fullmatch(r"(\d+)(Mi|Gi)", quantity).groups()
    return int(number) * (1024 if unit == "Gi" else 1)


class ValidityTests:
    @pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
    def test_every_manifest_is_valid_for_the_kubernetes_versions_strictly(self, version):
        assert len(documents()) == len(PROCESSES) + 3  # the Service, ConfigMap and Secret
        for (kind, name), document in documents().items():
            try:
                kubernetes_validate.validate(document, version, strict=True)
            except kubernetes_validate.ValidationError as error:
                pytest.fail(f"{kind} {name} at {list(error.path)}: {error.message}")

    def test_the_validator_refuses_what_kubernetes_would(self):
        """The check above is real: a misspelt field and a wrong type are errors."""
        web = deployment("web")
        misspelt = {**web, "spec": {**web["spec"], "replica": 2}}
        wrong_type = {**web, "spec": {**web["spec"], "replicas": "two"}}
        for document in (misspelt, wrong_type):
            with pytest.raises(kubernetes_validate.ValidationError):
                kubernetes_validate.validate(document, KUBERNETES_VERSIONS[0], strict=True)


class ProcessesTests:
    def test_each_deployment_runs_its_make_targets_steps(self):
        """In the same order; the target's other steps are the image's (collectstatic, var/):
        nothing is added and nothing is left out."""
        assert {name for kind, name in documents() if kind == "Deployment"} == {
            f"{NAME}-{process}" for process in PROCESSES}
        for process, target in PROCESSES.items():
            steps, recipe = pod_steps(process), makefile()[1][target]
            assert [step for step in recipe if step in steps] == steps, process
            assert [step for step in recipe if step not in steps + image_steps()] == [], \
                process

    def test_the_web_runs_the_images_command_and_migrates_first(self):
        """Migrations as init containers of the pods that migrate with make (docs/decisions.md):
        web and the MQTT interface."""
        assert pod_steps("web")[-1] == image_steps()[-1]
        for process in PROCESSES:
            init = [each["name"] for each in pod(process).get("initContainers", [])]
            assert init == (["ensure-database", "migrate"] if process in ("web", "mqtt-api")
                            else []), process

    def test_one_beat_and_workers_replaced_not_overlapped(self):
        """Two beats would send every periodic task twice; old and new workers do not
        consume the queues at once during an upgrade (docs/operations.md, "Upgrades")."""
        for process in ("beat", "worker", "worker-http"):
            assert deployment(process)["spec"]["strategy"] == {"type": "Recreate"}, process
        assert deployment("beat")["spec"]["replicas"] == 1

    def test_they_run_the_image_of_this_version(self):
        version = (ROOT / "VERSION").read_text().strip()
        images = {each["image"] for process in PROCESSES
                  for each in pod(process).get("initContainers", []) + [container(process)]}
        assert {image.rpartition(":")[2] for image in images} == {version}
        assert len(images) == 1

    def test_each_stops_within_the_time_its_systemd_unit_gives_it(self):
        for process in PROCESSES:
            assert pod(process)["terminationGracePeriodSeconds"] == \
                int(value(unit_name(process), "Service", "TimeoutStopSec")), process


class SettingsTests:
    def test_every_variable_they_set_is_a_documented_setting(self):
        """But the web's POD_IP, which is only a part of its ALLOWED_HOSTS."""
        for process in PROCESSES:
            extra = set(environment(process)) - documented_settings()
            assert extra == ({"POD_IP"} if process == "web" else set()), process
        [own] = [variable for variable in container("web")["env"]
                 if variable["name"] == "ALLOWED_HOSTS"]
        assert own["value"] == "$(ALLOWED_HOSTS),$(POD_IP)"
        assert "MQTT_API_ENABLED" not in config_map()
        assert environment("mqtt-api")["MQTT_API_ENABLED"] == "true"

    def test_the_secret_holds_placeholders_marked_as_such(self):
        assert set(secret()) == {"SECRET_KEY", "DATABASE_URL", "CELERY_BROKER_URL",
                                 "MQTT_BROKER_URL"}
        assert all("CHANGE-ME" in each for each in secret().values())
        assert (MANIFESTS / "secret.example.yaml").read_text().startswith(
            "# PLACEHOLDERS, NOT SECRETS")
        assert not set(secret()) & set(config_map())

    def test_the_settings_accept_each_containers_environment(self):
        for process in PROCESSES:
            env = {**environment(process), "SECRET_KEY": "a key of the operator's"}
            result = check(env)
            assert result.returncode == 0, (process, result.stderr[-3000:])

    def test_check_deploy_is_clean_for_the_web(self):
        env = {**environment("web"), "SECRET_KEY": secrets.token_urlsafe(50)}
        result = check(env, "--deploy", "--fail-level", "WARNING")
        assert result.returncode == 0, result.stderr[-3000:]
        assert result.stdout.startswith("System check identified no issues"), result.stdout


class WebTests:
    def test_the_service_reaches_the_web_pods_port(self):
        service = documents()["Service", NAME]["spec"]
        assert service["selector"] == deployment("web")["spec"]["selector"]["matchLabels"]
        [port] = service["ports"]
        [container_port] = container("web")["ports"]
        assert port["targetPort"] == container_port["name"] == "https"
        assert port["port"] == container_port["containerPort"] == \
            int(config_map()["PORT"])

    def test_probes_ask_the_health_endpoints_over_https(self):
        """docs/operations.md, "Health": liveness on echo, readiness on health."""
        web = container("web")
        probes = {kind: web[kind]["httpGet"] for kind in
                  ("startupProbe", "livenessProbe", "readinessProbe")}
        assert {kind: probe["path"] for kind, probe in probes.items()} == {
            "startupProbe": ECHO, "livenessProbe": ECHO, "readinessProbe": HEALTH}
        operations = (ROOT / "docs" / "operations.md").read_text()
        assert f"`GET {ECHO}` | 200 `Got it!` while the process serves HTTP | liveness" \
            in operations
        assert f"`GET {HEALTH}` | 200 when every dependency answers, else 503 | readiness" \
            in operations
        assert resolve(ECHO) and resolve(HEALTH)
        # The web serves HTTPS only (TLS_CERT_FILE), from the certificate it mounts.
        env = environment("web")
        assert all(probe["scheme"] == "HTTPS" and probe["port"] == "https"
                   for probe in probes.values())
        mounts = {mount["name"]: mount["mountPath"] for mount in web["volumeMounts"]}
        assert Path(env["TLS_CERT_FILE"]).parent == Path(env["TLS_KEY_FILE"]).parent == \
            Path(mounts["certs"])
        assert web["readinessProbe"]["timeoutSeconds"] > 3  # HEALTH_TIMEOUT_SECONDS

    @pytest.mark.django_db
    def test_the_probes_host_is_allowed_and_the_kubelets_default_would_not_be(self):
        """The kubelet sends the pod's address as Host unless told otherwise: with the
        ConfigMap's ALLOWED_HOSTS that would be refused 400, so the probes name localhost."""
        allowed = config_map()["ALLOWED_HOSTS"].split(",")
        [header] = container("web")["livenessProbe"]["httpGet"]["httpHeaders"]
        assert header["name"] == "Host"
        with override_settings(ALLOWED_HOSTS=allowed):
            answer = Client().get(ECHO, HTTP_HOST=header["value"])
            assert (answer.status_code, answer.content) == (200, b"Got it!")
            assert Client().get(ECHO, HTTP_HOST=f"{POD_IP}:8465").status_code == 400

    @pytest.mark.django_db
    def test_prometheus_may_scrape_each_pod_at_its_address(self):
        """Prometheus sends the pod's address as Host (it scrapes the pod, not the Service):
        the web pod's ALLOWED_HOSTS adds it to the ConfigMap's; another address is still
        refused."""
        allowed = environment("web")["ALLOWED_HOSTS"].split(",")
        assert allowed == config_map()["ALLOWED_HOSTS"].split(",") + [POD_IP]
        with override_settings(ALLOWED_HOSTS=allowed, METRICS_ENABLED=True, METRICS_TOKEN=""):
            assert Client().get("/metrics", HTTP_HOST=f"{POD_IP}:8465").status_code == 200
            assert Client().get("/metrics", HTTP_HOST="10.9.9.9:8465").status_code == 400

    def test_prometheus_finds_the_web_pods_port_and_no_other_pod(self):
        """prometheus-kubernetes.yml keeps the targets whose pod labels and port name match
        its regex: those of web.yaml's pods, not the workers', beat's or the MQTT
        interface's. It verifies the certificate against the Service's name."""
        [job] = yaml.safe_load(PROMETHEUS.read_text())["scrape_configs"]
        [keep] = [rule for rule in job["relabel_configs"] if rule.get("action") == "keep"]
        prefix = "__meta_kubernetes_pod_label_"

        def kept(process: str, port: str) -> bool:
            labels = deployment(process)["spec"]["template"]["metadata"]["labels"]
            meta = {f"{prefix}{re.sub(r'[^A-Za-z0-9_]', '_', key)}": value
                    for key, value in labels.items()}
            meta["__meta_kubernetes_pod_container_port_name"] = port
            joined = ";".join(meta.get(label, "") for label in keep["source_labels"])
            return re.fullmatch(keep["regex"], joined) is not None

        [port] = container("web")["ports"]
        assert kept("web", port["name"])
        assert not kept("web", "metrics")
        for process in set(PROCESSES) - {"web"}:
            assert "ports" not in container(process), process
            assert not kept(process, port["name"]), process
        assert job["scheme"] == container("web")["readinessProbe"]["httpGet"]["scheme"].lower()
        assert job["tls_config"]["server_name"].split(".")[:1] == [NAME]
        assert job["tls_config"]["server_name"].endswith(".svc")
        assert documents()["Service", NAME]["metadata"]["name"] == NAME


class SecurityAndResourcesTests:
    def test_every_container_runs_as_the_images_user_without_privileges(self):
        runs = " ".join(arguments for instruction, arguments in dockerfile()
                        if instruction == "RUN")
        uid = int(re.search(r"useradd [^&]*--uid (\d+) app", runs)[1])
        for process in PROCESSES:
            context = pod(process)["securityContext"]
            assert context["runAsNonRoot"] is True and context["runAsUser"] == uid, process
            assert context["seccompProfile"] == {"type": "RuntimeDefault"}, process
            for each in pod(process).get("initContainers", []) + [container(process)]:
                assert each["securityContext"] == {
                    "allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                    "capabilities": {"drop": ["ALL"]}}, (process, each["name"])

    def test_what_the_read_only_image_lets_each_process_write(self):
        """/tmp (gunicorn's worker files, the snapshot's load lock), nginx's folder for the
        web (var/nginx-<PORT>, config/front.py), var/ for beat's schedule."""
        port = config_map()["PORT"]
        writable = {process: {mount["mountPath"] for mount in container(process)["volumeMounts"]
                              if not mount.get("readOnly")} for process in PROCESSES}
        assert writable == {"web": {"/tmp", f"/app/var/nginx-{port}", "/app/var/metrics"},
                            "beat": {"/tmp", "/app/var"},
                            "worker": {"/tmp"}, "worker-http": {"/tmp"}, "mqtt-api": {"/tmp"}}

    def test_memory_limits_hold_the_measured_processes(self):
        """docs/performance.md's figure per process that holds a pull snapshot, times the
        processes a pod runs (set in it: a container sees the node's cores)."""
        assert "≤ 200 MiB per process" in (ROOT / "docs" / "performance.md").read_text()
        processes = {"web": int(environment("web")["WEB_CONCURRENCY"]),
                     "worker": int(environment("worker")["WORKER_CONCURRENCY"]),
                     "mqtt-api": 1}
        for process in PROCESSES:
            for each in pod(process).get("initContainers", []) + [container(process)]:
                resources = each["resources"]
                assert set(resources) == {"requests", "limits"}, process
                assert mebibytes(resources["requests"]["memory"]) <= \
                    mebibytes(resources["limits"]["memory"]), process
            limit = mebibytes(container(process)["resources"]["limits"]["memory"])
            assert limit >= processes.get(process, 0) * PROCESS_MIB + BESIDE_MIB, process


class KustomizationTests:
    """`kubectl apply -k deploy/kubernetes` (docs/deployment.md, "Kubernetes")."""

    def kustomization(self) -> dict:
        return yaml.safe_load(KUSTOMIZATION.read_text())

    def test_it_lists_every_manifest_but_the_secrets_placeholders_and_the_mqtt_interface(self):
        found = self.kustomization()
        assert (found["apiVersion"], found["kind"]) == (
            "kustomize.config.k8s.io/v1beta1", "Kustomization")
        assert sorted(found["resources"]) == sorted(
            path.name for path in manifests() if path.name not in NOT_KUSTOMIZED)
        lines = KUSTOMIZATION.read_text().splitlines()
        for name, commented in NOT_KUSTOMIZED.items():
            assert any(name in line for line in lines if line.startswith("#")), name
            assert not commented or f"  {commented}" in lines, name
        assert "namespace" not in found  # the user's (docs/deployment.md)

    def test_its_image_entry_sets_the_image_of_every_container_to_this_version(self):
        """kustomize replaces each image whose name is the entry's: so every container's
        image must be that name, and the entry's new name and tag this VERSION's."""
        [entry] = self.kustomization()["images"]
        version = (ROOT / "VERSION").read_text().strip()
        images = {each["image"] for process in PROCESSES
                  for each in pod(process).get("initContainers", []) + [container(process)]}
        assert images == {f"{entry['name']}:{version}"}
        assert (entry["newName"], entry["newTag"]) == (entry["name"], version)
