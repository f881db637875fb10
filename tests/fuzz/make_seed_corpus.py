#!/usr/bin/env python3
"""Writes the fuzz harnesses' seed corpora (tests/fuzz/corpus/*) from the repository's configs
and from files built here byte by byte, independently of mantissa's own writers. Run it from
anywhere; it rewrites the seed-* files and leaves the inputs libFuzzer added alone."""
import gzip
import json
import pathlib
import struct
import zlib

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CORPUS = HERE / "corpus"


def write(kind, name, data):
    path = CORPUS / kind / ("seed-" + name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data if isinstance(data, bytes) else data.encode())


# --- config: the repository's configs (one document each), some with --set overrides -------
configs = [ROOT / "tests/apps/tiny-gpt.yaml", ROOT / "configs/gpt-kjv.yaml"]
configs += sorted((ROOT / "configs/fashion_mnist").glob("*.yaml"))
for p in configs:
    write("config", p.stem, p.read_text())
for p in sorted((ROOT / "tests/train/compat").glob("*.yaml")):
    for i, doc in enumerate(p.read_text().split("\n---\n")):
        write("config", f"compat-{p.stem}-{i}", doc)
tiny = (ROOT / "tests/apps/tiny-gpt.yaml").read_text()
write("config", "tiny-overrides", tiny + "\n%%\ntrainer.init.loop.max_steps=3\n"
      "trainer.init.precision.loss_scaling_factor=128\n"
      "trainer.init.schedulers[0]={CosineDecayLR: {initial_learning_rate: 0.01, "
      "end_learning_rate: 0.0, total_iters: 10}}")
write("config", "tiny-bad-override", tiny + "\n%%\ntrainer.init.optimizer.AdamW.lr=\n")
write("config", "anchors", "a: &x {b: [1, 2]}\ntrainer: {init: {model: *x}}\n")

# --- safetensors: an 8-byte little-endian header length, the JSON header, the data ---------
def safetensors(tensors, metadata=None):
    header, data = {}, b""
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    if metadata is not None:
        header["__metadata__"] = metadata
    text = json.dumps(header).encode()
    text += b" " * ((8 - (len(text) + 8) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + data


w = struct.pack("<6f", 1, 2, 3, 4, 5, 6)
m = struct.pack("<6f", 0.5, 0, 0, 0, 0, 0.25)
meta = {
    "format": "mantissa-checkpoint-2",
    "global_step": "5",
    "optimizer_step": "5",
    "config": tiny,
    "fp16_type": "float16",
    "train_loader": json.dumps({"epoch": 0, "position": 10}),
    "rng": json.dumps({"seed": 2, "counter": 40}),
    "scaler": json.dumps({"loss_scale": 32768.0, "steps_since_rescale": 5,
                          "overflows_since_rescale": 0, "num_skipped_steps": 0,
                          "hysteresis_left": 1, "scaling_stopped": False}),
    "crc32": json.dumps({"model.w": "%08x" % zlib.crc32(w),
                         "optimizer.w.exp_avg": "%08x" % zlib.crc32(m)}),
}
write("safetensors", "checkpoint", safetensors(
    {"model.w": ("F32", [2, 3], w), "optimizer.w.exp_avg": ("F32", [2, 3], m)}, meta))
write("safetensors", "dtypes", safetensors({
    "h": ("F16", [2], struct.pack("<2H", 0x3C00, 0xC000)),
    "b": ("BF16", [2], struct.pack("<2H", 0x3F80, 0x7F7F)),
    "e4": ("F8_E4M3", [2], bytes([0x38, 0x7E])),
    "e5": ("F8_E5M2", [2], bytes([0x3C, 0x7B])),
    "empty": ("F32", [0, 4], b""),
    "scalar": ("F32", [], struct.pack("<f", 7)),
}, {"note": "dtypes"}))
write("safetensors", "no-metadata", safetensors({"x": ("F32", [1], struct.pack("<f", 1))}))

# --- IDX: magic 00 00 08 <ndims>, big-endian sizes, unsigned bytes; plain and gzipped -------
def idx(dims, payload):
    return bytes([0, 0, 8, len(dims)]) + b"".join(struct.pack(">I", d) for d in dims) + payload


labels = idx([6], bytes([0, 1, 2, 9, 4, 5]))
images = idx([2, 4, 4], bytes(range(32)))
write("idx", "labels", labels)
write("idx", "images", images)
write("idx", "labels.gz", gzip.compress(labels, mtime=0))
write("idx", "images.gz", gzip.compress(images, mtime=0))
write("idx", "two-members.gz", gzip.compress(images[:20], mtime=0) + gzip.compress(images[20:], mtime=0))
write("idx", "four-dims", idx([1, 2, 2, 2], bytes(8)))
