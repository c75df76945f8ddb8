"""Per-env model edits without a model copy per env.

A per-env model edit (a perturbation, a fixture's placement, a recorded initial state's
model rows) used to give every env its own MjModel copy, and a LIBERO model is ~270 MB
(~190 MB of it textures): 16 envs held 5.2 GB. Instead, each env's values of the edited
rows are kept here (small (B, ...) arrays), and the model a physics thread uses takes env
i's values just before anything reads it for env i (its substeps, kinematics, jacobians,
the frame a camera renders), overwriting those of the env it held before. Every edited
row is written for every env, so that model holds exactly what env i's own copy held:
the physics is bitwise the same.

Thread 0 (the only one with one env or `nthread=1`, and the one stepping in lockstep,
loading states, rendering and computing jacobians) uses the scene's model itself, and
gives it back its own values before the handler returns. Each other thread, where edited
envs step on several threads, uses a twin made before that first step: the scene's model
compiled again with 1x1 textures (physics never reads them; ~80 MB instead of ~270 MB for
LIBERO), with every other array copied from the scene's model (edits made to it after
compiling carry over); a plain copy where the scene has no spec or no textures.
"""

from __future__ import annotations

import copy

import mujoco
import numpy as np

# Arrays that may differ between a model and its textureless twin: the textures' sizes
# and data, and the file paths (the textures' are gone). Physics reads none of them.
_TEXTURE_ONLY = ("tex_", "path")


def _texture_only(field: str) -> bool:
    return field.startswith(_TEXTURE_ONLY)


def _arrays(m: mujoco.MjModel) -> dict[str, np.ndarray]:
    out = {}
    for name in dir(m):
        if not name.startswith("_"):
            value = getattr(m, name)
            if isinstance(value, np.ndarray):
                out[name] = value
    return out


def _same_struct(a: object, b: object) -> bool:
    """Whether two MjOption / MjStatistic structs hold the same values."""
    for name in dir(a):
        if name.startswith("_"):
            continue
        x = getattr(a, name)
        if callable(x):
            continue
        if not np.array_equal(np.asarray(x), np.asarray(getattr(b, name))):
            return False
    return True


def textureless_twin(model: mujoco.MjModel, spec: mujoco.MjSpec | None) -> mujoco.MjModel:
    """A model equal to `model` in every array physics reads, its textures 1x1 (from
    `spec`, the spec `model` was compiled from); a plain copy when there is no spec, no
    texture, or the recompiled model differs in the shape of anything but textures."""
    if spec is None or model.ntexdata == 0:
        return copy.copy(model)
    bare = spec.copy()
    for tex in bare.textures:  # each a 1x1 flat colour: the same ids, ~no data
        tex.file, tex.builtin, tex.width, tex.height = "", mujoco.mjtBuiltin.mjBUILTIN_FLAT, 1, 1
    twin = bare.compile()
    ours, theirs = _arrays(model), _arrays(twin)
    if set(ours) != set(theirs) or not (
        _same_struct(model.opt, twin.opt) and _same_struct(model.stat, twin.stat)
    ):
        return copy.copy(model)
    for name, src in ours.items():
        dst = theirs[name]
        if _texture_only(name):
            continue
        if dst.shape != src.shape or dst.dtype != src.dtype:
            return copy.copy(model)
        dst[...] = src  # e.g. compile_scene's geom and site groups, set after compiling
    return twin


class EnvModels:
    """Each env's values of the per-env edited model rows, loaded into the model a physics
    thread runs env i on (`model_for`): thread 0's is the scene's model itself, given back
    its own values by `restore` (the handler calls it before returning: between handler
    calls the scene's model is as compiled); the other threads' are textureless twins,
    made by `ready` before the first step that runs edited envs on several threads
    (stepping in lockstep, loading states and rendering use thread 0 alone). Until the
    first edit every env runs on the scene's model unchanged."""

    def __init__(
        self, base: mujoco.MjModel, spec: mujoco.MjSpec | None, num_envs: int, nslot: int
    ) -> None:
        self.base, self._spec = base, spec
        self.num_envs, self.nslot = num_envs, nslot
        self._models: list[mujoco.MjModel | None] = [base] + [None] * (nslot - 1)
        # field -> row -> (B, ...) values; flattened per field into `_writes`
        self._rows: dict[str, dict[int, np.ndarray]] = {}
        # per edited field: (its name, rows (k,), values (B, k, ...), the base's (k, ...))
        self._writes: list[tuple[str, np.ndarray, np.ndarray, np.ndarray]] = []
        self._views: list[list[np.ndarray]] = []  # per slot made, the edited fields' arrays
        self._held = [-1] * nslot  # the env whose values each slot's model holds (-1: none)

    @property
    def edited(self) -> bool:
        return bool(self._writes)

    def set(self, field: str, index: int, values: np.ndarray) -> None:
        """Env i's values of `field`[`index`] become values[i] (values (B, ...))."""
        self.restore()
        index = 0 if field == "gravity" else index
        row = self._view(self.base, field)[index]
        table = np.zeros((self.num_envs, *np.shape(row)), dtype=np.float64)
        if np.shape(values) == table.shape:
            table[...] = values
        else:
            for i in range(self.num_envs):
                table[i] = values[i]  # as `field[index] = values[i]` would take it
        self._rows.setdefault(field, {})[index] = table
        writes = []
        for name, rows in self._rows.items():
            idx = np.fromiter(rows, dtype=np.int64, count=len(rows))
            vals = np.stack([rows[int(r)] for r in idx], axis=1)  # (B, k, ...)
            own = self._view(self.base, name)[idx].copy()  # (k, ...), the model's dtype
            writes.append((name, idx, vals, own))
        self._writes = writes
        self._views_of_models()

    def _views_of_models(self) -> None:
        made = [m for m in self._models if m is not None]
        self._views = [[self._view(m, w[0]) for w in self._writes] for m in made]
        self._held = [-1] * self.nslot

    def ready(self) -> None:
        """Make the twins of threads 1.. once a row is edited (before threads use them)."""
        if not self._writes or self._models[-1] is not None:
            return
        self.restore()
        twin = textureless_twin(self.base, self._spec)
        self._models = [self.base, twin] + [copy.copy(twin) for _ in range(self.nslot - 2)]
        self._views_of_models()

    @staticmethod
    def _view(m: mujoco.MjModel, field: str) -> np.ndarray:
        """The array of `field` in `m` (gravity: opt.gravity as a (1, 3) table), made
        once per edit instead of once per load."""
        return m.opt.gravity[None] if field == "gravity" else getattr(m, field)

    def model_for(self, env: int, slot: int = 0) -> mujoco.MjModel:
        """The model env `env` runs on, for use by thread `slot` (in [0, nslot)) until its
        next call: slot 0's is the scene's model (call `restore` when done), the others'
        a twin; either holds env `env`'s values of every edited row."""
        if not self._writes:
            return self.base
        m = self._models[slot]
        assert m is not None, "EnvModels.ready() makes the other threads' models"
        if self._held[slot] != env:
            for (_, idx, vals, _), arr in zip(self._writes, self._views[slot], strict=True):
                arr[idx] = vals[env]
            self._held[slot] = env
        return m

    def restore(self) -> None:
        """Give the scene's model back its own values of the edited rows."""
        if self._held[0] != -1:
            for (_, idx, _, own), arr in zip(self._writes, self._views[0], strict=True):
                arr[idx] = own
            self._held[0] = -1

    def values(self, field: str, index: int) -> np.ndarray | None:
        """(B, ...) per-env values of an edited row (None: not edited)."""
        rows = self._rows.get(field)
        return None if rows is None or index not in rows else rows[index]
