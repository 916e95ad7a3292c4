""".bin files as CANN's gen_data.py / compare flow writes them: raw little-endian element bytes
(``ndarray.tofile``), and a case folder of such files with a manifest.json. Shared by the op folders' CLI verbs,
``npu-emu compare`` and the ONNX runner."""

import argparse
import json
import os

import numpy as np


def read_bin(path, dtype, shape=None):
    """Raw little-endian .bin as written by CANN's gen_data.py (``ndarray.tofile``)."""
    from npu_emu.frontend.core import storage_dtype

    try:
        data = np.fromfile(path, dtype=storage_dtype(dtype))
    except FileNotFoundError:
        raise SystemExit(f"npu-emu: input file {path} does not exist; check the path") from None
    except IsADirectoryError:
        raise SystemExit(f"npu-emu: {path} is a directory; name the .bin file inside it") from None
    if shape is not None:
        want = int(np.prod(shape))
        if data.size != want:
            raise SystemExit(f"npu-emu: {path} holds {data.size} {dtype} elements, the shape {tuple(shape)} "
                             f"needs {want}; check --shape/--dtype")
        data = data.reshape(shape)
    return data


def write_bin(path, arr):
    """Raw little-endian bytes of ``arr`` (numpy or torch), as ``ndarray.tofile`` writes them."""
    from npu_emu.frontend.core import as_array

    d = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(d):
        raise SystemExit(f"npu-emu: the folder {d} for {path} does not exist; create it first")
    np.ascontiguousarray(as_array(arr, "output")).tofile(path)


def write_case(out_dir, head, inputs, outputs):
    """Write a case for ``npu-emu compare``: every array as OUT_DIR/<file name>, and manifest.json with ``head``
    (op, attributes, ...) and each file's shape and dtype. ``inputs`` / ``outputs``: {key: (file name, array)}."""
    manifest = dict(head, inputs={}, outputs={})
    for section, arrays in (("inputs", inputs), ("outputs", outputs)):
        for key, (fname, arr) in arrays.items():
            arr = np.asarray(arr)
            write_bin(os.path.join(out_dir, fname), arr)
            manifest[section][key] = {"file": fname, "shape": list(arr.shape), "dtype": str(arr.dtype)}
    with open(os.path.join(out_dir, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2)


def parse_shape(text):
    try:
        return tuple(int(t) for t in text.replace("x", ",").split(",") if t.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"shape {text!r} must look like 128,256 or 128x256") from None
