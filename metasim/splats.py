"""3D Gaussian splat files: the `.ply` layout that the INRIA 3DGS code, gsplat and
`ns-export gaussian-splat` write, read into the arrays MuJoCo Warp's ray tracer draws.

A splat file is a PLY point cloud, one vertex per Gaussian, with float properties:
`x y z` (centre), `f_dc_0..2` (degree-0 spherical-harmonic colour), optional
`f_rest_*` (higher degrees), `opacity` (a logit), `scale_0..2` (log standard deviations)
and `rot_0..3` (a quaternion w, x, y, z, not necessarily unit); `nx ny nz` and any other
property are ignored. `read_splat_ply` turns them into `Splats`: colour = 0.5 + C0 * f_dc
clipped to [0, 1], alpha = sigmoid(opacity), scale = exp(scale_i), unit quaternions.
MuJoCo Warp's splats have no view-dependent colour, so the `f_rest_*` coefficients are
dropped; `Splats.sh_rest` says how many per splat were. Formats `binary_little_endian`,
`binary_big_endian` and `ascii` are read; anything else is an input error naming the file
and the field (exit 2).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from metasim.errors import MetasimInputError
from metasim.inputs import regular_file
from metasim.yamlio import LIMITS, limit

LIMITS["METASIM_SPLAT_MAX_BYTES"] = 2 << 30  # one splat .ply file
SH_C0 = 0.28209479177387814  # the degree-0 spherical-harmonic constant
REQUIRED = (
    "x",
    "y",
    "z",
    "f_dc_0",
    "f_dc_1",
    "f_dc_2",
    "opacity",
    "scale_0",
    "scale_1",
    "scale_2",
    "rot_0",
    "rot_1",
    "rot_2",
    "rot_3",
)
_TYPES = {
    "char": "i1",
    "int8": "i1",
    "uchar": "u1",
    "uint8": "u1",
    "short": "i2",
    "int16": "i2",
    "ushort": "u2",
    "uint16": "u2",
    "int": "i4",
    "int32": "i4",
    "uint": "u4",
    "uint32": "u4",
    "float": "f4",
    "float32": "f4",
    "double": "f8",
    "float64": "f8",
}
_MAX_HEADER = 1 << 16


@dataclass
class Splats:
    """Gaussians in one frame: `position` (N, 3), `rotation` (N, 4) unit w-x-y-z,
    `scale` (N, 3) standard deviations in metres, `rgba` (N, 4) in [0, 1], all float32;
    `sh_rest`: higher-order colour coefficients per splat the file had (dropped)."""

    position: np.ndarray
    rotation: np.ndarray
    scale: np.ndarray
    rgba: np.ndarray
    sh_rest: int = 0

    def __len__(self) -> int:
        return int(self.position.shape[0])

    def transformed(self, pos: np.ndarray, quat: np.ndarray, scale: float = 1.0) -> Splats:
        """These splats moved into another frame: p' = R(quat) (scale p) + pos, each
        splat's rotation composed with `quat` (w, x, y, z) and its scale multiplied."""
        q = np.asarray(quat, dtype=np.float64)
        q = q / np.linalg.norm(q)
        rot = _quat_to_mat(q)
        position = (self.position.astype(np.float64) * scale) @ rot.T + np.asarray(pos)
        rotation = _quat_mul(q[None, :], self.rotation.astype(np.float64))
        return Splats(
            position.astype(np.float32),
            rotation.astype(np.float32),
            (self.scale * np.float32(scale)).astype(np.float32),
            self.rgba.copy(),
            self.sh_rest,
        )


def _quat_to_mat(q: np.ndarray) -> np.ndarray:
    w, x, y, z = q
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


def _quat_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    aw, ax, ay, az = (a[:, i] for i in range(4))
    bw, bx, by, bz = (b[:, i] for i in range(4))
    return np.stack(
        [
            aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
        ],
        axis=1,
    )


def _bad(path: Path, problem: str) -> MetasimInputError:
    return MetasimInputError(
        str(path),
        [problem],
        "Expected a 3D Gaussian splat .ply (the INRIA/gsplat/nerfstudio layout: "
        "x y z f_dc_0..2 opacity scale_0..2 rot_0..3 as float vertex properties)",
    )


def _header(path: Path, raw: bytes) -> tuple[str, int, list[tuple[str, str]], int]:
    """(format, vertex count, [(property, numpy type)], header length in bytes)."""
    end = raw.find(b"end_header\n", 0, _MAX_HEADER)
    if not raw.startswith(b"ply\n") or end < 0:
        raise _bad(path, "header: not a PLY file (no 'ply' ... 'end_header' header)")
    lines = raw[:end].decode("ascii", "replace").splitlines()
    fmt, count, props, element, seen_vertex = "", -1, [], "", False
    for line in lines[1:]:
        words = line.split()
        if not words or words[0] in ("comment", "obj_info"):
            continue
        if words[0] == "format" and len(words) >= 2:
            fmt = words[1]
        elif words[0] == "element" and len(words) == 3:
            element = words[1]
            if element == "vertex":
                if seen_vertex or not words[2].isdigit():
                    raise _bad(path, f"header: bad vertex element line {line!r}")
                count, seen_vertex = int(words[2]), True
            elif not seen_vertex:
                raise _bad(path, f"header: element {element!r} comes before 'vertex'")
        elif words[0] == "property" and element == "vertex":
            if len(words) != 3 or words[1] not in _TYPES:
                raise _bad(path, f"header: vertex property {line!r} is not a scalar number")
            props.append((words[2], _TYPES[words[1]]))
    if fmt not in ("binary_little_endian", "binary_big_endian", "ascii"):
        raise _bad(path, f"header: format {fmt or '(none)'!r} is not binary or ascii PLY")
    if count < 0:
        raise _bad(path, "header: no 'element vertex N' line")
    names = [p[0] for p in props]
    missing = [n for n in REQUIRED if n not in names]
    if missing:
        raise _bad(path, f"vertex properties {', '.join(missing)} are missing")
    return fmt, count, props, end + len(b"end_header\n")


def read_splat_ply(path: str | Path) -> Splats:
    """The Gaussians of the splat file `path` (module doc); bad files are input errors."""
    path = Path(path)
    cap = limit("METASIM_SPLAT_MAX_BYTES")
    if regular_file(path, "splat .ply file") > cap:
        raise MetasimInputError(
            str(path),
            [f"the splat file is over the limit of {cap} bytes (METASIM_SPLAT_MAX_BYTES)"],
            "Raise it with METASIM_SPLAT_MAX_BYTES=<bytes> if it is meant to be this large",
        )
    raw = path.read_bytes()
    fmt, count, props, start = _header(path, raw)
    if fmt == "ascii":
        rows = raw[start:].decode("ascii", "replace").split("\n")[:count]
        try:
            table = np.array([[float(v) for v in r.split()[: len(props)]] for r in rows])
        except ValueError:
            raise _bad(path, "ascii vertex rows: a value is not a number") from None
        if table.shape != (count, len(props)):
            raise _bad(path, f"ascii vertex rows: expected {count} rows of {len(props)} values")
        cols = {name: table[:, i] for i, (name, _) in enumerate(props)}
    else:
        order = "<" if fmt == "binary_little_endian" else ">"
        dtype = np.dtype([(name, order + t) for name, t in props])
        need = count * dtype.itemsize
        if len(raw) - start < need:
            raise _bad(
                path,
                f"vertex data: the header promises {count} vertices ({need} bytes), "
                f"the file holds {len(raw) - start} bytes after the header",
            )
        rec = np.frombuffer(raw, dtype=dtype, count=count, offset=start)
        cols = {name: rec[name].astype(np.float64) for name, _ in props}
    return _from_columns(path, cols, sum(n.startswith("f_rest_") for n, _ in props))


def _from_columns(path: Path, cols: dict[str, np.ndarray], sh_rest: int) -> Splats:
    for name in REQUIRED:
        if not np.all(np.isfinite(cols[name])):
            raise _bad(path, f"vertex property {name}: holds NaN or infinite values")
    position = np.stack([cols["x"], cols["y"], cols["z"]], axis=1)
    colour = np.clip(0.5 + SH_C0 * np.stack([cols[f"f_dc_{i}"] for i in range(3)], 1), 0, 1)
    alpha = 1.0 / (1.0 + np.exp(-np.clip(cols["opacity"], -60.0, 60.0)))
    log_scale = np.stack([cols[f"scale_{i}"] for i in range(3)], axis=1)
    if np.any(log_scale > 20.0):
        raise _bad(path, "vertex property scale_*: a log scale over 20 (a splat wider than 10^8 m)")
    rotation = np.stack([cols[f"rot_{i}"] for i in range(4)], axis=1)
    norm = np.linalg.norm(rotation, axis=1, keepdims=True)
    if np.any(norm < 1e-12):
        raise _bad(path, "vertex property rot_0..3: a zero quaternion")
    return Splats(
        position.astype(np.float32),
        (rotation / norm).astype(np.float32),
        np.exp(log_scale).astype(np.float32),
        np.concatenate([colour, alpha[:, None]], axis=1).astype(np.float32),
        sh_rest,
    )


def write_splat_ply(path: str | Path, splats: Splats) -> None:
    """`splats` as a binary little-endian splat file (the inverse of `read_splat_ply`;
    degree-0 colour only)."""
    n = len(splats)
    rgba = np.clip(splats.rgba.astype(np.float64), 1e-6, 1 - 1e-6)
    columns = {
        "x": splats.position[:, 0],
        "y": splats.position[:, 1],
        "z": splats.position[:, 2],
        **{f"f_dc_{i}": (rgba[:, i] - 0.5) / SH_C0 for i in range(3)},
        "opacity": np.log(rgba[:, 3] / (1 - rgba[:, 3])),
        **{f"scale_{i}": np.log(np.maximum(splats.scale[:, i], 1e-12)) for i in range(3)},
        **{f"rot_{i}": splats.rotation[:, i] for i in range(4)},
    }
    dtype = np.dtype([(name, "<f4") for name in REQUIRED])
    rec = np.empty(n, dtype=dtype)
    for name in REQUIRED:
        rec[name] = columns[name]
    head = "ply\nformat binary_little_endian 1.0\n" + f"element vertex {n}\n"
    head += "".join(f"property float {name}\n" for name in REQUIRED) + "end_header\n"
    Path(path).write_bytes(head.encode("ascii") + rec.tobytes())
