"""Every writer of an output file in the modules of eval (evaluate/), report, runs
(index/), `scene prebuild` (scene/), the CLI, compare, correlate, recon, collect and the
xchecks goes through `metasim.guards.replacing` /
`write_atomic` (a new file renamed over the target, never written through a symlink;
issue 47). Checked on the AST: a call that writes a file (`write_text`, `write_bytes`,
`open` for writing, `os.open`, a copy, a rename, a DuckDB file, `COPY ... TO`, a saved
model) must sit inside a `with replacing(...)` block or be on the allow-list below, each
entry with its reason; an entry that matches nothing fails too, so the list cannot go
stale."""

from __future__ import annotations

import ast
from pathlib import Path

import metasim
from tests.ast_scan import argument_text, dotted

ROOT = Path(metasim.__file__).resolve().parent
# every module of the verbs that write into a folder or file the user names: eval (the
# run folder), report (--html), runs, scene prebuild (--out), the CLI, compare (--plot,
# --html), correlate (--plot, --html), recon (--out), collect (out=); and the xchecks'
# --out folders (xcheck.jsonl, appended through metasim.appends, and the summaries)
PARTS = ("evaluate", "report", "index", "scene", "cli", "compare", "correlate", "recon")
MODULES = sorted(
    str(p.relative_to(ROOT)) for part in (*PARTS, "collect") for p in (ROOT / part).rglob("*.py")
)
MODULES += ["libero/checks/xcheck_run.py", "robosuite/cli.py", "appends.py"]
# (module, function, call) -> why it writes in place or is no output file
ALLOWED = {
    ("evaluate/store.py", "__init__", "os.open"): "RunLock: the lock is locked in place (a "
    "renamed file would let two writers lock different files); opened with O_NOFOLLOW",
    ("evaluate/store.py", "open_checked", "duckdb.connect"): "the append-only store is a "
    "DuckDB database committed in place per episode; a symlinked store is refused first",
    ("evaluate/salvage.py", "_move_aside", "rename"): "moves the user's damaged store "
    "aside within the run folder; its bytes are never written",
    ("evaluate/salvage.py", "read_damaged", "shutil.copyfile"): "a scratch copy in a "
    "private temporary folder, read and deleted",
    ("evaluate/salvage.py", "read_damaged", "duckdb.connect"): "opens that scratch copy",
    ("evaluate/resume.py", "check_resume", "os.open"): "the resume key's temporary file, "
    "created exclusively (O_EXCL | O_NOFOLLOW), then linked into place",
    ("evaluate/resume.py", "check_resume", "os.link"): "creates the key file only if it "
    "is absent (a link never replaces a file or follows a symlink): the first shard's wins",
    ("appends.py", "_open", "os.open"): "the helper of append-only results files: "
    "O_NOFOLLOW | O_NONBLOCK, a regular file checked on the open descriptor",
    ("scene/prebuilt.py", "export", "mujoco.mj_saveModel"): "into a private temporary "
    "folder; the bytes are then written through write_atomic",
    # collect's dataset: its own commit protocol (collect/dataset.py's module doc): a batch
    # stages copies in a folder it creates (mkdir refuses an existing one), and renames
    # of whole folders are the commit and undo points
    ("collect/dataset.py", "begin", "shutil.copy2"): "copies what LeRobot rewrites into "
    "the batch's fresh staging folder",
    ("collect/dataset.py", "begin", "write_text"): "the file list, into that fresh folder",
    ("collect/dataset.py", "begin", "os.rename"): "the staging folder renamed to pending: "
    "the batch opens",
    ("collect/dataset.py", "commit", "os.rename"): "LeRobot's new files moved in, then "
    "pending renamed away: the commit point",
    ("collect/dataset.py", "_restore", "shutil.copy2"): "undoes an open batch: the "
    "rewritten files copied back from pending",
    ("collect/dataset.py", "_restore", "os.rename"): "pending renamed away once undone",
    # recon's synthetic captures: test and benchmark fixtures written into a folder the
    # caller creates for them, never a user's output
    ("recon/synthetic.py", "_noise_texture", "save"): "a synthetic capture's texture",
    ("recon/synthetic.py", "_add_marker", "save"): "a synthetic capture's marker image",
    ("recon/synthetic.py", "write_rgbd_capture", "save"): "a synthetic capture's frames",
    ("recon/synthetic.py", "write_rgbd_capture", "np.save"): "a synthetic capture's depths",
    ("recon/synthetic.py", "write_rgbd_capture", "write_text"): "its camera and poses files",
}
WRITE_METHODS = {"write_text", "write_bytes", "rename", "symlink_to", "hardlink_to", "touch"}
WRITE_FUNCS = {
    "os.open", "os.rename", "os.replace", "os.link", "os.symlink", "shutil.copy",
    "shutil.copyfile", "shutil.copy2", "shutil.move", "shutil.copytree",
    "mujoco.mj_saveModel", "np.save", "np.savez", "np.savez_compressed",
}  # fmt: skip


def writer(call: ast.Call) -> str | None:
    """The name of the write `call` makes, or None."""
    name = dotted(call.func)
    if name == "dataclasses.replace":  # a copy of a dataclass, no file
        return None
    if name in WRITE_FUNCS:
        return name
    if name == "duckdb.connect" and (call.args or call.keywords):  # no args: in memory
        first = call.args[0] if call.args else None
        if isinstance(first, ast.Constant) and first.value == ":memory:":
            return None
        return name
    if name == "open" and len(call.args) > 1:
        mode = call.args[1]
        if not isinstance(mode, ast.Constant) or set(str(mode.value)) & set("wax+"):
            return "open"
    if isinstance(call.func, ast.Attribute):
        attr = call.func.attr
        if attr in WRITE_METHODS or attr in {"to_parquet", "savez", "save"}:
            return attr
        if attr == "replace" and len(call.args) == 1:  # Path.replace (str.replace takes 2)
            return attr
        if attr == "open" and call.args:
            mode = call.args[0]
            if isinstance(mode, ast.Constant) and set(str(mode.value)) & set("wax+"):
                return "open"
    return None


def sql_copy_to(call: ast.Call) -> bool:
    """An `execute("COPY ... TO ...")`: DuckDB writing a file."""
    if not (isinstance(call.func, ast.Attribute) and call.func.attr == "execute"):
        return False
    text = argument_text(call)
    return "COPY" in text and " TO " in text


def findings(module: str) -> list[tuple[str, str, int]]:
    """(function, write, line) of every write in `module` outside `with replacing`."""
    tree = ast.parse((ROOT / module).read_text())
    out: list[tuple[str, str, int]] = []

    def visit(node: ast.AST, func: str, guarded: bool) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            func = node.name
        if isinstance(node, ast.With) and any(
            isinstance(i.context_expr, ast.Call)
            and dotted(i.context_expr.func).endswith("replacing")
            for i in node.items
        ):
            guarded = True
        if isinstance(node, ast.Call) and not guarded:
            what = "COPY TO" if sql_copy_to(node) else writer(node)
            if what is not None:
                out.append((func, what, node.lineno))
        for child in ast.iter_child_nodes(node):
            visit(child, func, guarded)

    visit(tree, "<module>", False)
    return out


def test_output_writers_go_through_the_atomic_helper() -> None:
    unguarded, used = [], set()
    for module in MODULES:
        for func, what, line in findings(module):
            key = (module, func, what)
            if key in ALLOWED:
                used.add(key)
            else:
                unguarded.append(f"metasim/{module}:{line} {func}: {what}")
    assert not unguarded, (
        "write output files through metasim.guards.replacing/write_atomic (or allow-list "
        "the call with its reason): " + "; ".join(unguarded)
    )
    assert used == set(ALLOWED), f"allow-list entries that match nothing: {set(ALLOWED) - used}"


def test_the_scan_sees_a_plain_write() -> None:
    """The scan itself: a write outside the helper is found, one inside is not."""
    tree = ast.parse(
        "def f(p):\n    p.write_text('x')\n"
        "def g(p):\n    with replacing(p) as t:\n        t.write_text('x')\n"
    )
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and writer(n)]
    assert [dotted(c.func) for c in calls] == ["p.write_text", "t.write_text"]
    assert writer(ast.parse("s.replace('a', 'b')").body[0].value) is None  # type: ignore[attr-defined]
    assert sql_copy_to(ast.parse("c.execute(f'COPY (x) TO {y} (FORMAT parquet)')").body[0].value)  # type: ignore[attr-defined]
