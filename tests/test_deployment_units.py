"""The systemd units (deploy/systemd/; docs/deployment.md, "systemd units") are the README's
processes, not a second recipe: each unit runs its make target's steps, its environment file
holds documented settings the settings accept, and `systemd-analyze` finds nothing wrong in
them as they are installed (with the install prefix pointing at this checkout, whose
`.venv` has the programs they start)."""
import re
import secrets
import shlex
import subprocess
from functools import cache
from pathlib import Path

from django.conf import settings

from tests.deployment_files import (
    PROCESSES,
    Step,
    check,
    command_step,
    documented_settings,
    env_file,
    makefile,
)
from tests.private_servers import find_binary
from tests.worker import ROOT

UNITS = ROOT / "deploy" / "systemd"
PREFIX = "/opt/serviceorchestration"
ENVIRONMENT_FILE = "/etc/serviceorchestration/serviceorchestration.env"
EXAMPLE = UNITS / "serviceorchestration.env.example"
TARGET = "serviceorchestration.target"
# What every unit holds alike: who runs it, where, with which settings, how it is
# restarted, and its hardening.
SHARED = ("User", "Group", "WorkingDirectory", "EnvironmentFile", "KillSignal", "KillMode",
          "Restart", "RestartSec", "NoNewPrivileges", "CapabilityBoundingSet",
          "ProtectSystem", "ReadWritePaths", "ProtectHome", "PrivateTmp", "PrivateDevices",
          "ProtectKernelTunables", "ProtectKernelModules", "ProtectKernelLogs",
          "ProtectControlGroups", "ProtectClock", "ProtectHostname", "ProtectProc",
          "RestrictAddressFamilies", "RestrictNamespaces", "PrivateMounts", "RestrictRealtime",
          "RestrictSUIDSGID", "LockPersonality", "RemoveIPC", "SystemCallArchitectures",
          "SystemCallFilter", "SystemCallErrorNumber", "UMask")


def unit_name(process: str) -> str:
    return f"serviceorchestration-{process}.service"


@cache
def unit(name: str) -> dict[str, list[tuple[str, str]]]:
    """Section → its (key, value) lines in order (keys such as ExecStartPre repeat)."""
    sections, section = {}, None
    for line in (UNITS / name).read_text().splitlines():
        line = line.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            section = line.strip("[]")
            sections[section] = []
        else:
            key, value = line.split("=", 1)
            sections[section].append((key, value))
    return sections


def values(name: str, section: str, key: str) -> list[str]:
    return [value for found, value in unit(name)[section] if found == key]


def value(name: str, section: str, key: str) -> str:
    [found] = values(name, section, key)
    return found


def unit_environment(name: str, environment_file: dict[str, str]) -> dict[str, str]:
    """The process's environment as systemd builds it: the unit's Environment=, overridden by
    its EnvironmentFile=."""
    own = dict(pair.split("=", 1) for line in values(name, "Service", "Environment")
               for pair in shlex.split(line))
    return {**own, **environment_file}


def unit_steps(name: str, environment_file: dict[str, str]) -> list[Step]:
    """ExecStartPre= then ExecStart=, as systemd runs them: `%%` is `%`, ${NAME} the
    environment's."""
    environment = unit_environment(name, environment_file)
    lines = values(name, "Service", "ExecStartPre") + values(name, "Service", "ExecStart")
    steps = []
    for line in lines:
        # A lone % is a systemd specifier (%h: the user's home), not what make passes on.
        assert re.fullmatch(r"(?:[^%]|%%)*", line), f"{name}: a % not written %%: {line}"
        line = re.sub(r"\$\{(\w+)\}", lambda match: environment[match[1]], line)
        steps.append(command_step(shlex.split(line.replace("%%", "%"))))
    return steps


def rendered(folder: Path, prefix: Path) -> list[Path]:
    """The units as installed with `prefix` for the install prefix and the example for the
    environment file; their paths."""
    paths = []
    for source in sorted(UNITS.glob("serviceorchestration*")):
        if source.suffix in (".service", ".target"):
            text = source.read_text().replace(PREFIX, str(prefix))
            (folder / source.name).write_text(text.replace(ENVIRONMENT_FILE, str(EXAMPLE)))
            paths.append(folder / source.name)
    return paths


def systemd_analyze() -> str:
    found = find_binary("systemd-analyze")
    assert found, "systemd-analyze is missing: `make test` installs it (package systemd)"
    return found


class UnitsTests:
    def test_there_is_a_unit_for_each_process_and_a_target(self):
        names = {path.name for path in UNITS.iterdir()}
        assert names == {unit_name(process) for process in PROCESSES} | {
            TARGET, EXAMPLE.name}

    def test_each_unit_runs_its_make_targets_steps(self):
        """All of them, in the same order, with the Makefile's defaults: those the units set
        themselves and those of the environment file, which overrides them."""
        example = env_file(EXAMPLE)
        for process, target in PROCESSES.items():
            recipe = makefile()[1][target]
            assert unit_steps(unit_name(process), {}) == recipe, process
            assert unit_steps(unit_name(process), example) == recipe, process

    def test_they_start_the_checkouts_programs_under_the_install_prefix(self):
        for process in PROCESSES:
            name = unit_name(process)
            assert value(name, "Service", "WorkingDirectory") == PREFIX
            for line in values(name, "Service", "ExecStartPre") + values(name, "Service",
                                                                         "ExecStart"):
                words = shlex.split(line)
                programs = [words[0]] + [word for word in words if word.endswith("/celery")]
                for program in programs:
                    assert program.startswith(f"{PREFIX}/.venv/bin/") or \
                        program == "/usr/bin/mkdir", (name, program)
                    if program.startswith(PREFIX):
                        local = ROOT / program.removeprefix(f"{PREFIX}/")
                        assert local.is_file(), local

    def test_they_share_their_user_settings_restart_and_hardening(self):
        """One block, the same in each unit: a change to one is a change to all."""
        web = unit(unit_name("web"))["Service"]
        shared = [(key, found) for key, found in web if key in SHARED]
        assert [key for key, _ in shared] == list(SHARED)
        for process in PROCESSES:
            service = unit(unit_name(process))["Service"]
            assert [(key, found) for key, found in service if key in SHARED] == shared, process
        assert dict(shared) | {
            "User": "serviceorchestration", "EnvironmentFile": ENVIRONMENT_FILE,
            "Restart": "on-failure", "KillSignal": "SIGTERM", "KillMode": "mixed",
            "NoNewPrivileges": "yes", "ProtectSystem": "strict", "PrivateTmp": "yes",
            "ReadWritePaths": f"{PREFIX}/var", "CapabilityBoundingSet": ""} == dict(shared)

    def test_each_process_has_its_own_stop_time(self):
        """The web's covers its graceful stop: the workers' requests, then nginx's, then the
        revocation of its registrations (config/gunicorn.py)."""
        stop = {process: int(value(unit_name(process), "Service", "TimeoutStopSec"))
                for process in PROCESSES}
        assert stop["web"] >= 2 * settings.SERVER_GRACEFUL_TIMEOUT_SECONDS + \
            settings.SERVICE_REGISTRY_REVOKE_SECONDS
        assert min(stop.values()) >= 30
        assert value(unit_name("web"), "Service", "Type") == "notify"  # gunicorn tells

    def test_the_target_groups_them_and_starts_with_the_machine(self):
        assert values(TARGET, "Install", "WantedBy") == ["multi-user.target"]
        for process in PROCESSES:
            name = unit_name(process)
            assert values(name, "Unit", "PartOf") == [TARGET]
            assert values(name, "Install", "WantedBy") == [TARGET]

    def test_the_celery_units_start_after_the_web_which_migrates(self):
        """Starting the target runs `migrate` (the web's ExecStartPre=) before any task: the
        workers and beat wait until the web is started (Type=notify: it serves, so it has
        migrated). An order, no dependency: restarting a worker alone, or starting it on a host
        without the web, starts nothing else and waits for nothing. The MQTT interface
        migrates itself (one process at a time) and needs no order."""
        web = unit_name("web")
        migrates = {process for process in PROCESSES
                    if ("python", "manage.py", "migrate", "--noinput") in unit_steps(
                        unit_name(process), {})}
        assert migrates == {"web", "mqtt-api"}
        for process in PROCESSES:
            name = unit_name(process)
            after = " ".join(values(name, "Unit", "After")).split()
            assert (web in after) == (process not in migrates), process
            for dependency in ("Wants", "Requires", "Requisite", "BindsTo", "PartOf"):
                assert web not in " ".join(values(name, "Unit", dependency)), (name, dependency)

    def test_systemd_analyze_verify_finds_nothing_in_them(self, tmp_path):
        """As installed on a machine where the prefix holds the checkout and its .venv (here:
        this checkout): no warning, no error."""
        paths = rendered(tmp_path, ROOT)
        result = subprocess.run([systemd_analyze(), "verify", *map(str, paths)],
                                capture_output=True, text=True, timeout=120)
        assert (result.returncode, result.stderr, result.stdout) == (0, "", "")

    def test_systemd_analyze_verify_does_look_at_the_programs(self, tmp_path):
        """The check above is real: without the install (no .venv under the prefix) verify
        names each program it cannot find."""
        empty = tmp_path / "prefix"
        empty.mkdir()
        paths = rendered(tmp_path, empty)
        result = subprocess.run([systemd_analyze(), "verify", *map(str, paths)],
                                capture_output=True, text=True, timeout=120)
        assert result.returncode != 0
        assert f"Command {empty}/.venv/bin/python is not executable" in result.stderr
        assert f"Command {empty}/.venv/bin/gunicorn is not executable" in result.stderr

    def test_systemd_rates_their_exposure_low(self, tmp_path):
        """`systemd-analyze security` scores what a unit's process may do, from 0 (nothing) to
        10 (unrestricted); each unit stays at 2 or below ("OK")."""
        for path in rendered(tmp_path, ROOT):
            if path.suffix != ".service":
                continue
            result = subprocess.run([systemd_analyze(), "security", "--offline=true",
                                     "--threshold=20", "--no-pager", str(path)],
                                    capture_output=True, text=True, timeout=120)
            assert result.returncode == 0, result.stderr
            score = re.search(r"Overall exposure level for \S+: (\d+\.\d) OK", result.stdout)
            assert score and float(score[1]) <= 2.0, result.stdout[-500:]


class EnvironmentFileTests:
    def test_it_sets_documented_settings_with_placeholders_for_the_secrets(self):
        example = env_file(EXAMPLE)
        assert set(example) - documented_settings() == set()
        assert {"DATABASE_URL", "CELERY_BROKER_URL", "MQTT_BROKER_URL", "SECRET_KEY", "HOST",
                "AUTHENTICATION_POLICY", "TLS_CERT_FILE", "TLS_KEY_FILE"} <= set(example)
        assert example["SECRET_KEY"] == "CHANGE-ME"
        assert "CHANGE-ME@" in example["DATABASE_URL"]
        assert "CHANGE-ME@" in example["MQTT_BROKER_URL"]
        # The example host name is to be replaced too ("edit every CHANGE-ME").
        assert "CHANGE-ME" in example["ALLOWED_HOSTS"]
        assert "localhost" in example["ALLOWED_HOSTS"].split(",")
        # The MQTT interface's unit sets it; here it would override that (and reach all).
        assert "MQTT_API_ENABLED" not in example
        for process in PROCESSES:
            own = unit_environment(unit_name(process), {})
            assert set(own) - documented_settings() == set(), process

    def test_check_deploy_is_clean_for_it_and_each_units_environment_passes_check(self):
        example = {**env_file(EXAMPLE), "SECRET_KEY": secrets.token_urlsafe(50)}
        result = check(example, "--deploy", "--fail-level", "WARNING")
        assert result.returncode == 0, result.stderr[-3000:]
        assert result.stdout.startswith("System check identified no issues"), result.stdout
        for process in PROCESSES:
            result = check(unit_environment(unit_name(process), example))
            assert result.returncode == 0, (process, result.stderr[-3000:])
