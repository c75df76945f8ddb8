"""robosuite task -> typed `Scene`: the export from robosuite itself (`export.py`), the
scene built on it (`scene.py`) and the `robosuite:` task source (`source.py`)."""
