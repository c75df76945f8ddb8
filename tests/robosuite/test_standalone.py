"""robosuite's plug-in stands alone: its scenes' fixture kind (`type: mjcf`, an MJCF
file's part) is registered by robosuite itself, so a robosuite scene validates with no
LIBERO module imported."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def test_robosuite_registers_the_mjcf_fixture_kind_without_libero(tmp_path):
    code = textwrap.dedent(
        """
        import sys
        import metasim.registry as registry
        registry._plugins_loaded = True  # only what robosuite imports is registered
        import metasim.robosuite
        from metasim.scene.kinds import FIXTURE_KINDS
        from metasim.scene.schema import Scene
        names = [n for n, _ in FIXTURE_KINDS.in_order()]
        assert "mjcf" in names and "site" not in names, names
        scene = Scene.model_validate({
            "name": "rs",
            "fixtures": [{"type": "mjcf", "name": "world", "file": "w.xml", "lights": False}],
            "task": {"instruction": "lift", "success": {"rs_above": {"body": "cube", "z": 0.9}}},
        })
        assert type(scene.fixtures[0]).__module__ == "metasim.robosuite.fixtures"
        leaked = sorted(m for m in sys.modules if m.startswith("metasim.libero"))
        assert not leaked, leaked
        print("ok")
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]
