"""Mutation check of the core modules: small changes (mutants) are made to one module at a time
and the fast tests that exercise it are run; a mutant that no test notices has *survived*.

    .venv/bin/python bench/mutation_check.py [--module store/metadata_requirements.py] [--jobs 2]

`make mutation` (optionally `MODULE=...`) runs it. The tree is copied to a scratch directory
(`--workdir`, one copy per job) and only the copies are mutated, so tests run meanwhile in the
working tree are not disturbed. Each job has its own PostgreSQL database (`so_mutation_<job>`,
kept between runs with `--reuse-db`); Redis and the MQTT broker are the local ones.

The mutator is ours (ast-based, about what mutmut does): it flips comparisons, `and`/`or`,
`+`/`-` and `*`/`/`, drops `not`, changes constants (booleans, numbers, strings outside error
messages) and removes call statements. It prints killed/survived/timeout counts per module and
each survivor as `file:line  mutation`; docs/testing.md ("Mutation check") lists the survivors
of the last run that are kept on purpose, with the reason.
"""
import argparse
import ast
import copy
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The fast test files of subscriptions/services/ (one module until issue 30 split it by role).
_SUBSCRIPTION_SERVICE_TESTS = [
    "tests/subscriptions/test_subscribe_api.py",
    "tests/subscriptions/test_push_subscribe_api.py",
    "tests/subscriptions/test_push_unsubscribe_api.py",
    "tests/subscriptions/test_push_trigger_api.py",
    "tests/subscriptions/test_subscription_query_api.py",
    "tests/subscriptions/test_push_query_api.py",
    "tests/subscriptions/test_subscription_upsert.py",
    "tests/subscriptions/test_notify_targets.py",
    "tests/subscriptions/test_batch_evaluation.py",
    "tests/subscriptions/test_automatic_push.py",
    "tests/subscriptions/test_subscription_concurrency.py",
    "tests/subscriptions/test_notify_topic_ownership.py",  # the topic check in the upsert
    "tests/subscriptions/test_services_mutants.py",
    "tests/subscriptions/test_subscription_admin.py",  # push now: the forced evaluation
    "tests/serviceregistry/test_pull_lookup_api.py",
]

# The pull test files: each runs on both sources of pull, the database and the snapshot
# (tests/pull_sources.py; `--pull-sources` picks one).
_PULL_TESTS = [
    "tests/orchestration/test_pull_catalog_api.py",
    "tests/orchestration/test_pull_rules_api.py",
    "tests/orchestration/test_pull_java_api.py",
    "tests/orchestration/test_pull_blacklist_api.py",
    "tests/orchestration/test_pull_tokens_qos_api.py",
    "tests/orchestration/test_pull_exclusivity_api.py",
    "tests/orchestration/test_pull_qos_edges_api.py",
    "tests/orchestration/test_pull_snapshot.py",
    "tests/orchestration/test_pull_mutants.py",
]

# Module → the fast test files that exercise it (found with grep on the module's callers).
MODULES: dict[str, list[str]] = {
    "store/metadata_requirements.py": [
        "tests/store/test_metadata_requirements.py",
        "tests/store/test_metadata_requirements_mutants.py",
    ],
    "orchestration/pull/matching.py": [
        "tests/orchestration/test_matching.py",
        "tests/orchestration/test_pull_catalog_api.py",
        "tests/orchestration/test_pull_rules_api.py",
        "tests/orchestration/test_pull_java_api.py",
    ],
    "store/services/rules.py": [
        "tests/store/test_rule_create_api.py",
        "tests/store/test_rule_modify_priorities_api.py",
        "tests/store/test_rule_query_api.py",
        "tests/store/test_rule_remove_api.py",
        "tests/store/test_rule_edges_api.py",
        "tests/store/test_rule_services_mutants.py",
    ],
    "orchestration/pull/services.py": _PULL_TESTS,
    "orchestration/pull/selectors.py": _PULL_TESTS,
    "subscriptions/services/subscribing.py": _SUBSCRIPTION_SERVICE_TESTS,
    "subscriptions/services/evaluation.py": _SUBSCRIPTION_SERVICE_TESTS,
    "subscriptions/services/pushing.py": _SUBSCRIPTION_SERVICE_TESTS,
}

SERVICES = {
    "CELERY_BROKER_URL": "redis://127.0.0.1:6379/11",
    "MQTT_BROKER_URL": "mqtt://127.0.0.1:1883",
}
DATABASE = "postgres://postgres@127.0.0.1:5432/so_mutation_{job}"
COPY_EXCLUDES = {".git", ".venv", "var", "__pycache__", ".pytest_cache", "node_modules"}


# --- mutants -------------------------------------------------------------------------------

_COMPARE = {ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Lt: ast.LtE, ast.LtE: ast.Lt,
            ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.In: ast.NotIn, ast.NotIn: ast.In,
            ast.Is: ast.IsNot, ast.IsNot: ast.Is}
_BINARY = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult,
           ast.FloorDiv: ast.Mult, ast.Mod: ast.FloorDiv}
_BOOL = {ast.And: ast.Or, ast.Or: ast.And}


@dataclass
class Mutant:
    module: str
    index: int  # position in the module's list: stable while the module is unchanged
    line: int
    description: str
    status: str = "pending"  # killed, survived, timeout


def _alternatives(node: ast.AST) -> list[tuple[str, ast.AST]]:
    """(description, replacement node) for every mutation of this one node."""
    out: list[tuple[str, ast.AST]] = []
    if isinstance(node, ast.Compare):
        for i, op in enumerate(node.ops):
            if type(op) in _COMPARE:
                new = copy.deepcopy(node)
                new.ops[i] = _COMPARE[type(op)]()
                out.append((f"{_op(op)} -> {_op(new.ops[i])}", new))
    elif isinstance(node, ast.BoolOp):
        new = copy.deepcopy(node)
        new.op = _BOOL[type(node.op)]()
        out.append((f"{_op(node.op)} -> {_op(new.op)}", new))
    elif isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        new = copy.deepcopy(node)
        new.op = _BINARY[type(node.op)]()
        out.append((f"{_op(node.op)} -> {_op(new.op)}", new))
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        out.append(("drop `not`", copy.deepcopy(node.operand)))
    elif isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, bool):
            out.append((f"{value} -> {not value}", ast.Constant(not value)))
        elif isinstance(value, (int, float)) and value is not None:
            out.append((f"{value!r} -> {value + 1!r}", ast.Constant(value + 1)))
            if value != 0:
                out.append((f"{value!r} -> 0", ast.Constant(type(value)(0))))
        elif isinstance(value, str):
            changed = "XX" + value + "XX"
            out.append((f"{_short(value)!r} -> {_short(changed)!r}", ast.Constant(changed)))
    elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        out.append(("remove call statement", ast.Pass()))
    elif isinstance(node, ast.Return) and node.value is not None and not (
            isinstance(node.value, ast.Constant) and not node.value.value):
        # (`return False` -> `return None` changes nothing where the result is a truth value)
        out.append(("return None", ast.Return(value=None)))
    elif isinstance(node, ast.Continue):
        out.append(("continue -> break", ast.Break()))
    elif isinstance(node, ast.Break):
        out.append(("break -> continue", ast.Continue()))
    return out


def _op(op: ast.AST) -> str:
    return {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">",
            ast.GtE: ">=", ast.In: "in", ast.NotIn: "not in", ast.Is: "is", ast.IsNot: "is not",
            ast.And: "and", ast.Or: "or", ast.Add: "+", ast.Sub: "-", ast.Mult: "*",
            ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%"}[type(op)]


def _short(text: str) -> str:
    return text if len(text) <= 30 else text[:27] + "..."


def _children(node: ast.AST) -> list[tuple[str, int | None, ast.AST]]:
    """(field, index, child) of the nodes worth mutating under `node`: not annotations, not
    docstrings, not error or log messages (a message change is not a change of behaviour)."""
    out = []
    for field, value in ast.iter_fields(node):
        if field in ("annotation", "returns", "type_comment", "decorator_list"):
            continue
        if isinstance(node, ast.AnnAssign) and field == "target":
            continue
        if isinstance(node, ast.Raise) and field in ("exc", "cause"):
            continue
        if isinstance(node, ast.JoinedStr):
            continue
        if isinstance(value, list):
            for i, item in enumerate(value):
                if isinstance(item, ast.AST):
                    if i == 0 and field == "body" and _is_docstring(node, item):
                        continue
                    out.append((field, i, item))
        elif isinstance(value, ast.AST):
            out.append((field, None, value))
    if isinstance(node, ast.Call) and (_is_log_call(node) or _is_name(node.func, "TypeVar")):
        out = [(f, i, c) for f, i, c in out if f == "func"]
    return out


def _is_docstring(parent: ast.AST, item: ast.AST) -> bool:
    return (isinstance(parent, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and isinstance(item, ast.Expr) and isinstance(item.value, ast.Constant)
            and isinstance(item.value.value, str))


def _is_name(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _is_log_call(call: ast.Call) -> bool:
    func = call.func
    return (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
            and func.value.id in ("logger", "log", "logging")
            and func.attr in ("debug", "info", "warning", "error", "exception", "critical"))


def _sites(tree: ast.AST) -> list[tuple[tuple, ast.AST]]:
    """(path from the root, node) of every node, in a fixed order."""
    out: list[tuple[tuple, ast.AST]] = []

    def visit(node: ast.AST, path: tuple) -> None:
        out.append((path, node))
        for field, index, child in _children(node):
            visit(child, path + ((field, index),))

    visit(tree, ())
    return out


def _replace(tree: ast.AST, path: tuple, new: ast.AST) -> ast.AST:
    tree = copy.deepcopy(tree)
    parent = tree
    for field, index in path[:-1]:
        parent = getattr(parent, field) if index is None else getattr(parent, field)[index]
    field, index = path[-1]
    if index is None:
        setattr(parent, field, new)
    else:
        getattr(parent, field)[index] = new
    return ast.fix_missing_locations(tree)


def mutants(module: str) -> list[tuple[Mutant, str]]:
    """Every mutant of a module with its source; mutants equal to the original are left out."""
    tree = ast.parse((ROOT / module).read_text())
    original = ast.unparse(tree)
    out: list[tuple[Mutant, str]] = []
    seen = {original}
    for path, node in _sites(tree):
        if not path:
            continue
        for description, new in _alternatives(node):
            source = ast.unparse(_replace(tree, path, new))
            if source in seen:
                continue
            seen.add(source)
            line = getattr(node, "lineno", 0)
            out.append((Mutant(module, len(out), line, description), source))
    return out


# --- running -------------------------------------------------------------------------------

def _copy_tree(target: Path) -> None:
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(ROOT, target, ignore=lambda _dir, names: [
        n for n in names if n in COPY_EXCLUDES or n.endswith(".sqlite3")])


def _pytest(tree: Path, job: int, tests: list[str], timeout: float,
            create_db: bool = False) -> tuple[str, float]:
    env = {**os.environ, **SERVICES, "DATABASE_URL": DATABASE.format(job=job)}
    command = [str(ROOT / ".venv/bin/python"), "-m", "pytest", "-q", "-x", "-p", "no:randomly",
               "-p", "no:cacheprovider", "--create-db" if create_db else "--reuse-db", *tests]
    started = time.monotonic()
    try:
        done = subprocess.run(command, cwd=tree, env=env, timeout=timeout,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    except subprocess.TimeoutExpired:
        return "timeout", time.monotonic() - started
    elapsed = time.monotonic() - started
    if done.returncode == 0:
        return "survived", elapsed
    if done.returncode == 5:  # no tests collected: the mapping is wrong, not a kill
        raise SystemExit(f"no tests ran: {' '.join(tests)}")
    return "killed", elapsed


def _drop_bytecode(tree: Path, module: str) -> None:
    """The byte code cache keys on mtime (seconds) and size: an equal-sized mutant written in the
    same second as the previous one would otherwise run the previous one's code."""
    target = tree / module
    for cached in (target.parent / "__pycache__").glob(target.stem + ".*.pyc"):
        cached.unlink()


def run_module(module: str, tests: list[str], trees: list[Path], limit: int | None,
               only: set[int] | None) -> list[Mutant]:
    tests = [t for t in tests if (ROOT / t).exists()]
    todo = mutants(module)
    if only is not None:
        todo = [(m, s) for m, s in todo if m.index in only]
    if limit is not None:
        todo = todo[:limit]
    original = (ROOT / module).read_text()
    for tree in trees:
        (tree / module).write_text(original)
        _drop_bytecode(tree, module)
    status, baseline = _pytest(trees[0], 0, tests, timeout=600)
    if status != "survived":
        raise SystemExit(f"{module}: the tests fail without mutants ({' '.join(tests)})")
    timeout = max(20.0, baseline * 3)
    print(f"{module}: {len(todo)} mutants, tests {baseline:.1f} s each run "
          f"({len(tests)} files)", flush=True)

    queue = list(todo)
    running: dict[int, tuple[Mutant, subprocess.Popen, float]] = {}
    env_base = {**os.environ, **SERVICES}
    while queue or running:
        for job, tree in enumerate(trees):
            if job in running or not queue:
                continue
            mutant, source = queue.pop(0)
            (tree / module).write_text(source)
            _drop_bytecode(tree, module)
            command = [str(ROOT / ".venv/bin/python"), "-m", "pytest", "-q", "-x",
                       "-p", "no:randomly", "-p", "no:cacheprovider", "--reuse-db", *tests]
            process = subprocess.Popen(
                command, cwd=tree, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                env={**env_base, "DATABASE_URL": DATABASE.format(job=job)},
                start_new_session=True)
            running[job] = (mutant, process, time.monotonic())
        time.sleep(0.05)
        for job in list(running):
            mutant, process, started = running[job]
            rc = process.poll()
            if rc is None and time.monotonic() - started < timeout:
                continue
            if rc is None:
                os.killpg(process.pid, 9)
                process.wait()
                mutant.status = "timeout"
            else:
                mutant.status = "survived" if rc == 0 else "killed"
            del running[job]
            print(f"  #{mutant.index:<4} {mutant.status:<8} {module}:{mutant.line}  "
                  f"{mutant.description}", flush=True)
    for tree in trees:
        (tree / module).write_text(original)
        _drop_bytecode(tree, module)
    return [m for m, _ in todo]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--module", action="append", choices=sorted(MODULES),
                        help="module to mutate (repeatable); default every one")
    parser.add_argument("--jobs", type=int, default=2, help="mutants tested at once")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/so-mutation"))
    parser.add_argument("--limit", type=int, help="at most this many mutants per module")
    parser.add_argument("--only", type=int, action="append",
                        help="only the mutant with this index (repeatable; with one --module)")
    parser.add_argument("--list", action="store_true", help="print the mutants, run nothing")
    parser.add_argument("--json", type=Path, help="also write the results to this file")
    parser.add_argument("--pull-sources", choices=["both", "database", "snapshot"],
                        default="both", help="the sources the pull tests run on (both: "
                        "a mutant is killed when either fails; snapshot: the production path)")
    args = parser.parse_args()
    if args.pull_sources != "both":  # read by tests/pull_sources.py in every pytest run
        os.environ["TEST_PULL_SOURCES"] = args.pull_sources
    modules = args.module or list(MODULES)
    if args.only and len(modules) != 1:
        parser.error("--only needs exactly one --module")

    if args.list:
        for module in modules:
            for mutant, _ in mutants(module):
                print(f"#{mutant.index:<4} {module}:{mutant.line}  {mutant.description}")
        return

    trees = [args.workdir / f"tree-{job}" for job in range(args.jobs)]
    for job, tree in enumerate(trees):
        _copy_tree(tree)
        # A fresh test database per job, migrated from the copied tree.
        status, _ = _pytest(tree, job, ["tests/store/test_metadata_requirements.py"],
                            timeout=600, create_db=True)
        if status != "survived":
            raise SystemExit(f"setting up {tree} failed")

    started = time.monotonic()
    results: dict[str, list[Mutant]] = {}
    only = set(args.only) if args.only else None
    for module in modules:
        results[module] = run_module(module, MODULES[module], trees, args.limit, only)

    print(f"\n{'module':<34} {'mutants':>7} {'killed':>7} {'survived':>8} {'timeout':>7}")
    for module, done in results.items():
        counts = {s: sum(m.status == s for m in done) for s in ("killed", "survived", "timeout")}
        print(f"{module:<34} {len(done):>7} {counts['killed']:>7} {counts['survived']:>8} "
              f"{counts['timeout']:>7}")
    survivors = [m for done in results.values() for m in done if m.status == "survived"]
    if survivors:
        print("\nsurvivors:")
        for m in survivors:
            print(f"  #{m.index:<4} {m.module}:{m.line}  {m.description}")
    print(f"\n{time.monotonic() - started:.0f} s")
    if args.json:
        args.json.write_text(json.dumps(
            {module: [asdict(m) for m in done] for module, done in results.items()}, indent=1))


if __name__ == "__main__":
    sys.exit(main())
