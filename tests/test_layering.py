"""metasim's layers (docs/architecture in ../shared/DESIGN.md): a module imports only from
its own layer or lower ones, and the core never imports a benchmark plug-in (it reaches
them through the registries). Checked on every import statement of every module, at
module level or inside a function, TYPE_CHECKING blocks included."""

from __future__ import annotations

import ast
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


def module_of(path: Path) -> str:
    name = ".".join(path.relative_to(ROOT.parent).with_suffix("").parts)
    return name.removesuffix(".__init__")


def test_no_import_cycles_between_modules():
    # every import counts (module level or in a function): a lazy import inside a
    # function is still a dependency
    modules = {module_of(p): p for p in ROOT.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for mod, path in modules.items():
        deps = set()
        for _, name in imports(path):
            while name not in modules and "." in name:
                name = name.rsplit(".", 1)[0]  # `from pkg.mod import f` -> pkg.mod
            if name in modules and name != mod and not mod.startswith(name + "."):
                deps.add(name)
        graph[mod] = deps
    cycles: list[list[str]] = []
    state: dict[str, int] = {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for dep in sorted(graph[node]):
            if state.get(dep) == 1:
                cycles.append([*stack[stack.index(dep) :], dep])
            elif dep not in state:
                visit(dep, [*stack, dep])
        state[node] = 2

    for mod in sorted(graph):
        if mod not in state:
            visit(mod, [mod])
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_no_module_is_over_400_lines():
    long = {
        str(p.relative_to(ROOT.parent)): n
        for p in ROOT.rglob("*.py")
        if (n := len(p.read_text().splitlines())) > 400
    }
    assert not long, f"split these modules: {long}"
