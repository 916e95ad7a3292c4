"""The Dask tests' synthetic safetensors checkpoints, written here (no downloads), and an independent reader."""

import json
import os
import struct

import ml_dtypes
import numpy as np

ST_DTYPES = {np.dtype(ml_dtypes.bfloat16): "BF16", np.dtype(np.float16): "F16", np.dtype(np.float32): "F32",
             np.dtype(np.float64): "F64", np.dtype(np.int64): "I64", np.dtype(np.uint8): "U8"}


def write_safetensors(path, tensors, metadata=None):
    """A safetensors file written by hand (the safetensors package's numpy writer has no bfloat16)."""
    header, pos, blobs = {}, 0, []
    if metadata:
        header["__metadata__"] = metadata
    for name, arr in tensors.items():
        b = np.ascontiguousarray(arr).tobytes()
        header[name] = {"dtype": ST_DTYPES[arr.dtype], "shape": list(arr.shape), "data_offsets": [pos, pos + len(b)]}
        blobs.append(b)
        pos += len(b)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def read_tensor(path, name):
    """(dtype string, shape, raw bytes) of one tensor of a safetensors file, parsed independently of the job."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        t = header[name]
        f.seek(8 + n + t["data_offsets"][0])
        return t["dtype"], tuple(t["shape"]), f.read(t["data_offsets"][1] - t["data_offsets"][0])


def header_of(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        return json.loads(f.read(n))


def bf16(rng, shape):
    x = rng.standard_normal(shape).astype(np.float32)
    x.reshape(-1)[::61] *= np.float32(300)
    return x.astype(ml_dtypes.bfloat16)


def make_checkpoint(folder, seed=0):
    """Three shards (one of them with a float16 and a float32 weight), norms, a bias, an int64 buffer, and the
    Hugging Face index JSON. Returns {tensor name: array}."""
    rng = np.random.default_rng(seed)
    shards = {
        "model-00001-of-00003.safetensors": {
            "embed.weight": bf16(rng, (96, 64)),
            "layers.0.attn.q.weight": bf16(rng, (128, 192)),
            "layers.0.norm.weight": bf16(rng, (192,)),
            "layers.0.attn.q.bias": bf16(rng, (128,)),
        },
        "model-00002-of-00003.safetensors": {
            "layers.0.mlp.up.weight": bf16(rng, (200, 128)),      # rows not a multiple of 64: a short last chunk
            "layers.0.mlp.down.weight": rng.standard_normal((64, 200)).astype(np.float16),
            "position_ids": np.arange(16, dtype=np.int64),
        },
        "model-00003-of-00003.safetensors": {
            "lm_head.weight": rng.standard_normal((72, 96)).astype(np.float32),
        },
    }
    os.makedirs(folder, exist_ok=True)
    weight_map, everything = {}, {}
    for shard, tensors in shards.items():
        write_safetensors(os.path.join(folder, shard), tensors, {"format": "pt"})
        for name in tensors:
            weight_map[name] = shard
        everything.update(tensors)
    with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": sum(a.nbytes for a in everything.values())}, "weight_map": weight_map},
                  f)
    return everything
