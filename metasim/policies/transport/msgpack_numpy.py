"""openpi's msgpack-numpy wire format, written from its specification (never pickles).

* ``np.ndarray`` → ``{"__ndarray__": True, "data": <C-order bytes>, "dtype": dtype.str,
  "shape": [..]}``
* numpy scalar → ``{"__npgeneric__": True, "data": <value>, "dtype": dtype.str}``

As in openpi's own encoder, the marker and field names are packed as msgpack *bin* (bytes) keys
and a scalar's ``data`` is its Python value (``.item()``), so the real ``openpi-client`` decodes
what we send. The decoder accepts both bytes and str keys, and a scalar ``data`` given either as
its value or as its raw bytes. Object, void (structured) and complex dtypes are refused both
ways. Malformed input raises :class:`~metasim.policies.transport.errors.DecodeError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgpack
import numpy as np

from metasim.policies.transport.errors import DecodeError

__all__ = ["DecodeError", "packb", "unpackb"]

_REFUSED_KINDS = {"O": "object", "V": "void/structured", "c": "complex"}
_ND = (b"__ndarray__", "__ndarray__")
_NG = (b"__npgeneric__", "__npgeneric__")


def _check_dtype(dtype: np.dtype[Any]) -> None:
    kind = _REFUSED_KINDS.get(dtype.kind)
    if kind is not None or dtype.hasobject:
        raise ValueError(
            f"unsupported numpy dtype {dtype} ({kind or 'object'}): msgpack-numpy carries only "
            "bool, integer, float, bytes, str and datetime dtypes"
        )


def _encode(obj: Any) -> Any:
    """msgpack ``default`` hook: numpy objects to marker dicts, subclasses to base types."""
    if isinstance(obj, np.ndarray):
        _check_dtype(obj.dtype)
        return {
            b"__ndarray__": True,
            b"data": obj.tobytes(),
            b"dtype": obj.dtype.str,
            b"shape": list(obj.shape),
        }
    if isinstance(obj, np.generic):
        _check_dtype(obj.dtype)
        value = obj.item()
        if type(value) not in (bool, int, float, str, bytes):
            value = obj.tobytes()  # datetime64 and similar: send the raw bytes
        return {b"__npgeneric__": True, b"data": value, b"dtype": obj.dtype.str}
    # strict_types=True routes subclasses of the builtin types here: send them as the base.
    if isinstance(obj, Mapping):
        return dict(obj)
    if isinstance(obj, list | tuple):
        return list(obj)
    if isinstance(obj, bool):
        return bool(obj)
    if isinstance(obj, int):
        return int(obj)
    if isinstance(obj, float):
        return float(obj)
    if isinstance(obj, str):
        return str(obj)
    if isinstance(obj, bytes):
        return bytes(obj)
    raise TypeError(f"cannot msgpack-encode an object of type {type(obj).__name__}")


def packb(obj: Any) -> bytes:
    """Encode ``obj`` (dicts, lists, scalars, numpy arrays/scalars) to msgpack bytes.

    Raises ValueError for refused dtypes or out-of-range integers, TypeError for types that
    have no msgpack form.
    """
    try:
        out = msgpack.packb(obj, default=_encode, use_bin_type=True, strict_types=True)
    except OverflowError as exc:
        raise ValueError(f"cannot msgpack-encode: {exc}") from None
    assert isinstance(out, bytes)
    return out


def _get(d: dict[Any, Any], name: str) -> Any:
    for key in (name.encode(), name):
        if key in d:
            return d[key]
    raise DecodeError(f"numpy marker dict lacks the {name!r} field")


def _decode_dtype(raw: Any) -> np.dtype[Any]:
    if isinstance(raw, bytes):
        raw = raw.decode("ascii", errors="replace")
    if not isinstance(raw, str):
        raise DecodeError(f"dtype must be a string, got {type(raw).__name__}")
    try:
        dtype = np.dtype(raw)
    except (TypeError, ValueError, SyntaxError) as exc:
        raise DecodeError(f"bad dtype {raw!r}: {exc}") from None
    try:
        _check_dtype(dtype)
    except ValueError as exc:
        raise DecodeError(str(exc)) from None
    if dtype.itemsize == 0:
        raise DecodeError(f"dtype {raw!r} has zero item size")
    return dtype


def _decode_ndarray(d: dict[Any, Any]) -> np.ndarray:
    dtype = _decode_dtype(_get(d, "dtype"))
    data = _get(d, "data")
    shape_raw = _get(d, "shape")
    if not isinstance(data, bytes):
        raise DecodeError(f"ndarray data must be bytes, got {type(data).__name__}")
    if not isinstance(shape_raw, list | tuple) or not all(
        type(n) is int and n >= 0 for n in shape_raw
    ):
        raise DecodeError(f"ndarray shape must be a list of non-negative ints, got {shape_raw!r}")
    shape = tuple(shape_raw)
    count = 1
    for n in shape:
        count *= n
    if count * dtype.itemsize != len(data):
        raise DecodeError(
            f"ndarray data has {len(data)} bytes, shape {shape} of {dtype} needs "
            f"{count * dtype.itemsize}"
        )
    # Copy so the result is writable and owns its memory.
    return np.frombuffer(data, dtype=dtype, count=count).reshape(shape).copy()


def _decode_generic(d: dict[Any, Any]) -> np.generic:
    dtype = _decode_dtype(_get(d, "dtype"))
    data = _get(d, "data")
    if isinstance(data, bytes) and dtype.kind not in "SU" and len(data) == dtype.itemsize:
        return np.frombuffer(data, dtype=dtype, count=1)[0].copy()
    if not isinstance(data, bool | int | float | str | bytes):
        raise DecodeError(f"numpy scalar data of type {type(data).__name__} is not supported")
    try:
        value = dtype.type(data)
    except (TypeError, ValueError, OverflowError) as exc:
        raise DecodeError(f"cannot make a {dtype} scalar from {data!r}: {exc}") from None
    assert isinstance(value, np.generic)
    return value


def _object_hook(d: dict[Any, Any]) -> Any:
    if any(k in d for k in _ND):
        return _decode_ndarray(d)
    if any(k in d for k in _NG):
        return _decode_generic(d)
    return d


def unpackb(data: bytes) -> Any:
    """Decode msgpack bytes, turning numpy marker dicts back into arrays and scalars.

    Raises :class:`DecodeError` for anything malformed (bad msgpack, trailing bytes, a marker
    dict with a wrong byte count or a refused dtype, ...).
    """
    if not isinstance(data, bytes | bytearray | memoryview):
        raise DecodeError(f"expected bytes, got {type(data).__name__}")
    try:
        return msgpack.unpackb(data, object_hook=_object_hook, raw=False)
    except DecodeError:
        raise
    except Exception as exc:  # msgpack raises a zoo: ExtraData, FormatError, ValueError, ...
        raise DecodeError(f"undecodable msgpack: {type(exc).__name__}: {exc}") from None
