"""A Meta-World task -> a typed metasim `Scene`.

`metaworld:<env name>` names a task (`metaworld:pick-place-v3`); its episodes start from
the package's parametric variations (`init_states`, recorded from the reference). The
scene is the package's own task XML split in two (`importer.model`): the Sawyer as a
mocap-driven robot and the rest as a `metaworld_world` fixture. Facts from the package
(docs/metaworld.md): 4-D action (x, y, z mocap delta x 0.01 m, gripper effort), five
2.5 ms physics steps per control step (80 Hz), `max_path_length` 500, the option block of
`scene/basic_scene.xml` (Euler, elliptic cones, Newton, 50 iterations, tolerance 1e-10,
dense Jacobian), its headlight and near plane, and the world cameras of
`objects/assets/xyz_base.xml`.
"""

from __future__ import annotations

from typing import Any

from metasim.metaworld.importer import model, paths, robot
from metasim.metaworld.importer.init_states import states_file
from metasim.scene.schema import Scene

CONTROL_HZ = 80.0  # 1 / (frame_skip 5 x 2.5 ms)
MAX_PATH_LENGTH = 500
CAMERA_SIZE = 480  # the package's default render size (width = height)


def scene_name(task: str) -> str:
    """`pick-place-v3` -> `metaworld_pick-place-v3` (a valid scene name)."""
    return "metaworld_" + task.replace(".", "_")


def instruction(task: str) -> str:
    """The task's words (Meta-World has no language instructions): `pick place`."""
    return task.removesuffix("-v3").replace("-", " ")


def partially_observable(benchmark: str) -> bool:
    """Whether `benchmark` hides the goal from the observation: the package's ML
    benchmarks do (`_ML_OVERRIDE = dict(partially_observable=True)`), the MT ones not."""
    return benchmark.startswith("ML")


def scene_dict(
    task: str, benchmark: str = "MT50", split: str = "train", states: bool = True
) -> dict[str, Any]:
    """The scene of `task` as plain data (what a YAML file of it would hold); its episodes
    start from the variations of `benchmark`'s `split` (recorded from the reference unless
    `states` is False: then from the XML's own configuration)."""
    facts = paths.task_facts(task)  # an unknown name fails here, listing the known ones

    def box(key: str) -> tuple[float, float, float]:
        x, y, z = (float(v) for v in facts[key])
        return (x, y, z)

    cams = [
        {
            "name": name,
            "pos": [float(x) for x in pos],
            "quat": [float(x) for x in quat],
            "fovy": fovy,
            "width": CAMERA_SIZE,
            "height": CAMERA_SIZE,
        }
        for name, (pos, quat, fovy) in model.cameras(task).items()
    ]
    return {
        "name": scene_name(task),
        "description": f"Meta-World {task} (metaworld==3.1.1), imported from its task XML",
        "robot": {"name": f"mjcf:{robot.robot_yaml(box('mocap_low'), box('mocap_high'))}"},
        "physics": {
            "timestep": 0.0025,
            "integrator": "euler",
            "cone": "elliptic",
            "iterations": 50,
            "tolerance": 1e-10,
            "jacobian": "dense",
            "equality_jdotv": False,  # step the mocap weld as the package's MuJoCo 3.3.0
            "floor": False,
        },
        "render": {"headlight_ambient": [0.4, 0.4, 0.4], "znear": 0.01},
        "fixtures": [
            {
                "type": "metaworld_world",
                "name": "world",
                "task": task,
                "partially_observable": partially_observable(benchmark),
            }
        ],
        "cameras": cams,
        "lights": model.lights(task),
        "task": {
            "instruction": instruction(task),
            "success": {"metaworld_success": {"task": task}},
            "control_hz": CONTROL_HZ,
            "time_limit": MAX_PATH_LENGTH / CONTROL_HZ,
            "success_reads": "forward",
            **({"init_states": states_file(task, benchmark, split)[1]} if states else {}),
        },
    }


def load_task(task: str, benchmark: str = "MT50", split: str = "train") -> Scene:
    """The typed scene of `task` (validated as a YAML scene is)."""
    return Scene.model_validate(scene_dict(task, benchmark, split))
