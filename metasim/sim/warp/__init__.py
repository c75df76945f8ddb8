"""MuJoCo Warp backend (`mujoco-warp` on NVIDIA Warp): the CPU device, or CUDA when present."""
