"""metasim's layers (docs/architecture in ../shared/DESIGN.md): a module imports only from
its own layer or lower ones, and the core never imports a benchmark plug-in (it reaches
them through the registries). Checked on every import statement of every module, at
module level or inside a function, TYPE_CHECKING blocks included.

A plug-in imports another plug-in only when it declares it as its base: `BASE = "<name>"`
in the plug-in's `__init__.py` (LIBERO's is robosuite, whose simulator it extends; at most
one base, and never in a circle). A `"metasim.<plug-in>...:<name>"` string (an entry a
registry resolves later, such as a `Benchmark`'s `venv=`) counts as an import."""

from __future__ import annotations

import ast
import re
from importlib.metadata import entry_points
from pathlib import Path

import metasim

ROOT = Path(metasim.__file__).resolve().parent
# Top-level part of metasim -> layer; a plug-in (a benchmark) sits above everything.
LAYERS = {
    "__init__": 0,
    "errors": 0,
    "appends": 0,
    "paths": 0,
    "registry": 0,
    "rotations": 0,
    "yamlio": 0,
    "guards": 0,
    "inputs": 0,
    "splats": 0,  # Gaussian splat files (scene backgrounds, recon)
    "gl": 0,  # MUJOCO_GL chosen before mujoco is imported (metasim/__init__)
    "scene": 1,
    "sim": 2,
    "control": 3,
    "reference": 3,
    "tasks": 3,
    "envs": 4,
    "perturb": 5,
    "policies": 5,
    "evaluate": 6,
    "stats": 6,
    "report": 6,
    "correlate": 6,
    "recon": 6,
    "collect": 6,
    "compare": 6,
    "index": 6,
    "bench": 6,
    "cli": 7,
}
# benchmarks: top layer, imported by nothing in the core; the packages of metasim's own
# distribution declared in the `metasim.plugins` entry points (pyproject.toml)
PLUGINS = {
    ep.value.split(":")[0].split(".")[1]
    for ep in entry_points(group="metasim.plugins")
    if ep.value.startswith("metasim.")
}
TOP = 8


def part(module: str) -> str:
    """`metasim.scene.schema` -> `scene`."""
    return module.split(".")[1] if "." in module else "__init__"


def layer(name: str) -> int:
    return TOP if name in PLUGINS else LAYERS[name]


def imports(path: Path) -> list[tuple[int, str]]:
    """(line, absolute metasim module) of every import in `path`."""
    tree = ast.parse(path.read_text())
    here = ".".join(path.relative_to(ROOT.parent).with_suffix("").parts)
    package = here if path.name == "__init__.py" else here.rsplit(".", 1)[0]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names if a.name.startswith("metasim.")]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                name = f"{base}.{node.module}" if node.module else base
            else:
                name = node.module or ""
            if name.startswith("metasim.") or name == "metasim":
                out.append((node.lineno, name))
    return out


def test_every_part_of_metasim_has_a_layer():
    parts = {p.stem if p.is_file() else p.name for p in ROOT.iterdir()}
    parts = {p for p in parts if not p.startswith(("_", ".")) or p == "__init__"}
    parts.discard("py")  # py.typed
    assert parts - {"__pycache__"} <= set(LAYERS) | PLUGINS, "a new top-level part needs a layer"


def test_no_module_imports_a_higher_layer_or_a_plugin():
    upward = []
    for path in sorted(ROOT.rglob("*.py")):
        mine = part(".".join(path.relative_to(ROOT.parent).with_suffix("").parts))
        for line, name in imports(path):
            theirs = part(name)
            if theirs == mine or name == "metasim":
                continue
            if layer(theirs) > layer(mine):
                upward.append(f"{path.relative_to(ROOT.parent)}:{line} imports {name}")
    assert not upward, "upward imports:\n" + "\n".join(upward)


def base_of(plugin: str) -> str | None:
    """The base plug-in `plugin` declares (`BASE = "<name>"` in its `__init__.py`), or None."""
    tree = ast.parse((ROOT / plugin / "__init__.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", "") for t in node.targets] == [
            "BASE"
        ]:
            return str(ast.literal_eval(node.value))
    return None


ENTRY = re.compile(r"^(metasim\.\w+(?:\.\w+)*):\w+$")


def plugin_imports(path: Path) -> list[tuple[int, str]]:
    """(line, metasim module) of every import in `path` and every `module:name` string."""
    strings = [
        (node.lineno, m.group(1))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        if (m := ENTRY.match(node.value))
    ]
    return imports(path) + strings


def cross_plugin_imports() -> list[tuple[str, str, str]]:
    """(where, importing plug-in, imported plug-in) of every import between plug-ins."""
    out = []
    for plugin in sorted(PLUGINS):
        for path in sorted((ROOT / plugin).rglob("*.py")):
            for line, name in plugin_imports(path):
                if (theirs := part(name)) in PLUGINS and theirs != plugin:
                    out.append((f"{path.relative_to(ROOT.parent)}:{line} {name}", plugin, theirs))
    return out


def test_a_plugin_imports_no_plugin_but_its_declared_base():
    undeclared = [
        where for where, mine, theirs in cross_plugin_imports() if base_of(mine) != theirs
    ]
    assert not undeclared, "plug-in imports without a declared base:\n" + "\n".join(undeclared)


def test_bases_are_plugins_and_form_no_circle():
    bases = {p: b for p in PLUGINS if (b := base_of(p)) is not None}
    assert set(bases.values()) <= PLUGINS, bases
    for plugin in bases:
        seen = [plugin]
        while (nxt := bases.get(seen[-1])) is not None:
            assert nxt not in seen, f"a circle of bases: {[*seen, nxt]}"
            seen.append(nxt)
    assert bases.get("libero") == "robosuite" and "robosuite" not in bases


def test_robosuite_imports_no_libero():
    """LIBERO is built on robosuite: what both need lives in robosuite."""
    assert not [w for w, mine, theirs in cross_plugin_imports() if mine == "robosuite"]


def module_of(path: Path) -> str:
    name = ".".join(path.relative_to(ROOT.parent).with_suffix("").parts)
    return name.removesuffix(".__init__")


# Packages whose circles are not failures (none: the sim layer's circle was taken apart in
# issue 46's sim-layer step).
CIRCLES_ALLOWED_IN: tuple[str, ...] = ()


def dependencies(mod: str, path: Path, modules: set[str]) -> set[str]:
    """The metasim modules `mod` imports: `from pkg import a, b` counts `pkg.a` and `pkg.b`
    when they are modules, else `pkg` itself (its `__init__`, an ancestor's included); an
    `importlib.import_module("metasim...")` of a literal counts too."""
    here = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                pkg = here.rsplit(".", node.level - 1)[0] if node.level > 1 else here
                base = f"{pkg}.{base}" if base else pkg
            subs = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in modules]
            names = subs if len(subs) == len(node.names) else [base, *subs]
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "import_module":
            names = [a.value for a in node.args[:1] if isinstance(a, ast.Constant)]
        for name in (n for n in names if isinstance(n, str) and n.startswith("metasim")):
            while name not in modules and "." in name:
                name = name.rsplit(".", 1)[0]  # `from pkg.mod import f` -> pkg.mod
            if name in modules and name != mod:
                out.add(name)
    return out


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for dep in sorted(graph[node]):
            if dep not in index:
                visit(dep)
                low[node] = min(low[node], low[dep])
            elif dep in stack:
                low[node] = min(low[node], index[dep])
        if low[node] == index[node]:
            part_ = stack[stack.index(node) :]
            del stack[stack.index(node) :]
            if len(part_) > 1:
                found.append(sorted(part_))

    for mod in sorted(graph):
        if mod not in index:
            visit(mod)
    return found


def test_no_import_cycles_between_modules():
    # every import counts (module level or in a function): a lazy import inside a
    # function is still a dependency; so is an import of a package's own ancestors
    modules = {module_of(p): p for p in ROOT.rglob("*.py")}
    graph = {mod: dependencies(mod, path, set(modules)) for mod, path in modules.items()}
    found = [
        c for c in circles(graph)
        if not all(m.startswith(CIRCLES_ALLOWED_IN) for m in c)
    ]  # fmt: skip
    assert not found, "import circles:\n" + "\n".join(" ".join(c) for c in found)


def test_the_circle_finder_finds_a_circle_through_a_package():
    graph = {"p": {"p.a"}, "p.a": {"p.b"}, "p.b": {"p"}, "q": {"p"}}
    assert circles(graph) == [["p", "p.a", "p.b"]]
    pkg = ROOT / "sim" / "warp" / "__init__.py"
    modules = {module_of(p) for p in ROOT.rglob("*.py")}
    assert "metasim.sim" in dependencies("metasim.sim.warp", pkg, modules)


def test_no_module_is_over_400_lines():
    long = {
        str(p.relative_to(ROOT.parent)): n
        for p in ROOT.rglob("*.py")
        if (n := len(p.read_text().splitlines())) > 400
    }
    assert not long, f"split these modules: {long}"
