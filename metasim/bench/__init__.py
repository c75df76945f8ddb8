"""Benchmarks that print figures as ratios against a reference measured in the same run.

`physics` (the eval loop next to raw `mujoco.rollout`), `render` (camera frames/s next to a
bare `mujoco.Renderer`), `peers` (EnvPool's MuJoCo Playground next to metasim on the same
MJCF). `metasim bench <name>` runs them (`metasim.cli.bench_cmd`).
"""
