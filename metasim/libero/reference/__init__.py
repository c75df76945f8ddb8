"""LIBERO's reference simulator: robosuite 1.4.0 + LIBERO on MuJoCo 3.17 in its own venv
(`simulator`), its worker (`worker`, run inside that venv) and the model-field enumeration
both sides share (`model`)."""
