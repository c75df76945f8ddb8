"""robosuite itself (1.4.0 on MuJoCo 3.17, in LIBERO's reference venv) as the reference
simulator: `worker.py` runs there, `simulator.py` drives it from metasim."""
