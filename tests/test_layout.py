"""The direction of imports between the project's packages, and no import cycle anywhere
(issue 30; README "Layout"). Every import counts, those inside functions included: a cycle
hidden in a function body still ties two modules together."""
import ast
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Lowest first: a package may import the packages before it, never one after it.
LAYERS = (
    "conventions",      # Arrowhead names, wire values and error types; imports nothing of ours
    "database",         # locks, transaction retry, bulk insert, retention, prepared statements
    "api",              # the HTTP edge: envelope, parsers, fields, schema, operation table
    "observability",    # metrics, health, log records; asks the apps through what they register
    "clients",          # the one client of the other Arrowhead systems
    "identity",
    "store",
    "general",
    "notifications",
    "serviceregistry",
    "orchestration",
    "subscriptions",
    "config",           # settings, URLs, WSGI/ASGI, Celery, server glue and processes
    "mqtt_api",         # a process of its own (`manage.py mqtt_api`), started like the others
)
NOT_PRODUCT = {"tests", "bench"}


def product_modules() -> dict[str, Path]:
    modules = {}
    for init in sorted(ROOT.glob("*/__init__.py")):
        if init.parent.name in NOT_PRODUCT:
            continue
        for path in init.parent.rglob("*.py"):
            if "migrations" in path.parts:
                continue
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            modules[name.removesuffix(".__init__")] = path
    return modules


def imported_names(module: str, path: Path) -> set[str]:
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def import_graph() -> dict[str, set[str]]:
    """Module → the project modules it imports (a name resolves to the longest module it
    starts with: `from a.b import c` is a.b.c when that is a module, else a.b)."""
    modules = product_modules()
    graph = defaultdict(set)
    for module, path in modules.items():
        for name in imported_names(module, path):
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name and name != module:
                graph[module].add(name)
    return {module: graph[module] for module in modules}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan, iterative)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            for succ in successors:
                if succ not in index:
                    index[succ] = low[succ] = len(index)
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(sorted(graph.get(succ, ())))))
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def package(module: str) -> str:
    return module.partition(".")[0]


def test_every_package_has_a_layer():
    packages = {package(module) for module in product_modules()}
    assert packages - set(LAYERS) == set(), "give each new package its place in LAYERS"
    assert set(LAYERS) - packages == set(), "LAYERS names a package that no longer exists"


def test_packages_import_only_downwards():
    rank = {name: position for position, name in enumerate(LAYERS)}
    upward = sorted(f"{module} imports {target}"
                    for module, targets in import_graph().items() for target in targets
                    if rank[package(target)] > rank[package(module)])
    assert upward == []


def test_no_import_cycle_between_files():
    assert cycles(import_graph()) == []


def test_cycles_are_found():
    # The check itself: a cycle of three among unrelated nodes, and none in a chain.
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_uses(path: Path) -> list[str]:
    """Uses of a third-party package's private names in `path` (issue 31, item 5: nothing
    beneath a dependency's public API): `from <package> import _name`, a private module in
    the path (`<package>._module`), `<imported name>._name`; and, by text, gunicorn's worker
    internals and hand libpq use."""
    ours = {module.split(".")[0] for module in product_modules()} | NOT_PRODUCT
    local = set(sys.stdlib_module_names) | ours

    def third_party(module: str) -> bool:
        return bool(module) and module.split(".")[0] not in local

    text = path.read_text()
    found = [needle for needle in ("TConn", "_DEFER", "pgconn.exec_", "from psycopg import pq")
             if needle in text]
    imported = set()
    for node in ast.walk(ast.parse(text, str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if third_party(alias.name):
                    imported.add(alias.asname or alias.name.split(".")[0])
                    found += [alias.name] * any(map(_is_private, alias.name.split(".")))
        elif isinstance(node, ast.ImportFrom) and not node.level and third_party(node.module):
            if any(map(_is_private, node.module.split("."))):
                found.append(node.module)
            for alias in node.names:
                imported.add(alias.asname or alias.name)
                if _is_private(alias.name):
                    found.append(f"{node.module}.{alias.name}")
    for node in ast.walk(ast.parse(text, str(path))):
        if isinstance(node, ast.Attribute) and _is_private(node.attr):
            root = node.value
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and root.id in imported:
                found.append(ast.unparse(node))
    return found


def test_no_product_module_uses_a_dependencys_private_names():
    uses = {}
    for path in product_modules().values():
        relative = path.relative_to(ROOT).as_posix()
        if found := private_uses(path):
            uses[relative] = found
    assert not uses


def test_the_private_names_check_finds_what_it_looks_for(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("from gunicorn.workers.gthread import _DEFER, TConn\n"
                      "from psycopg import pq\nimport gunicorn.util\n"
                      "from django.utils._os import safe_join\n"
                      "x = gunicorn.util._private\n")
    assert private_uses(sample) == [
        "TConn", "_DEFER", "from psycopg import pq", "gunicorn.workers.gthread._DEFER",
        "django.utils._os", "gunicorn.util._private"]
