#!/usr/bin/env python3
"""mantissa's PyTorch peer for the Fashion-MNIST models: the same model and step, in PyTorch.

    /opt/mantissa-peer/venv/bin/python bench/peer_torch_cnn.py [--model cnn|mlp]
        [--precision float32|bfloat16] [--compile] [--steps N] [--warmup N] [--threads N]
        [--batch N] [--conv1 C] [--conv2 C] [--json FILE]

--model cnn (the default) is mantissa's `cnn` (src/nn/models.cpp) with
configs/fashion_mnist/cnn-*.yaml's shapes: conv 1 -> conv1 channels (3 x 3, padding 1, bias),
ReLU, 2 x 2 max-pool, conv conv1 -> conv2 (the same), ReLU, 2 x 2 max-pool, flatten, Linear
7 * 7 * conv2 -> 10; 20,490 parameters at 16 / 32 channels (the count `mantissa bench train`
prints); AdamW lr 2e-3 as those configs. --model mlp is mantissa's `mlp` with
configs/fashion_mnist/mlp-*.yaml's shapes: Linear 784 -> 512, ReLU, 512 -> 256, ReLU, 256 -> 10
(535,818 parameters); AdamW lr 1e-3 as those configs. The loss is the mean cross-entropy, the
optimizer AdamW (eps 1e-8, weight_decay 0.01), a step is forward, backward, optimizer.step(),
zero_grad on a batch of --batch 28 x 28 images (default 128). The images are N(0, 1) and the labels uniform, drawn once
and fed every step: a step's cost does not depend on the pixels (mantissa's bench times the
real data; the work per step is the same).

  --precision float32   everything in float32.
  --precision bfloat16  the forward (and so its backward) under torch.autocast("cpu",
                        dtype=torch.bfloat16): convolutions and the linear layer in bfloat16 on
                        float32 master weights (PyTorch's CPU mixed precision).
  --compile             torch.compile(model) (inductor; compiled during the warm-up steps).

Timing: --warmup untimed steps, then --steps timed ones (time.perf_counter around each whole
step); the figure is the median step, printed as samples/s. --json FILE appends one JSON line.
"""
import argparse
import json
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Cnn(nn.Module):
    def __init__(self, c1, c2, classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(1, c1, 3, padding=1)
        self.conv2 = nn.Conv2d(c1, c2, 3, padding=1)
        self.fc = nn.Linear(7 * 7 * c2, classes)

    def forward(self, x):
        h = F.max_pool2d(F.relu(self.conv1(x)), 2, 2)
        h = F.max_pool2d(F.relu(self.conv2(h)), 2, 2)
        return self.fc(torch.flatten(h, 1))


class Mlp(nn.Module):
    def __init__(self, sizes=(784, 512, 256, 10)):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes, sizes[1:]))

    def forward(self, x):
        h = torch.flatten(x, 1)
        for i, layer in enumerate(self.layers):
            h = layer(h)
            if i + 1 < len(self.layers):
                h = F.relu(h)
        return h


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", choices=["cnn", "mlp"], default="cnn")
    ap.add_argument("--precision", choices=["float32", "bfloat16"], default="float32")
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--conv1", type=int, default=16)
    ap.add_argument("--conv2", type=int, default=32)
    ap.add_argument("--json")
    a = ap.parse_args()
    if a.steps < 1 or a.warmup < (1 if a.compile else 0) or a.threads < 1 or a.batch < 1:
        ap.error("--steps >= 1, --threads >= 1, --batch >= 1, --warmup >= 1 with --compile")
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    model = Cnn(a.conv1, a.conv2) if a.model == "cnn" else Mlp()
    params = sum(p.numel() for p in model.parameters())
    lr = 2e-3 if a.model == "cnn" else 1e-3
    opt = torch.optim.AdamW(model.parameters(), lr=lr, eps=1e-8, weight_decay=0.01)
    run = torch.compile(model) if a.compile else model
    x = torch.randn(a.batch, 1, 28, 28)
    y = torch.randint(0, 10, (a.batch,))

    def step():
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.precision == "bfloat16"):
            loss = F.cross_entropy(run(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss.item()

    for _ in range(a.warmup):
        step()
    times = []
    for _ in range(a.steps):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    med = statistics.median(times)
    variant = ("compiled" if a.compile else "eager")
    print(f"peer {a.model} ({params} parameters) torch {torch.__version__} {a.precision} {variant}, "
          f"{a.threads} threads: median step {med * 1e3:.2f} ms, {a.batch / med:.0f} samples/s")
    if a.json:
        with open(a.json, "a") as f:
            f.write(json.dumps({"peer": "torch", "model": a.model, "version": torch.__version__,
                                "precision": a.precision, "variant": variant, "threads": a.threads,
                                "parameters": params, "median_step_s": med,
                                "samples_per_s": a.batch / med}) + "\n")


if __name__ == "__main__":
    main()
