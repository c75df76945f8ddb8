"""Build hook (the rest of the build is pyproject.toml): the data folders at the
repository root (assets, scenes, policies, perturbations, eval) go into the wheel as
`metasim/_data/`, so a plain `pip install .` (not editable) finds its built-in scenes,
policies, grids and eval configs (metasim/paths.py looks there when no checkout is beside
the package). An editable install reads them from the checkout itself."""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

DATA = ("assets", "scenes", "policies", "perturbations", "eval")


class BuildPyWithData(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        root = Path(__file__).resolve().parent
        for name in DATA:
            target = Path(self.build_lib) / "metasim" / "_data" / name
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(root / name, target, ignore=shutil.ignore_patterns("__pycache__"))


setup(cmdclass={"build_py": BuildPyWithData})
