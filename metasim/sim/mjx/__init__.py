"""MJX backend: the handler API on JAX (`mujoco.mjx`), batched with `jit(vmap(...))`.

Same module names as `metasim.sim.mujoco`; `handler.BackendHandler` is what the backend
registry loads. Needs the `mjx` extra (`pip install -e .[mjx]`).
"""
