#!/usr/bin/env python3
"""Writes the fuzz harnesses' seed corpora (tests/fuzz/corpus/*) from the repository's configs
and from files built here byte by byte, independently of mantissa's own writers. Run it from
anywhere; it rewrites the seed-* files and leaves the inputs libFuzzer added alone, the
finding-* inputs (each once a finding, docs/reliability.md) and the run-* files: metrics and
route cache files written by mantissa itself (`mantissa train` of tests/apps/tiny-gpt.yaml in
cbfloat16, float16 with sampled steps, float16 falling back, mxfp4 and fp8, with
MANTISSA_ROUTE_CACHE set; each metrics file with its routes records cut to 3 products and its
sampled steps to 5 sites, to stay a few KB)."""
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

# --- metrics: metrics.jsonl lines as the documented records, optionally "%%" and
# throughput.jsonl lines (fuzz_metrics.cpp); hostile numbers at the edges --------------------
def lines(*records):
    return "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records)


def run(**over):
    r = {"format": "float16", "loss_scaling": "dynamic", "model": "gpt", "parameters": 26016,
         "unit": "tokens", "items_per_step": 64, "start_step": 0, "max_steps": 6, "seed": 2,
         "cpu": "Some CPU", "settings": [["loss_scaling_factor", "dynamic"],
                                         ["initial_loss_scale", "2^15"]]}
    r.update(over)
    return {"run": r}


def window(step, **over):
    w = {"step": step, "loss": 5.5 - 0.25 * step, "lr": 0.003, "loss_scale": 32768.0,
         "skipped_steps": 0, "grad_norm": 1.25, "tokens_per_s": 9000.0 + step, "peak_rss_mib": 80.5}
    w.update(over)
    return w


def evaluation(step, **over):
    e = {"eval_step": step, "loss": 5.0 - 0.1 * step, "steps": 2, "perplexity": 150.0}
    e.update(over)
    return e


def site(layer, role, **over):
    s = {"layer": layer, "op": "matmul", "role": role, "format": "float16", "elements": 4096,
         "flushed": 12, "subnormal": 30, "saturated": 0, "overflowed": 0, "nonfinite": 0,
         "snr_db": 73.5}
    s.update(over)
    return s


product = {"m": 96, "n": 64, "k": 32, "trans": "NT", "format": "float16", "passes": 3,
           "threads": "all", "route": "onednn_fp32", "source": "measured",
           "gflops": {"fp32": 20.5, "onednn_fp32": 31.25}}
conv = {"product": "conv_fwd 2 1 8 8 4 3 3 1 1 bias", "m": 4, "n": 128, "k": 9, "trans": "NN",
        "format": "float32", "passes": 1, "threads": "all", "route": "fp32", "source": "cached",
        "gflops": {"fp32": 3.5}}
throughput = lines(
    {"interleaved_throughput": "float16", "unit": "tokens", "items_per_s": 9000.0,
     "slowest_items_per_s": 8000.0, "fastest_items_per_s": 9500.0, "steps": 4},
    {"interleaved_throughput": "float32", "unit": "tokens", "items_per_s": 7000.0,
     "slowest_items_per_s": 6500.0, "fastest_items_per_s": 7100.0, "steps": 4})
write("metrics", "minimal", lines(run(), window(2)))
write("metrics", "every-kind", lines(
    run(same_bits_opt_levels=[0]), window(2), evaluation(2),
    {"skipped_step": 3, "loss_scale": 65536.0, "overflowed": ["wte.weight", "head.weight"],
     "first_nonfinite": {"op": "scale", "layer": "", "gradient": "input_grad"}},
    {"routes": 1, "products": [product, conv], "same_bits_opt_levels": [0, 1]},
    {"precision_stats": 2, "sites": [site("blocks.0.attn", "input"),
                                     site("blocks.0.attn", "grad", snr_db=None),
                                     site("head", "weight", format="e4m3", scale_min=0.5,
                                          scale_max=4.0)]},
    {"fallback_step": 3, "from": "float16", "to": "bfloat16",
     "reason": "loss scale stuck at its minimum 2^40 (on_stuck: fall_back)"},
    window(4, loss_scale=None, grad_norm=None), evaluation(4, accuracy=0.5, perplexity=None),
    {"end": 6, "outcome": "completed", "skipped_steps": 1, "last_skipped_step": 3,
     "signal": "", "checkpoint": "runs/x/step-6", "message": ""}) + "%%\n" + throughput)
write("metrics", "fp8", lines(
    run(format="bfloat16", fp8=True, recipe="fp8", layers=[["blocks.0.mlp", "fp8 e4m3"]]),
    window(2, fp8_overflows=3, fp8_underflows=40,
           fp8_tensors={"blocks.0.mlp.input": {"overflows": 3, "underflows": 40}})))
write("metrics", "resumed", lines(
    run(), window(2), window(4), run(start_step=2, format="float32", loss_scaling="none",
                                     settings=[["learning_rate", "0.01"]]),
    window(3), {"end": 3, "outcome": "interrupted", "skipped_steps": 0, "signal": "SIGTERM",
                "checkpoint": "runs/x/step-3", "message": ""}))
write("metrics", "eval-only", lines(evaluation(6), run(start_step=6, max_steps=8), window(8)))
write("metrics", "stopped", lines(
    run(format="float32", loss_scaling="none"), window(1, tokens_per_s=5.0), window(2),
    {"end": 2, "outcome": "error", "skipped_steps": 0, "signal": "", "checkpoint": "",
     "message": "a <b>tag</b> & \"quotes\" \u0000\u001b[31m red"}))
I64 = 2**63 - 1
write("metrics", "extreme-steps", lines(
    run(start_step=I64 - 8, max_steps=I64, seed=2**64 - 1, parameters=I64, items_per_step=I64),
    window(I64 - 4), window(I64, skipped_steps=I64), evaluation(I64),
    {"end": I64, "outcome": "completed", "skipped_steps": I64, "last_skipped_step": I64,
     "signal": "", "checkpoint": "", "message": ""}))
write("metrics", "extreme-values", lines(
    run(format="float32", loss_scaling="none"),
    window(1, loss=1e308, lr=-1e308, loss_scale=5e-324, grad_norm=1.7976931348623157e308,
           tokens_per_s=1e300, peak_rss_mib=1e308),
    window(2, loss=-1e308, lr=0.0, loss_scale=0.0, grad_norm=0.0, tokens_per_s=0.0),
    window(3, loss=None, lr=None, loss_scale=None, grad_norm=None, tokens_per_s=None,
           peak_rss_mib=None),
    evaluation(1, loss=1e308, perplexity=1e308, accuracy=-1e308),
    evaluation(2, loss=None, perplexity=None, accuracy=None),
    {"precision_stats": 1, "sites": [site("", "output", snr_db=-1e308, scale_min=0.0,
                                          scale_max=1e308, elements=I64, flushed=I64)]}))
write("metrics", "close-steps", lines(
    run(format="float32", loss_scaling="none", start_step=10**17 - 1),
    window(10**17, loss=1e17), window(10**17 + 16, loss=1e17 + 16)))
write("metrics", "throughput-only", throughput)
write("metrics", "deep-nesting", '{"run":' + "[" * 100 + "]" * 100 + "}\n")
write("metrics", "strings", lines(
    run(model="<script>alert(1)</script>", cpu="\u00e9\u4e2d\U0001f600 \u0000\u007f\u0085",
        settings=[["x\u0000y", "\u001b]0;title\u0007"], ["", ""]]),
    window(1), {"skipped_step": 2, "loss_scale": 1.0, "overflowed": ["a&b", "</svg>", ""]}))

# --- route_cache: the machine's route cache file, a header and one line per product class
# (kernels/route_cache.cpp): every thread kind, a convolution, an old line with one rate
# fewer, routes some CPUs lack, and lines that must be skipped ---------------------------------
write("route_cache", "lines",
      "# mantissa route cache: Some CPU (family 6 model 207), mantissa 0.1.0, routes 6\n"
      "2048 1536 384 NT bfloat16 1 all onednn_bf16 95.1 100.2 170.5 196.7 0\n"
      "256 512 128 NN float32 1 thread fp32 0 31.5 20.25 0 0 0\n"
      "256 256 64 NT bfloat16 1 head bf16 0 10 12 30 0 0\n"
      "2048 1536 384 TN cbfloat16 3 thread onednn_fp32 0 1.5 95.5 0 7\n"
      "conv_fwd 128 16 14 14 32 3 3 1 1 bias 32 25088 144 NN bfloat16 1 all fp32 0 1 1 0 0 0\n"
      "64 64 64 NN float16 3 all amx 0 1 2 3 4 500\n"
      "64 64 64 NN float32 1 all bf16 0 1 2 3 4 5\n")
write("route_cache", "hostile",
      b"64 64 64 NN bfloat16 1 all amx 0 1e300 1e-300 0 0 1e308\n"
      b"64 64 64 NN bfloat16 1 all fp32 0 nan 1 1 1 1\n"
      b"64 64 64 NN bfloat16 1 all fp32 0 -1 1 1 1 1\n"
      b"1099511627776 1099511627776 1099511627776 TT e5m2 4 all fp32 0 1 1 1 1 1\n"
      b"-0 0 0 NN e4m3 1 thread fp32 0 0 0 0 0 0\r\n"
      b"\n#\n   \n\x00\xff\xfe\n"
      b"64 64 64 NN bfloat16 1 all fp32 0 1 1 1 1 1 1 1\n")
