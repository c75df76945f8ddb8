"""The splat .ply reader and writer (metasim/splats.py): round trip, the INRIA encodings,
ascii and big-endian files, and every malformed file refused naming the field."""

from __future__ import annotations

import numpy as np
import pytest

from metasim.errors import MetasimInputError
from metasim.splats import REQUIRED, SH_C0, Splats, read_splat_ply, write_splat_ply


def _splats(n: int = 5, seed: int = 0) -> Splats:
    rng = np.random.default_rng(seed)
    rot = rng.normal(size=(n, 4))
    return Splats(
        rng.normal(size=(n, 3)).astype(np.float32),
        (rot / np.linalg.norm(rot, axis=1, keepdims=True)).astype(np.float32),
        rng.uniform(0.01, 0.2, size=(n, 3)).astype(np.float32),
        rng.uniform(0.05, 0.95, size=(n, 4)).astype(np.float32),
    )


def _write(path, props, rows, fmt="binary_little_endian", extra_head=""):
    head = f"ply\nformat {fmt} 1.0\n{extra_head}element vertex {len(rows)}\n"
    head += "".join(f"property float {p}\n" for p in props) + "end_header\n"
    if fmt == "ascii":
        body = "".join(" ".join(str(v) for v in r) + "\n" for r in rows).encode()
    else:
        order = "<" if fmt == "binary_little_endian" else ">"
        body = np.asarray(rows, dtype=order + "f4").tobytes()
    path.write_bytes(head.encode() + body)


def test_round_trip_keeps_every_array(tmp_path):
    s = _splats()
    write_splat_ply(tmp_path / "a.ply", s)
    back = read_splat_ply(tmp_path / "a.ply")
    assert len(back) == 5 and back.sh_rest == 0
    for name in ("position", "scale", "rgba"):
        np.testing.assert_allclose(getattr(back, name), getattr(s, name), rtol=1e-5, atol=1e-6)
    dots = np.abs(np.sum(back.rotation * s.rotation, axis=1))
    np.testing.assert_allclose(dots, 1.0, atol=1e-6)


@pytest.mark.parametrize("fmt", ["binary_little_endian", "binary_big_endian", "ascii"])
def test_inria_encodings_decoded(tmp_path, fmt):
    # f_dc 0 -> colour 0.5; opacity 0 -> alpha 0.5; log scale ln 0.1; rot (2,0,0,0) -> unit
    props = ["x", "y", "z", "nx", "ny", "nz", *REQUIRED[3:], "f_rest_0", "f_rest_1", "f_rest_2"]
    row = [1, 2, 3, 0, 0, 0, 0, 1 / SH_C0, -10, 0, np.log(0.1), np.log(0.2), 0, 2, 0, 0, 0]
    _write(tmp_path / "a.ply", props, [[*row, 0.3, 0.1, 0.2]], fmt)
    s = read_splat_ply(tmp_path / "a.ply")
    np.testing.assert_allclose(s.position[0], [1, 2, 3])
    np.testing.assert_allclose(s.rgba[0], [0.5, 1.0, 0.0, 0.5], atol=1e-6)
    np.testing.assert_allclose(s.scale[0], [0.1, 0.2, 1.0], rtol=1e-5)
    np.testing.assert_allclose(s.rotation[0], [1, 0, 0, 0])
    assert s.sh_rest == 3


def test_transform_moves_positions_and_rotations():
    s = _splats(3)
    quarter = np.array([np.cos(np.pi / 4), 0, 0, np.sin(np.pi / 4)])  # 90 degrees about z
    t = s.transformed(np.array([1.0, 0, 0]), quarter, scale=2.0)
    x, y, z = (s.position[:, i] * 2 for i in range(3))
    np.testing.assert_allclose(t.position, np.stack([1 - y, x, z], 1), atol=1e-5)
    np.testing.assert_allclose(t.scale, s.scale * 2, rtol=1e-6)
    back = t.transformed(np.zeros(3), quarter * [1, -1, -1, -1])
    assert np.allclose(np.abs(np.sum(back.rotation * s.rotation, 1)), 1, atol=1e-5)


@pytest.mark.parametrize(
    "case, needle",
    [
        ("not_ply", "not a PLY file"),
        ("missing", "rot_3"),
        ("truncated", "the header promises 2 vertices"),
        ("format", "format 'binary_weird'"),
        ("nan", "opacity: holds NaN"),
        ("zero_rot", "a zero quaternion"),
        ("ascii_text", "not a number"),
        ("list_prop", "is not a scalar number"),
    ],
)
def test_malformed_files_name_the_field(tmp_path, case, needle):
    path = tmp_path / "bad.ply"
    good = [0.0] * 10 + [1.0, 0, 0, 0]
    if case == "not_ply":
        path.write_bytes(b"hello\n")
    elif case == "missing":
        _write(path, REQUIRED[:-1], [good[:-1]])
    elif case == "truncated":
        _write(path, REQUIRED, [good])
        path.write_bytes(path.read_bytes().replace(b"vertex 1", b"vertex 2"))
    elif case == "format":
        _write(path, REQUIRED, [good], fmt="binary_little_endian")
        path.write_bytes(path.read_bytes().replace(b"binary_little_endian", b"binary_weird"))
    elif case == "nan":
        _write(path, REQUIRED, [[*good[:6], float("nan"), *good[7:]]])
    elif case == "zero_rot":
        _write(path, REQUIRED, [[*good[:10], 0, 0, 0, 0]])
    elif case == "ascii_text":
        _write(path, REQUIRED, [good], fmt="ascii")
        path.write_bytes(path.read_bytes().replace(b"end_header\n0.0", b"end_header\nabc"))
    elif case == "list_prop":
        _write(path, REQUIRED, [good], extra_head="")
        path.write_bytes(
            path.read_bytes().replace(b"property float x\n", b"property list uchar int x\n")
        )
    with pytest.raises(MetasimInputError) as err:
        read_splat_ply(path)
    assert needle in str(err.value) and str(path) in str(err.value)


def test_size_limit_and_non_regular_file(tmp_path, monkeypatch):
    write_splat_ply(tmp_path / "a.ply", _splats())
    monkeypatch.setenv("METASIM_SPLAT_MAX_BYTES", "100")
    with pytest.raises(MetasimInputError, match="METASIM_SPLAT_MAX_BYTES"):
        read_splat_ply(tmp_path / "a.ply")
    with pytest.raises(MetasimInputError, match="regular file"):
        read_splat_ply(tmp_path)
