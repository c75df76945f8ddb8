"""The batched, jitted pieces of the MJX backend: model batching, step, observe, reset.

Every env has its own copy of a few model fields (`BATCHED_FIELDS`) from the start, so a
physics perturbation (friction, mass, damping, gains, gravity) or a per-episode placement
(body and site positions) is one write into a
(B, ...) array and never a recompile; `vmap` maps those fields with `in_axes=0` and
shares the rest (`in_axes=None`), as MuJoCo Playground does for domain randomisation.

JAX runs in float64 (`jax_enable_x64`) so that MJX and native MuJoCo agree to the
tolerances in tests/sim/test_mjx_handler.py. XLA executables are kept in JAX's
persistent compilation cache under `~/.cache/metasim/jax` (override the folder with
`METASIM_JAX_CACHE`, set it to an empty string to turn the cache off): the first launch
of a scene compiles for tens of seconds on a CPU, later launches load in seconds.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from mujoco import mjx

# Model field -> path inside the mjx.Model pytree. Every env holds its own copy.
BATCHED_FIELDS = {
    "geom_friction": "geom_friction",
    "body_mass": "body_mass",
    "body_inertia": "body_inertia",
    "dof_damping": "dof_damping",
    "dof_armature": "dof_armature",
    "actuator_gainprm": "actuator_gainprm",
    "actuator_biasprm": "actuator_biasprm",
    "gravity": "opt.gravity",
    # Placements a task's recorded initial states carry per episode (Meta-World's reset
    # moves a fixture body and the goal site) and fixture poses drawn per episode.
    "body_pos": "body_pos",
    "body_quat": "body_quat",
    "site_pos": "site_pos",
}

# State fields of mjx.Data, in SimState's names.
STATE_FIELDS = (
    "time",
    "qpos",
    "qvel",
    "act",
    "ctrl",
    "qacc_warmstart",
    "mocap_pos",
    "mocap_quat",
)

# qpos, qvel, xpos, xquat, site_xpos, site_xmat, jac (B, 6, nv), then the poses the last
# physics substep computed (xpos, xquat, site_xpos, site_xmat: `Handler.kinematics(at="step")`)
Obs = tuple[jax.Array, ...]
N_OBS = 7  # the kinematics and the Jacobian; the step poses follow


def configure_jax() -> Path | None:
    """float64, and the persistent compilation cache; returns the cache folder (or None)."""
    jax.config.update("jax_enable_x64", True)
    folder = os.environ.get("METASIM_JAX_CACHE", str(Path.home() / ".cache/metasim/jax"))
    if not folder:
        return None
    path = Path(folder).expanduser()
    path.mkdir(parents=True, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", str(path))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 1.0)
    return path


def batch_model(mx: mjx.Model, num_envs: int) -> tuple[mjx.Model, mjx.Model]:
    """(model with BATCHED_FIELDS repeated `num_envs` times, the matching vmap in_axes)."""
    axes = jax.tree_util.tree_map(lambda _: None, mx)
    tiled: dict[str, jax.Array] = {}
    for path in BATCHED_FIELDS.values():
        value = _get(mx, path)
        tiled[path] = jnp.broadcast_to(value, (num_envs, *value.shape)).copy()
    axes = axes.tree_replace({path: 0 for path in BATCHED_FIELDS.values()})
    return mx.tree_replace(tiled), axes


def _get(tree: Any, path: str) -> Any:
    for part in path.split("."):
        tree = getattr(tree, part)
    return tree


def get_field(mx: mjx.Model, field: str) -> np.ndarray:
    """(B, ...) values of a batched field, as numpy."""
    return np.asarray(_get(mx, BATCHED_FIELDS[field]))


def set_field(mx: mjx.Model, field: str, index: int, values: np.ndarray) -> mjx.Model:
    """A copy of `mx` with row `index` of batched `field` set per env. values: (B, ...)."""
    path = BATCHED_FIELDS[field]
    current = _get(mx, path)
    if path == "opt.gravity":  # one vector per env: `index` is ignored.
        return mx.tree_replace({path: jnp.asarray(values).reshape(current.shape)})
    row = jnp.asarray(values).reshape(current[:, index].shape)
    return mx.tree_replace({path: current.at[:, index].set(row)})


def match_step_dtypes(mx: mjx.Model, d: mjx.Data) -> mjx.Data:
    """`d` with every leaf in the dtype `mjx.step` returns it in. Under float64, `make_data`
    gives a few int32 index arrays that `step` returns as int64, which `lax.scan` rejects."""
    out = jax.eval_shape(lambda x: mjx.step(mx, x), d)
    return jax.tree_util.tree_map(lambda x, s: jnp.asarray(x, dtype=s.dtype), d, out)


def _observe_one(m: mjx.Model, d: mjx.Data, site: int) -> tuple[mjx.Data, Obs]:
    """Kinematics of one env (as native `mj_kinematics` + `mj_comPos`) and the site Jacobian."""
    d = mjx.kinematics(m, d)
    d = mjx.com_pos(m, d)
    jacp, jacr = mjx.jac(m, d, d.site_xpos[site], jnp.asarray(m.site_bodyid)[site])
    jac = jnp.concatenate([jacp.T, jacr.T], axis=0)
    obs = (d.qpos, d.qvel, d.xpos, d.xquat, d.site_xpos, d.site_xmat, jac)
    return d, obs


def make_step(axes: mjx.Model, substeps: int, site: int) -> Callable[..., tuple[mjx.Data, Obs]]:
    """jit(vmap(step)): (model, data (B,...), ctrl (B, nu)) -> (data, obs), `substeps`
    physics steps in `lax.scan` with the control held, then the observables."""

    def one(m: mjx.Model, d: mjx.Data, ctrl: jax.Array) -> tuple[mjx.Data, Obs]:
        d = d.replace(ctrl=ctrl)

        def body(carry: mjx.Data, _: None) -> tuple[mjx.Data, None]:
            return mjx.step(m, carry), None

        d, _ = jax.lax.scan(body, d, None, length=substeps)
        step_poses = (d.xpos, d.xquat, d.site_xpos, d.site_xmat)  # as mjx.step left them
        d, obs = _observe_one(m, d, site)
        return d, obs + step_poses

    return jax.jit(jax.vmap(one, in_axes=(axes, 0, 0)))


def make_reset(axes: mjx.Model, site: int) -> Callable[..., tuple[mjx.Data, Obs]]:
    """jit(vmap(reset)): envs where `mask` (B,) is set get `blank` data with the state
    fields of `state` (dict of (B, ...) arrays); the others keep theirs. One shape for
    any subset, so a subset reset never recompiles."""

    def one(
        m: mjx.Model, d: mjx.Data, blank: mjx.Data, state: dict[str, jax.Array], mask: jax.Array
    ) -> tuple[mjx.Data, Obs]:
        fresh = blank.replace(**state)
        d = jax.tree_util.tree_map(lambda new, old: jnp.where(mask, new, old), fresh, d)
        d, obs = _observe_one(m, d, site)
        return d, obs + obs[2:6]  # a reset state's step poses are its own

    return jax.jit(jax.vmap(one, in_axes=(axes, 0, None, 0, 0)))
