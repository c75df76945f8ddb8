"""Task sources: where a suite's task references (`lift_cube`, `scenes/x.yaml`,
`libero:libero_spatial/3`, ...) come from, as typed `Scene`s.

A source declares its prefix (`libero:`) and turns a reference into a `Scene`
(`load`); it lists its suites (suite name -> task references), which `metasim eval`
and `metasim collect` accept as `suite=NAME` when eval/ has no file of that name. A
benchmark package registers its source with `@task_source("prefix:")` on a
`TaskSource` subclass (see docs/extending.md, "Add a task source"); the core never
names one. Plain YAML scene files are a source like any other (`yaml:`), and the
default for a reference without a registered prefix: a scene name in scenes/ or a path
to a scene file.

Every tool resolves references here: eval, collect, report's video replays, the physics
bench, `scene validate` / `scene render`, and gym registration.

A source may take options (`TaskSource.options`, a pydantic model whose fields are the
options; `metasim eval ... +task_options.NAME=VALUE`): `with_options` hands each task the
options its source takes, validated by the source's model, and the task loads with them
(`TaskSource.load_with`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from metasim.errors import MetasimInputError
from metasim.paths import SCENES
from metasim.registry import Registry
from metasim.scene import prebuilt_format
from metasim.scene.compile import CompiledScene, compile_scene
from metasim.scene.loader import load_scene
from metasim.scene.schema import Scene


class NoSuchTask(LookupError):
    """A reference its source cannot find; the message says where it looked."""

    def __str__(self) -> str:
        return str(self.args[0])


class TaskSource:
    """One kind of task reference. Subclasses set `prefix` and override `load` (and
    `suites`, `locate`, `bench` where they have them)."""

    prefix: str = ""
    # What renders the benchmark's own images, and how far MuJoCo Warp's ray tracer is
    # from it (measured): a run with render=warp says so in its summary. None: no reference.
    render_reference: str | None = None
    # The options its tasks take (`task_options.<field>`): a pydantic model whose fields
    # are the options, each with a default; None: it takes none.
    options: type[BaseModel] | None = None

    def locate(self, ref: str) -> Path:
        """The path compile resolves the scene's relative asset paths against (a scene
        file's folder is its parent). Raises `NoSuchTask` for a reference the source
        does not have. Default: the reference itself (a source whose scenes use
        absolute paths)."""
        return Path(ref)

    def load(self, ref: str) -> Scene:
        """The typed scene of `ref` (bad input: `MetasimInputError` naming the ref)."""
        raise NotImplementedError

    def load_with(self, ref: str, options: BaseModel) -> Scene:
        """`load` with the source's `options` (an instance of `self.options`); a source
        that takes options overrides it."""
        return self.load(ref)

    def suites(self) -> dict[str, list[str]]:
        """Suite name -> task references, in the source's order ({} if none or if the
        source's data is not installed)."""
        return {}

    def describe(self, suite: str) -> str:
        """One sentence on one of its suites (what a run's summary says of it); ''."""
        return ""

    def bench(self, ref: str, num_envs: list[int], steps: int) -> dict[str, Any] | None:
        """`metasim bench physics --scene REF` measured next to the source's own
        reference simulator (its figures, JSON-ready); None: the standard bench."""
        return None

    def asset_roots(self) -> list[Path]:
        """The folders whose files this source's scenes name by absolute path: the
        installed benchmark package's assets and the files metasim generates for it
        ([] if none, or if the package is not installed). `metasim serve` accepts a
        network scene's absolute name only inside one of them."""
        return []


SOURCES: Registry[TaskSource] = Registry("task source")
S = TypeVar("S", bound=type[TaskSource])


def task_source(prefix: str) -> Callable[[S], S]:
    """Class decorator: register one instance of a `TaskSource` subclass under
    `prefix` (which must end with ':')."""
    if not prefix.endswith(":") or len(prefix) < 2:
        raise ValueError(f"a task source prefix ends with ':', got {prefix!r}")

    def add(cls: S) -> S:
        cls.prefix = prefix
        SOURCES.register(prefix, cls())
        return cls

    return add


@task_source("yaml:")
class YamlSource(TaskSource):
    """Scene files: a name in scenes/ (`lift_cube`) or a path to a .yaml/.yml file."""

    def locate(self, ref: str) -> Path:
        """`name` -> scenes/name.yaml (else the file `name`); `x.yaml` -> that file."""
        ref = ref.removeprefix(self.prefix)
        path = Path(ref)
        tried = [path] if path.suffix in (".yaml", ".yml") else [SCENES / f"{ref}.yaml", path]
        found = next((p for p in tried if p.is_file()), None)
        if found is None:
            raise NoSuchTask(
                f"no scene file for {ref!r} (no such file: {tried[0]}){_prefixes(ref)}"
            )
        return found

    def load(self, ref: str) -> Scene:
        return load_scene(self.locate(ref))

    def suites(self) -> dict[str, list[str]]:
        """`scenes`: every scene file in scenes/."""
        return {"scenes": sorted(p.stem for p in SCENES.glob("*.yaml"))}


@task_source("prebuilt:")
class PrebuiltSource(TaskSource):
    """Prebuilt task scenes (`metasim scene prebuild`; `metasim.scene.prebuilt`): a saved
    model and its run-time files, for machines without the task's benchmark package."""

    def locate(self, ref: str) -> Path:
        try:
            return prebuilt_format.locate(ref)
        except LookupError as exc:
            raise NoSuchTask(str(exc.args[0])) from None

    def load(self, ref: str) -> Scene:
        return prebuilt_format.load_scene(self.locate(ref))

    def suites(self) -> dict[str, list[str]]:
        return prebuilt_format.suites()


DEFAULT = "yaml:"


def _prefixes(ref: str) -> str:
    """For a missing file whose name looks prefixed: the prefixes that are known."""
    head, sep, _ = ref.partition(":")
    if not sep or "/" in head:
        return ""
    return f"; no task source has the prefix {head + ':'!r} (known: {', '.join(SOURCES.names())})"


def source_of(ref: str) -> TaskSource:
    """The source of a reference: the one whose prefix starts it, else scene files."""
    head, sep, _ = ref.partition(":")
    if sep and f"{head}:" in SOURCES:
        return SOURCES[f"{head}:"]
    return SOURCES[DEFAULT]


@dataclass(frozen=True)
class Task:
    """A task reference resolved to its source (not loaded yet).

    `ref` as written; `path` what compile resolves relative asset paths against (the
    scene file for YAML scenes), also the shard's `source`."""

    ref: str
    source: TaskSource
    path: Path
    options: BaseModel | None = None  # the source's options (`with_options`); None: defaults

    def scene(self) -> Scene:
        if self.options is None:
            return self.source.load(self.ref)
        return self.source.load_with(self.ref, self.options)

    def compile(self, scene: Scene | None = None) -> CompiledScene:
        """Compile `scene` (default: the task's own) with the task's asset folder."""
        return compile_scene(scene if scene is not None else self.scene(), source=self.path)


def resolve(ref: str) -> Task:
    """The `Task` of a reference; `NoSuchTask` if its source does not have it."""
    source = source_of(ref)
    return Task(ref, source, source.locate(ref))


def resolve_input(ref: str, where: str) -> Task:
    """`resolve`, with a missing task reported as bad input from `where`."""
    try:
        return resolve(ref)
    except NoSuchTask as exc:
        raise MetasimInputError(where, [str(exc)]) from None


TaskOption = str | int | float | bool | None  # one `task_options` value


def with_options(
    tasks: list[Task], given: Mapping[str, TaskOption], where: str = "task_options"
) -> list[Task]:
    """`tasks`, each with the options of `given` its source takes (validated by the
    source's `options` model; a source that takes none of them loads as before). An
    option no source of `tasks` takes, or a value its source refuses, is an input error
    naming `<where>.<option>`."""
    if not given:
        return tasks
    out: list[Task] = []
    taken: set[str] = set()
    typed: dict[str, BaseModel] = {}
    for task in tasks:
        model = task.source.options
        if model is None:
            out.append(task)
            continue
        mine = {k: v for k, v in given.items() if k in model.model_fields}
        taken |= set(mine)
        if task.source.prefix not in typed:
            typed[task.source.prefix] = _validated(model, mine, where)
        out.append(replace(task, options=typed[task.source.prefix]))
    unknown = sorted(set(given) - taken)
    if unknown:
        takes = {t.source.prefix: sorted(t.source.options.model_fields)
                 for t in tasks if t.source.options is not None}  # fmt: skip
        said = "; ".join(f"{p} takes {', '.join(n)}" for p, n in takes.items())
        raise MetasimInputError(
            f"{where}.{unknown[0]}",
            [f"no task source of these tasks takes the option {unknown[0]!r} "
             f"({said or 'their sources take no options'})"],
        )  # fmt: skip
    return out


def _validated(model: type[BaseModel], given: dict[str, TaskOption], where: str) -> BaseModel:
    """`given` validated by a source's options `model` (an input error naming the option)."""
    try:
        return model.model_validate(given)
    except ValidationError as exc:
        err = exc.errors()[0]
        name = ".".join(str(p) for p in err["loc"])
        raise MetasimInputError(
            f"{where}.{name}", [f"{err['msg']}, got {err.get('input')!r}"]
        ) from None


def load_task_scene(ref: str, where: str = "") -> Scene:
    """The typed scene of a reference (a missing task: bad input from `where`)."""
    return resolve_input(ref, where or ref).scene()


def compile_task(ref: str | Path, where: str = "") -> CompiledScene:
    """Load and compile the scene of a reference (a scene file path, a name, `PREFIX:REF`)."""
    return resolve_input(str(ref), where or str(ref)).compile()


def asset_roots() -> list[Path]:
    """Every source's `asset_roots`, resolved (links followed), those that exist; a source
    whose package is not installed here (a prebuilt task runs without it) has none."""
    out: list[Path] = []
    for _, source in SOURCES.items():
        try:
            roots = source.asset_roots()
        except (ImportError, MetasimInputError):
            continue
        out += [p.resolve() for p in roots if p.is_dir()]
    return list(dict.fromkeys(out))


def suite_description(name: str) -> str:
    """The description the first source listing suite `name` gives it ('' if none)."""
    for _, source in SOURCES.items():
        if name in source.suites():
            return source.describe(name)
    return ""


def all_suites() -> dict[str, list[str]]:
    """Every source's suites (first source by prefix wins a name two sources list)."""
    out: dict[str, list[str]] = {}
    for _, source in SOURCES.items():
        for name, refs in source.suites().items():
            out.setdefault(name, list(refs))
    return out
