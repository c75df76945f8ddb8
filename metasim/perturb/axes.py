"""Perturbation axes: each turns one factor value into a change of the scene or the run.

Scene axes return a modified copy of the typed `Scene` (compiled per cell, so they work
on every backend); runtime axes set `RuntimeNoise` fields that the env applies while
stepping (observation noise, action noise and latency). Axes are registered by name
with `@SCENE_AXES.register("name")` or `@RUNTIME_AXES.register("name")`; a grid's factor
names an axis and a target where it needs one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from metasim.envs.noise import RuntimeNoise
from metasim.registry import Registry
from metasim.scene.schema import (
    CameraSpec,
    DrawerSpec,
    LightSpec,
    ObjectSpec,
    Scene,
    TableSpec,
)

SceneAxis = Callable[[Scene, Any, str | None], Scene]
RuntimeAxis = Callable[[RuntimeNoise, Any], RuntimeNoise]
# Axis name -> function; every module of metasim.perturb (and of each plug-in) that
# defines an axis registers it here.
SCENE_AXES: Registry[SceneAxis] = Registry("scene axis", packages=("metasim.perturb",))
RUNTIME_AXES: Registry[RuntimeAxis] = Registry("runtime axis", packages=("metasim.perturb",))

COLORS = {
    "red": (0.85, 0.15, 0.15, 1.0),
    "green": (0.2, 0.7, 0.25, 1.0),
    "blue": (0.15, 0.3, 0.85, 1.0),
    "yellow": (0.9, 0.8, 0.15, 1.0),
    "white": (0.92, 0.92, 0.92, 1.0),
    "black": (0.08, 0.08, 0.08, 1.0),
    "orange": (0.95, 0.5, 0.1, 1.0),
    "purple": (0.55, 0.2, 0.7, 1.0),
}


def axis_names() -> list[str]:
    """Every registered axis: the scene axes, then the runtime ones."""
    return SCENE_AXES.names() + RUNTIME_AXES.names()


def _objects(scene: Scene, target: str | None) -> list[str]:
    """Objects an axis acts on: `target` (a name), or the expert's object, or all."""
    names = [o.name for o in scene.objects]
    if target and target != "*":
        if target not in names:
            raise ValueError(f"no object {target!r} in scene {scene.name!r} (it has {names})")
        return [target]
    if target is None and scene.task.expert and scene.task.expert.object in names:
        return [scene.task.expert.object]
    return names


def _map_objects(scene: Scene, target: str | None, fn: Callable[[ObjectSpec], ObjectSpec]) -> Scene:
    chosen = set(_objects(scene, target))
    objects = [fn(o) if o.name in chosen else o for o in scene.objects]
    return scene.model_copy(update={"objects": objects})


def _vec(value: Any, n: int) -> np.ndarray:
    arr = np.atleast_1d(np.asarray(value, dtype=np.float64))
    return np.resize(arr, n) if arr.size == 1 else arr[:n]


# ------------------------------------------------------------ objects


def _shift(scene: Scene, target: str | None, axis: int, value: Any) -> Scene:
    """Move the chosen objects' initial position by `value` (m) along x (axis 0) or y (1).
    On a scene whose episodes start from recorded states (`task.init_states`, LIBERO) the
    recorded pose replaces the nominal one, so the shift goes into the reset offset
    (`ObjectSpec.init`, an offset from the recorded pose there): both ends of its range
    move by `value`. Elsewhere the nominal position moves."""
    v = float(value)
    if scene.task.init_states is None:

        def moved(o: ObjectSpec) -> ObjectSpec:
            pos = list(o.pos)
            pos[axis] += v
            return o.model_copy(update={"pos": tuple(pos)})

        return _map_objects(scene, target, moved)

    def offset(o: ObjectSpec) -> ObjectSpec:
        low, high = list(o.init.pos_low), list(o.init.pos_high)
        low[axis] += v
        high[axis] += v
        init = o.init.model_copy(update={"pos_low": tuple(low), "pos_high": tuple(high)})
        return o.model_copy(update={"init": init})

    return _map_objects(scene, target, offset)


@SCENE_AXES.register("object_x")
def _object_x(scene: Scene, value: Any, target: str | None) -> Scene:
    """Shift the initial position along x (m)."""
    return _shift(scene, target, 0, value)


@SCENE_AXES.register("object_y")
def _object_y(scene: Scene, value: Any, target: str | None) -> Scene:
    """Shift the initial position along y (m)."""
    return _shift(scene, target, 1, value)


@SCENE_AXES.register("object_yaw_range")
def _object_yaw(scene: Scene, value: Any, target: str | None) -> Scene:
    """Widen the reset yaw range to ±value (rad)."""

    def widen(o: ObjectSpec) -> ObjectSpec:
        init = o.init.model_copy(update={"yaw_low": -float(value), "yaw_high": float(value)})
        return o.model_copy(update={"init": init})

    return _map_objects(scene, target, widen)


@SCENE_AXES.register("object_pos_range")
def _object_pos_range(scene: Scene, value: Any, target: str | None) -> Scene:
    """Widen the reset x/y range to ±value (m) around the nominal position, or around the
    recorded position on tasks with `task.init_states` (LIBERO's object layout); the
    offset is drawn per episode from its seed. The range stays centred where it was (an
    `object_x`/`object_y` shift in the same cell is kept). Default target: every object."""

    def widen(o: ObjectSpec) -> ObjectSpec:
        v = float(value)
        lo, hi = o.init.pos_low, o.init.pos_high
        cx, cy = (lo[0] + hi[0]) / 2, (lo[1] + hi[1]) / 2
        init = o.init.model_copy(
            update={"pos_low": (cx - v, cy - v, 0.0), "pos_high": (cx + v, cy + v, 0.0)}
        )
        return o.model_copy(update={"init": init})

    return _map_objects(scene, target or "*", widen)


@SCENE_AXES.register("object_color")
def _object_color(scene: Scene, value: Any, target: str | None) -> Scene:
    """Recolor: a color name or an RGBA list."""
    rgba = COLORS[value] if isinstance(value, str) else tuple(_vec(value, 4))
    return _map_objects(
        scene, target, lambda o: o.model_copy(update={"rgba": rgba, "material": None})
    )


@SCENE_AXES.register("object_scale")
def _object_scale(scene: Scene, value: Any, target: str | None) -> Scene:
    """Scale primitive sizes (identity: a bigger or smaller object)."""

    def scale(o: ObjectSpec) -> ObjectSpec:
        if o.size is None:
            return o
        size = [s * float(value) for s in o.size]
        pos = (o.pos[0], o.pos[1], o.pos[2] * float(value))
        return o.model_copy(update={"size": size, "pos": pos})

    return _map_objects(scene, target, scale)


@SCENE_AXES.register("friction")
def _friction(scene: Scene, value: Any, target: str | None) -> Scene:
    """Scale the sliding friction of objects (target, default all) by value."""
    return _map_objects(
        scene,
        target or "*",
        lambda o: o.model_copy(
            update={"friction": (o.friction[0] * float(value), *o.friction[1:])}
        ),
    )


@SCENE_AXES.register("mass")
def _mass(scene: Scene, value: Any, target: str | None) -> Scene:
    """Scale object mass by value."""
    return _map_objects(
        scene, target, lambda o: o.model_copy(update={"mass": o.mass * float(value)})
    )


@SCENE_AXES.register("distractors")
def _distractors(scene: Scene, value: Any, target: str | None) -> Scene:
    """Add `value` distractor cubes of assorted colors around the workspace edge."""
    count = int(value)
    slots = [(0.42, 0.32), (0.7, -0.3), (0.68, 0.33), (0.4, -0.33), (0.78, 0.0), (0.3, 0.25)]
    names = list(COLORS)
    extra = [
        ObjectSpec(
            name=f"distractor{i}",
            shape="box" if i % 2 == 0 else "cylinder",
            size=[0.018, 0.018, 0.018] if i % 2 == 0 else [0.018, 0.025],
            pos=(slots[i % len(slots)][0], slots[i % len(slots)][1], 0.025),
            rgba=COLORS[names[(i + 3) % len(names)]],
            mass=0.05,
        )
        for i in range(count)
    ]
    return scene.model_copy(update={"objects": [*scene.objects, *extra]})


# ------------------------------------------------------------ fixtures and appearance


@SCENE_AXES.register("table_color")
def _table_color(scene: Scene, value: Any, target: str | None) -> Scene:
    rgba = COLORS[value] if isinstance(value, str) else tuple(_vec(value, 4))
    fixtures = [
        f.model_copy(update={"rgba": rgba, "material": None}) if isinstance(f, TableSpec) else f
        for f in scene.fixtures
    ]
    return scene.model_copy(update={"fixtures": fixtures})


@SCENE_AXES.register("drawer_damping")
def _drawer_damping(scene: Scene, value: Any, target: str | None) -> Scene:
    """Scale the damping of drawer slides by value."""
    fixtures = [
        f.model_copy(update={"damping": f.damping * float(value)})
        if isinstance(f, DrawerSpec)
        else f
        for f in scene.fixtures
    ]
    return scene.model_copy(update={"fixtures": fixtures})


def _lights(scene: Scene) -> list[LightSpec]:
    if scene.lights:
        return list(scene.lights)
    return [LightSpec(name="key", pos=(0.6, -0.4, 2.0), dir=(-0.1, 0.2, -1.0), diffuse=(0.6,) * 3)]


@SCENE_AXES.register("light_intensity")
def _light_intensity(scene: Scene, value: Any, target: str | None) -> Scene:
    v = float(value)
    lights = [
        li.model_copy(update={"diffuse": tuple(c * v for c in li.diffuse)}) for li in _lights(scene)
    ]
    return scene.model_copy(update={"lights": lights})


@SCENE_AXES.register("light_direction")
def _light_direction(scene: Scene, value: Any, target: str | None) -> Scene:
    d = tuple(_vec(value, 3))
    lights = [li.model_copy(update={"dir": d}) for li in _lights(scene)]
    return scene.model_copy(update={"lights": lights})


@SCENE_AXES.register("light_color")
def _light_color(scene: Scene, value: Any, target: str | None) -> Scene:
    rgb = COLORS[value][:3] if isinstance(value, str) else tuple(_vec(value, 3))
    lights = [li.model_copy(update={"diffuse": rgb}) for li in _lights(scene)]
    return scene.model_copy(update={"lights": lights})


def _map_cameras(scene: Scene, target: str | None, fn: Callable[[CameraSpec], CameraSpec]) -> Scene:
    cams = [
        fn(c) if (target in (None, "*", c.name)) and c.mount == "world" else c
        for c in scene.cameras
    ]
    return scene.model_copy(update={"cameras": cams})


@SCENE_AXES.register("camera_shift")
def _camera_shift(scene: Scene, value: Any, target: str | None) -> Scene:
    """Move world cameras by an (x, y, z) offset, or by value m along x (keeping look-at)."""
    off = _vec(value, 3) if np.ndim(value) else np.array([float(value), 0.0, 0.0])
    return _map_cameras(
        scene,
        target,
        lambda c: c.model_copy(update={"pos": tuple(np.asarray(c.pos) + off)}),
    )


@SCENE_AXES.register("camera_look_shift")
def _camera_look(scene: Scene, value: Any, target: str | None) -> Scene:
    """Move the look-at point of world cameras (orientation jitter)."""
    off = _vec(value, 3) if np.ndim(value) else np.array([0.0, float(value), 0.0])

    def move(c: CameraSpec) -> CameraSpec:
        if c.look_at is None:
            return c
        return c.model_copy(update={"look_at": tuple(np.asarray(c.look_at) + off)})

    return _map_cameras(scene, target, move)


@SCENE_AXES.register("camera_fovy")
def _camera_fovy(scene: Scene, value: Any, target: str | None) -> Scene:
    """Widen (or narrow) the field of view of world cameras by value degrees."""
    return _map_cameras(
        scene, target, lambda c: c.model_copy(update={"fovy": c.fovy + float(value)})
    )


# ------------------------------------------------------------ robot and task


@SCENE_AXES.register("robot_init_noise")
def _robot_noise(scene: Scene, value: Any, target: str | None) -> Scene:
    robot = scene.robot.model_copy(update={"init_noise": float(value)})
    return scene.model_copy(update={"robot": robot})


@SCENE_AXES.register("instruction")
def _instruction(scene: Scene, value: Any, target: str | None) -> Scene:
    """Replace the instruction (a paraphrase)."""
    task = scene.task.model_copy(update={"instruction": str(value)})
    return scene.model_copy(update={"task": task})


@SCENE_AXES.register("instruction_template")
def _instruction_template(scene: Scene, value: Any, target: str | None) -> Scene:
    """Rephrase every task's instruction the same way: `value` holds `{instruction}`,
    e.g. "please {instruction}" (the nominal level is "{instruction}")."""
    text = str(value)
    if "{instruction}" not in text:
        raise ValueError(f"instruction_template {text!r} must contain '{{instruction}}'")
    task = scene.task.model_copy(
        update={"instruction": text.replace("{instruction}", scene.task.instruction)}
    )
    return scene.model_copy(update={"task": task})


@SCENE_AXES.register("control_hz")
def _control_hz(scene: Scene, value: Any, target: str | None) -> Scene:
    task = scene.task.model_copy(update={"control_hz": float(value)})
    return scene.model_copy(update={"task": task})


# ------------------------------------------------------------ runtime


@RUNTIME_AXES.register("state_noise")
def _state_noise(noise: RuntimeNoise, value: Any) -> RuntimeNoise:
    return replace(noise, state_noise=float(value))


@RUNTIME_AXES.register("image_noise")
def _image_noise(noise: RuntimeNoise, value: Any) -> RuntimeNoise:
    return replace(noise, image_noise=float(value))


@RUNTIME_AXES.register("image_blur")
def _image_blur(noise: RuntimeNoise, value: Any) -> RuntimeNoise:
    return replace(noise, image_blur=float(value))


@RUNTIME_AXES.register("action_noise")
def _action_noise(noise: RuntimeNoise, value: Any) -> RuntimeNoise:
    return replace(noise, action_noise=float(value))


@RUNTIME_AXES.register("action_latency")
def _action_latency(noise: RuntimeNoise, value: Any) -> RuntimeNoise:
    return replace(noise, action_latency=int(value))
