"""Run the episodes of one task: a batched env, a policy, the evaluation loop, records.

Episode k of a task always starts from the state drawn with `episode_seed(seed, k)`,
whatever env slot it lands in, so results do not depend on `num_envs`: the env derives
it (`metasim.tasks.seeds`); the loop (`metasim.evaluate.loop`) names the episodes.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

from pydantic import ValidationError

from metasim.envs.noise import RuntimeNoise, envelope
from metasim.envs.vec_env import MetasimVectorEnv
from metasim.errors import MetasimInputError, one_line
from metasim.evaluate.capacity import backend_options, overflow_errors
from metasim.evaluate.cells import CellPart, world_backgrounds, world_views
from metasim.evaluate.hooks import Hooks, RolloutHooks
from metasim.evaluate.loop import EvalLoop
from metasim.evaluate.policy_io import camera_views, converter_for, policy_context
from metasim.evaluate.records import EpisodeRecord
from metasim.evaluate.spec import RolloutSpec
from metasim.policies.base import Policy, make_policy
from metasim.policies.conventions import ActionConverter
from metasim.scene.compile import CompiledScene

__all__ = ["EpisodeRecord", "Hooks", "RolloutHooks", "check_fit", "run_task"]


def run_task(
    compiled: CompiledScene,
    spec: RolloutSpec,
    episodes: int | Sequence[int],
    *,
    noise: RuntimeNoise | None = None,
    cell: str = "nominal",
    factors: Mapping[str, object] | None = None,
    hooks: RolloutHooks | None = None,
    cells: Sequence[CellPart] = (),
) -> Iterator[EpisodeRecord]:
    """Yield one record per episode of `spec`'s policy on `compiled`, as each finishes
    (not in episode order).

    `hooks` sees the run (`metasim.evaluate.hooks`): the env once it exists (what
    `metasim report` uses to film a replay), each observation with the policy's actions
    (what `metasim collect` records), the actions the simulator applied and the slots
    reset to start episodes (what the cross-checks replay in the reference simulator).

    `episodes` is a count (episodes 0..n-1) or the list of episode indices to run (what
    a resumed run still misses). A policy that raises or returns unusable actions fails
    the episodes it was driving (recorded with the reason); the run goes on.

    `cells`: run these cells' episodes side by side in one batch instead (`episodes`,
    `noise`, `cell` and `factors` unused): each world runs with its episode's cell noise
    (and background, cameras and lights).
    """
    todo = list(range(episodes)) if isinstance(episodes, int) else list(episodes)
    if cells:  # the envs start with every cell's largest noise (what device images see)
        todo, noise = [k for c in cells for k in c.episodes], envelope([c.noise for c in cells])
    if not todo:
        return
    convert, views = check_fit(compiled, spec)
    n = max(1, min(spec.num_envs, len(todo)))
    env = MetasimVectorEnv(
        compiled,
        num_envs=n,
        backend=spec.backend,
        render=spec.render,
        render_spp=spec.render_spp,
        action_space=convert.env_space,
        cameras=views,
        autoreset=False,
        noise=noise,
        nthread=spec.threads,
        seed=spec.seed,
        **backend_options(spec.backend, spec.nconmax, spec.njmax),
    )
    cell_factors = dict(factors or {})
    policy: Policy | None = None
    try:
        ctx = policy_context(env, convert.env_space, spec.options)
        try:
            policy = make_policy(spec.policy, ctx)
        except ValueError as exc:  # the policy cannot drive this scene: say why, no traceback
            if isinstance(exc, MetasimInputError):
                raise
            raise MetasimInputError(
                f"policy {spec.policy!r} on scene {compiled.scene.name!r}", [one_line(str(exc))]
            ) from None
        env.add_views(policy.views)  # views a policy derives (LeRobot's)
        env.backgrounds, groups = world_backgrounds(compiled, tuple(cells), n, env.renderer)
        if getattr(policy, "device_images", False):  # frames never copied to the host
            env.use_device_images()  # (where the backend and the rig share a device)
        hooks = hooks if hooks is not None else Hooks()
        hooks.on_env(env)
        loop = EvalLoop(
            env, policy, todo, execute=spec.execute, ensemble=spec.ensemble, convert=convert,
            hooks=hooks, cells=cells, backgrounds=groups,
            views=world_views(compiled, tuple(cells), n) if cells else None,
        )  # fmt: skip
        with overflow_errors(env.handler, compiled.scene.name):
            for rec in loop.run():
                yield rec if cells else replace(rec, cell=cell, factors=cell_factors)
    finally:
        if policy is not None:
            policy.close()
        env.close()


def check_fit(compiled: CompiledScene, spec: RolloutSpec) -> tuple[ActionConverter, list[Any]]:
    """The converter of `spec`'s actions and the camera views of its observation on this
    scene; a convention the scene's robot or cameras cannot serve is an input error."""
    try:
        convert, views = (
            converter_for(compiled, spec.actions),
            camera_views(compiled, spec.observation),
        )
    except (ValueError, ValidationError) as exc:
        raise MetasimInputError("policy config", [f"policy.{one_line(str(exc))}"]) from None
    if views and compiled.untextured:  # refused before any run, whatever the renderer
        cams = ", ".join(sorted({v.camera for v in views}))
        raise MetasimInputError(
            str(compiled.source or compiled.scene.name),
            [f"prebuilt without its textures (for state-only runs), and the policy's "
             f"observation renders its cameras ({cams}), which would not show its images"],
            "Prebuild the task with its textures (no --no-textures), or use a state-only policy",
        )  # fmt: skip
    return convert, views
