"""The readers of run folders and of prebuilt folders each go through their one
validating loader (issue 47), checked on the AST of every module of metasim:

- run folders (episodes.parquet, episodes.duckdb, manifest.json, summary.json): only
  `metasim.evaluate.run_files` (read_manifest, read_summary, read_episode_table), the
  store and its salvage (`evaluate/store.py`, `evaluate/salvage.py`: the lock, the
  marker, the DuckDB store) and `metasim runs`' scan read them;
- prebuilt folders (.mjb.gz, .init.npz, prebuilt.json, suites.json): only
  `metasim.inputs` (read_gzip, check_npz) and `guards.load_json`, called from
  `scene/prebuilt.py` / `scene/prebuilt_format.py`.

A function that names one of those files (a string, an f-string, or a constant holding
one) and reads a file directly (`read_text`, `read_bytes`, `open`, `json.load`,
`np.load`, `gzip.open`, a parquet or DuckDB read, a MuJoCo model load) must be in one of
those loaders or on the allow-list with its reason; an entry that matches nothing fails."""

from __future__ import annotations

import ast
from pathlib import Path

import metasim
from tests.ast_scan import argument_text, dotted

ROOT = Path(metasim.__file__).resolve().parent
RUN_FILES = ("episodes.parquet", "episodes.duckdb", "manifest.json", "summary.json")
PREBUILT_FILES = (".mjb.gz", ".init.npz", "prebuilt.json", "suites.json", ".mjb")
RUN_LOADERS = {"evaluate/run_files.py", "evaluate/store.py", "evaluate/salvage.py"}
PREBUILT_LOADERS = {"inputs.py"}
RAW_READS = {
    "read_text", "read_bytes", "json.load", "json.loads", "np.load", "numpy.load",
    "gzip.open", "gzip.decompress", "pq.read_table", "pq.ParquetFile", "pd.read_parquet",
    "duckdb.connect", "mujoco.MjModel.from_binary_path", "MjModel.from_binary_path",
    "load_json", "guards.load_json", "read_json",
}  # fmt: skip
# (module, function, file kind) -> why it reads such a file itself
ALLOWED = {
    ("evaluate/records.py", "load", "run"): "RunSummary.load is run_files.read_summary's "
    "validation (every field checked); load_json bounds size and depth",
    ("index/scan.py", "_read_json", "run"): "metasim runs' lenient listing: the manifest "
    "through run_files.read_manifest, summary.json through guards.load_json, a refusal "
    "becoming the run's listed problem instead of stopping the listing",
    ("index/query.py", "_create_episodes", "run"): "runs --sql reads only the "
    "episodes.parquet files that run_files.read_episode_table accepted (RunEntry.queryable)",
    ("scene/prebuilt.py", "export", "prebuilt"): "reads back the model it has just saved "
    "into its own private temporary folder",
    ("scene/prebuilt_format.py", "load_model", "prebuilt"): "MuJoCo loads the bytes "
    "inputs.read_gzip returned (a bounded stream), from memory, never the file",
}
# the calls that are the loaders themselves, per kind of file
LOADER_CALLS = {"run": set(), "prebuilt": {"load_json", "guards.load_json"}}


def raw_read(call: ast.Call) -> str | None:
    name = dotted(call.func)
    if name.endswith("duckdb.connect") and call.args:
        first = call.args[0]
        if isinstance(first, ast.Constant) and first.value == ":memory:":
            return None
    for r in RAW_READS:
        if name == r or name.endswith("." + r):
            return r
    if name == "open" or (isinstance(call.func, ast.Attribute) and call.func.attr == "open"):
        return "open"
    if isinstance(call.func, ast.Attribute) and call.func.attr in {"sql", "execute"}:
        text = argument_text(call)
        if "read_parquet" in text or "read_json" in text:
            return "SQL read"
    return None


def kind_of(text: str) -> str | None:
    if any(f in text for f in RUN_FILES):
        return "run"
    if any(text.endswith(f) or f in text for f in PREBUILT_FILES):
        return "prebuilt"
    return None


def constants() -> dict[str, str]:
    """Names bound anywhere in metasim to a string naming one of the files: kind."""
    out: dict[str, str] = {}
    for path in ROOT.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
                kind = kind_of(str(node.value.value))
                for t in node.targets:
                    if kind and isinstance(t, ast.Name):
                        out[t.id] = kind
    return out


def findings(module: str, named: dict[str, str]) -> set[tuple[str, str]]:
    """(function, kind) of each function of `module` that names a file and reads raw."""
    out: set[tuple[str, str]] = set()
    tree = ast.parse((ROOT / module).read_text())
    for func in ast.walk(tree):
        if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        kinds = set()
        for n in ast.walk(func):
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and kind_of(n.value):
                kinds.add(kind_of(n.value))
            if isinstance(n, ast.Name | ast.Attribute):
                key = n.id if isinstance(n, ast.Name) else n.attr
                if key in named:
                    kinds.add(named[key])
        reads = {raw_read(n) for n in ast.walk(func) if isinstance(n, ast.Call)} - {None}
        for kind in kinds:
            if reads - LOADER_CALLS[str(kind)]:
                out.add((func.name, str(kind)))
    return out


def scan() -> list[tuple[str, str, str]]:
    named = constants()
    hits = []
    for path in sorted(ROOT.rglob("*.py")):
        module = str(path.relative_to(ROOT))
        for func, kind in sorted(findings(module, named)):
            loaders = RUN_LOADERS if kind == "run" else PREBUILT_LOADERS
            if module not in loaders:
                hits.append((module, func, kind))
    return hits


if __name__ == "__main__":
    for h in scan():
        print(h)


# every load of a prebuilt model or array: the guard that bounds it first, in the same
# function (read_gzip: a bounded stream; check_npz: declared sizes; load_npy)
MODEL_LOADS = {"np.load", "numpy.load", "gzip.open", "gzip.decompress", "from_binary_path"}
GUARDS = {"read_gzip", "check_npz", "load_npy", "check_size", "regular_file"}
# (module, function) -> why its load needs no guard here
UNGUARDED_LOADS = {
    ("guards.py", "load_npy"): "the bounded loader itself (sizes checked from the header)",
    ("libero/importer/paths.py", "load_init_states"): "LIBERO's own installed init files "
    "(the benchmark package), read by the importer; the prebuilt copy goes through check_npz",
    ("metaworld/reference/init_states.py", "read"): "the reference states metasim's "
    "Meta-World importer wrote into its own cache",
    ("metaworld/checks/parity_fields.py", "reference_compile"): "a parity check's own "
    "output, written by the reference process it just ran",
    ("metaworld/checks/parity_fields.py", "live_diff"): "the same check's own output",
    ("recon/pipeline.py", "reconstruct"): "recon's own stage cache in its --out folder",
    ("recon/pipeline.py", "_poses_stage"): "recon's own stage cache",
    ("recon/pipeline.py", "_geometry_stage"): "recon's own stage cache",
}


def unguarded_loads() -> list[tuple[str, str]]:
    out = []
    for path in sorted(ROOT.rglob("*.py")):
        module = str(path.relative_to(ROOT))
        for func in ast.walk(ast.parse(path.read_text())):
            if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            names = {dotted(n.func) for n in ast.walk(func) if isinstance(n, ast.Call)}
            loads = {n for n in names if any(n == m or n.endswith("." + m) for m in MODEL_LOADS)}
            guarded = {n.rsplit(".", 1)[-1] for n in names} & GUARDS
            if loads and not guarded:
                out.append((module, func.name))
    return out


def test_run_and_prebuilt_files_are_read_through_their_loaders() -> None:
    hits = scan()
    bad = [
        f"metasim/{m} {f}: reads a {k} file itself" for m, f, k in hits if (m, f, k) not in ALLOWED
    ]
    assert not bad, (
        "read run folders through metasim.evaluate.run_files and prebuilt files through "
        "metasim.inputs / guards.load_json (or allow-list the function with its reason): "
        + "; ".join(bad)
    )
    assert set(hits) >= set(ALLOWED), (
        f"allow-list entries that match nothing: {set(ALLOWED) - set(hits)}"
    )


def test_the_scan_reaches_every_reading_verb() -> None:
    """The modules of compare, report, correlate, runs, eval's resume and prebuilt loading
    name a run or prebuilt file (a string or a constant holding one), so the scan's
    functions-that-name-a-file rule applies to them."""
    named = constants()
    naming = {
        str(p.relative_to(ROOT))
        for p in ROOT.rglob("*.py")
        if kind_of(p.read_text()) or set(named) & set(p.read_text().replace("(", " ").split())
    }
    assert {
        "compare/pairing.py", "correlate/runs.py", "report/data.py", "index/scan.py",
        "evaluate/resume_run.py", "scene/prebuilt_format.py",
    } <= naming, naming  # fmt: skip


def test_model_and_array_loads_are_bounded_first() -> None:
    hits = unguarded_loads()
    bad = [f"metasim/{m} {f}" for m, f in hits if (m, f) not in UNGUARDED_LOADS]
    assert not bad, (
        "bound the file first (inputs.read_gzip / check_npz / guards.load_npy): " + "; ".join(bad)
    )
    assert set(hits) >= set(UNGUARDED_LOADS), set(UNGUARDED_LOADS) - set(hits)


def test_the_scan_sees_a_raw_read() -> None:
    """The scan itself: a raw read of a run file is found, a call of the loader is not."""
    tree = ast.parse(
        "def f(d):\n    return json.loads((d / 'manifest.json').read_text())\n"
        "def g(d):\n    return read_manifest(d / 'manifest.json')\n"
        "def h(d):\n    con = duckdb.connect(':memory:')\n    return d / 'summary.json'\n"
    )
    reads = {
        f.name: {raw_read(n) for n in ast.walk(f) if isinstance(n, ast.Call)} - {None}
        for f in tree.body if isinstance(f, ast.FunctionDef)
    }  # fmt: skip
    assert reads == {"f": {"json.loads", "read_text"}, "g": set(), "h": set()}
    assert kind_of("x.mjb.gz") == "prebuilt" and kind_of("episodes.duckdb") == "run"
