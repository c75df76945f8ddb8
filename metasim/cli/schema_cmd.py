"""`metasim schema summary|scene`: the JSON Schema of a file metasim writes or reads."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

from metasim.cli.verbs import verb


def _summary() -> dict[str, Any]:
    from metasim.evaluate.records import RunSummary

    return RunSummary.model_json_schema()


def _scene() -> dict[str, Any]:
    from metasim.scene.schema import Scene

    return Scene.model_json_schema(by_alias=True)


SCHEMAS: dict[str, Callable[[], dict[str, Any]]] = {
    "summary": _summary,  # RUN_DIR/summary.json of `metasim eval`
    "scene": _scene,  # scene YAML files (also `metasim scene schema`)
}


def add_parser(verbs: Any) -> None:
    sch = verbs.add_parser("schema", help="print the JSON Schema of summary.json or scene files")
    sch.add_argument("what", choices=sorted(SCHEMAS))


def run(args: argparse.Namespace) -> int:
    print(json.dumps(SCHEMAS[args.what](), indent=2))
    return 0


verb("schema", add_parser, run)
