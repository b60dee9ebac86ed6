"""What the deployment files are held to, read from the repository: the Makefile's targets and
their steps, the Procfile, the Dockerfile, the README's settings table, and a settings check
of an environment. tests/test_deployment_files.py (Procfile, Dockerfile, compose.yaml),
tests/test_deployment_units.py (systemd) and tests/test_deployment_kubernetes.py hold each
file to them."""
import json
import os
import re
import shlex
import subprocess
import sys
from functools import cache
from pathlib import Path

from tests.worker import ROOT

VENV_BIN = Path(sys.executable).parent
STANDARD_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# The process each make target runs (`make worker` is worker-main and worker-http), by the
# name of its compose service, systemd unit (serviceorchestration-<name>) and Deployment.
PROCESSES = {"web": "run", "worker": "worker-main", "worker-http": "worker-http",
             "beat": "beat", "mqtt-api": "mqtt-api"}

Step = tuple[str, ...]  # one command: program (without its directory) and arguments


KEEP_RUNNING = ("python", "-m", "config.keep_running", "--")


def command_step(words: list[str]) -> Step:
    """The command without directories of programs: its own, and the one config.keep_running
    runs."""
    words = words[1:] if words[0] == "exec" else words
    step = (Path(words[0]).name, *words[1:])
    if step[:len(KEEP_RUNNING)] == KEEP_RUNNING and len(step) > len(KEEP_RUNNING):
        return (*KEEP_RUNNING, *command_step(list(step[len(KEEP_RUNNING):])))
    return step


def shell_steps(script: str) -> list[Step]:
    return [command_step(shlex.split(part)) for part in script.split("&&")]


@cache
def makefile() -> tuple[dict[str, str], dict[str, list[Step]]]:
    """The Makefile's variables and each target's steps, with variables at their defaults."""
    variables, recipes, target = {"MAKE": "make"}, {}, None
    for line in (ROOT / "Makefile").read_text().replace("\\\n", " ").splitlines():
        if line.startswith("\t") and target:
            recipes[target].append(line.strip())
        elif match := re.match(r"([A-Z_]+) *[:?]?= *(.*)", line):
            variables[match[1]] = match[2].strip()
        elif match := re.match(r"([a-z][a-z-]*):", line):
            target = match[1]
            recipes[target] = []
        else:
            target = None

    def expand(text: str) -> str:
        return re.sub(r"\$\((\w+)\)", lambda name: expand(variables.get(name[1], "")), text)

    return variables, {name: [command_step(shlex.split(expand(line))) for line in lines]
                       for name, lines in recipes.items()}


def leaf_targets(target: str) -> set[str]:
    """The targets whose steps `make target` runs, through its sub-makes."""
    recipe = makefile()[1][target]
    sub_makes = [step for step in recipe if step[0] == "make"]
    if not sub_makes:
        return {target}
    return {leaf for step in sub_makes for word in step[1:] if not word.startswith("-")
            for leaf in leaf_targets(word)}


@cache
def procfile() -> dict[str, str]:
    lines = (ROOT / "Procfile").read_text().splitlines()
    return dict(line.split(": ", 1) for line in lines if line and not line.startswith("#"))


@cache
def dockerfile() -> list[tuple[str, str]]:
    """(instruction, arguments) pairs."""
    text = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    lines = [line for line in text.splitlines() if line.strip() and not line.startswith("#")]
    return [tuple(line.split(" ", 1)) for line in lines]


def image_steps() -> list[Step]:
    """What building the image runs, then its default command."""
    steps = [step for instruction, arguments in dockerfile() if instruction == "RUN"
             for step in shell_steps(arguments)]
    return steps + [command_step(json.loads(arguments))
                    for instruction, arguments in dockerfile() if instruction == "CMD"]


@cache
def documented_settings() -> set[str]:
    """The names in the first column of the README's settings table."""
    names = set()
    for line in (ROOT / "README.md").read_text().splitlines():
        if line.startswith("| `"):
            names.update(re.findall(r"`([A-Z][A-Z0-9_]*)`", line.split("|")[1]))
    return names


def image_environment() -> dict[str, str]:
    return dict(pair.split("=", 1) for instruction, arguments in dockerfile()
                if instruction == "ENV" for pair in shlex.split(arguments))


def env_file(path: Path) -> dict[str, str]:
    """NAME=value lines, as systemd's EnvironmentFile= and compose's .env read them."""
    lines = [line.strip() for line in path.read_text().splitlines()]
    return dict(line.split("=", 1) for line in lines if line and not line.startswith("#"))


def check(environment: dict[str, str], *options: str) -> subprocess.CompletedProcess:
    """`manage.py check` with `environment` (the settings' start-up checks; they connect to
    nothing) over this process's variables that are not settings."""
    documented = documented_settings()
    outside = {name: value for name, value in os.environ.items() if name not in documented}
    return subprocess.run([sys.executable, "manage.py", "check", *options], cwd=ROOT,
                          capture_output=True, text=True, timeout=120,
                          env={**outside, **environment})
