#!/usr/bin/env python3
"""mantissa's PyTorch peer: the GPT of a mantissa config, trained in PyTorch on this CPU.

    python bench/peer_torch_gpt.py [--config configs/bench/gpt-ref.yaml]
        [--precision float32|bfloat16] [--attention fused|explicit] [--compile]
        [--steps N] [--warmup N] [--threads N] [--json FILE]

The model is built from the config's trainer.init.model block with the shapes, layout and
initialisation of mantissa's Gpt (src/nn/models.cpp, src/nn/layers.cpp), so that its parameter
count equals the one `mantissa bench train --config FILE` prints:
  token and learned position embeddings (added), dropout, num_hidden_layers pre-LN blocks
    x + dropout(proj(attention(qkv(ln1(x)))))   qkv one Linear d -> 3d (q | k | v column thirds,
                                                 each split into num_heads heads), causal
    x + dropout(out(gelu(fc(ln2(x)))))          fc d -> filter_size, out filter_size -> d,
                                                 GELU in its tanh form, as mantissa's
  a final LayerNorm, then a bias-free head d -> vocab (wte's weight when tie_embeddings).
  Every Linear but the head has a bias; LayerNorm eps 1e-5. Init as mantissa's (GPT-2):
  N(0, initializer_range) weights, N(0, initializer_range / sqrt(2 L)) for proj and out,
  biases 0, LayerNorm weight 1 and bias 0. Dropout is on the residual branches and after the
  embeddings only (none inside the attention), as in mantissa.
The loss is the mean next-token cross-entropy over batch x context tokens, the optimizer
PyTorch's AdamW with the config's trainer.init.optimizer.AdamW settings (a missing key takes
mantissa's default for it: the vendor's eps 1e-6 and weight_decay 0, lr 1e-3), and a step is
grad_accum_steps micro-batches of trainer.fit.train_dataloader's batch_size x context tokens,
forward, backward, then optimizer.step() and zero_grad. The tokens are uniformly random ids
below vocab_size, drawn once and fed every step (the cost of a step does not depend on the
text): the loss starts near ln(vocab) and falls as the model memorizes that batch, which shows
that it trains and nothing more. The rest of the config (the dataset, the precision block, the
loop's length, checkpoints, logging) is not read: --precision sets the peer's precision.

  --precision float32   everything in float32.
  --precision bfloat16  the forward (and so its backward) under torch.autocast("cpu",
                        dtype=torch.bfloat16): matmuls in bfloat16 on float32 master weights,
                        AdamW in float32. This is PyTorch's CPU mixed precision, AMP.
  --attention fused     F.scaled_dot_product_attention(q, k, v, is_causal=True), as nanoGPT.
  --attention explicit  softmax(q k^T / sqrt(head_dim) with the future masked to -inf) v,
                        the T x T scores in memory, as minGPT.
  --compile             torch.compile(model) (inductor; its compilation happens during the
                        warm-up steps, so give at least 1 of them).

Timing: --warmup untimed steps, then --steps timed ones (time.perf_counter around each whole
step); the figure is the median step. Peak RSS is the process's (getrusage ru_maxrss), which
includes torch.compile's compiler when --compile. --json FILE appends one JSON line.
"""
import argparse
import json
import math
import os
import platform
import re
import resource
import statistics
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_CONFIG = os.path.join(REPO, "configs", "bench", "gpt-ref.yaml")


class ConfigError(Exception):
    pass


# --- The config: PyYAML when the peer's python has it, else a parser for the subset the
# --- configs use (block mappings by indentation, plain scalars, one-line {k: v, ...} maps).
def _scalar(text, where):
    t = text.strip()
    if len(t) >= 2 and t[0] == t[-1] and t[0] in "'\"":
        return t[1:-1]
    low = t.lower()
    if low in ("true", "yes", "on"):
        return True
    if low in ("false", "no", "off"):
        return False
    if low in ("null", "~", ""):
        return None
    if t.startswith("[") or t.startswith("{"):
        raise ConfigError(f"{where}: '{t}' is a flow collection this minimal parser does not read"
                          " here (install PyYAML into the peer's python)")
    try:
        return int(t)
    except ValueError:
        pass
    try:
        return float(t)
    except ValueError:
        return t


def _strip_comment(line):
    out, quote = [], None
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1] in " \t"):
            break
        out.append(ch)
    return "".join(out).rstrip()


def _flow_map(text, where):
    inner = text.strip()[1:-1].strip()
    result = {}
    if not inner:
        return result
    for part in inner.split(","):
        if ":" not in part:
            raise ConfigError(f"{where}: '{part.strip()}' in {text.strip()} is not 'key: value'")
        k, v = part.split(":", 1)
        result[k.strip()] = _scalar(v, f"{where}.{k.strip()}")
    return result


def parse_minimal_yaml(text, path):
    root = {}
    stack = [(-1, root)]  # (indent, mapping)
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = _strip_comment(raw)
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        if "\t" in line[: len(line) - len(line.lstrip())]:
            raise ConfigError(f"{where}: tab in the indentation")
        indent = len(line) - len(line.lstrip())
        body = line.strip()
        if body.startswith("- "):
            raise ConfigError(f"{where}: lists are beyond this minimal parser (install PyYAML)")
        if ":" not in body:
            raise ConfigError(f"{where}: '{body}' is not 'key: value'")
        key, value = body.split(":", 1)
        key, value = key.strip().strip("'\""), value.strip()
        while stack and indent <= stack[-1][0]:
            stack.pop()
        parent = stack[-1][1]
        if key in parent:
            raise ConfigError(f"{where}: key '{key}' given twice")
        if value == "":
            parent[key] = {}
            stack.append((indent, parent[key]))
        elif value.startswith("{") and value.endswith("}"):
            parent[key] = _flow_map(value, where)
        else:
            parent[key] = _scalar(value, where)
    return root


def load_config(path):
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise ConfigError(f"{path}: cannot read it ({e.strerror})")
    try:
        import yaml  # PyYAML, when installed
    except ImportError:
        return parse_minimal_yaml(text, path), "minimal parser"
    try:
        return yaml.safe_load(text) or {}, "PyYAML " + yaml.__version__
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: not valid YAML ({e})")


def section(node, dotted, path, required=True):
    cur = node
    for part in dotted.split("."):
        if not isinstance(cur, dict) or part not in cur:
            if required:
                raise ConfigError(f"{path}: {dotted}: missing")
            return {}
        cur = cur[part]
    if not isinstance(cur, dict):
        raise ConfigError(f"{path}: {dotted}: expected a mapping")
    return cur


def take(block, key, where, kind, default=None, required=False, low=None):
    if key not in block:
        if required:
            raise ConfigError(f"{where}.{key}: missing")
        return default
    v = block[key]
    if kind is bool:
        if not isinstance(v, bool):
            raise ConfigError(f"{where}.{key}: {v!r} (expected true or false)")
        return v
    if kind is int:
        if isinstance(v, bool) or not isinstance(v, int):
            raise ConfigError(f"{where}.{key}: {v!r} (expected an integer)")
    elif kind is float:
        if isinstance(v, str):  # PyYAML (YAML 1.1) reads 1e-8, without a dot, as a string
            try:
                v = float(v)
            except ValueError:
                pass
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ConfigError(f"{where}.{key}: {v!r} (expected a number)")
        v = float(v)
    if low is not None and v < low:
        raise ConfigError(f"{where}.{key}: {v} must be >= {low}")
    return v


def read_config(path):
    doc, parser = load_config(path)
    init = section(doc, "trainer.init", path)
    m = section(init, "model", path)
    w = f"{path}: trainer.init.model"
    if m.get("name") != "gpt":
        raise ConfigError(f"{w}.name: {m.get('name')!r} (the peer builds only gpt)")
    known = {"name", "vocab_size", "max_position_embeddings", "hidden_size", "num_hidden_layers",
             "num_heads", "filter_size", "dropout_rate", "tie_embeddings", "initializer_range"}
    for k in m:
        if k not in known:
            raise ConfigError(f"{w}.{k}: a key the peer does not know (it knows {sorted(known)})")
    # Defaults: mantissa's GptConfig (include/mantissa/nn/models.hpp).
    c = dict(
        vocab_size=take(m, "vocab_size", w, int, 256, low=1),
        max_position_embeddings=take(m, "max_position_embeddings", w, int, 256, low=1),
        hidden_size=take(m, "hidden_size", w, int, 384, low=1),
        num_hidden_layers=take(m, "num_hidden_layers", w, int, 6, low=1),
        num_heads=take(m, "num_heads", w, int, 6, low=1),
        filter_size=take(m, "filter_size", w, int, 1536, low=1),
        dropout_rate=take(m, "dropout_rate", w, float, 0.0, low=0.0),
        tie_embeddings=take(m, "tie_embeddings", w, bool, False),
        initializer_range=take(m, "initializer_range", w, float, 0.02, low=0.0),
    )
    if c["hidden_size"] % c["num_heads"]:
        raise ConfigError(f"{w}.num_heads: {c['num_heads']} must divide hidden_size {c['hidden_size']}")
    if c["dropout_rate"] >= 1:
        raise ConfigError(f"{w}.dropout_rate: {c['dropout_rate']} must be in [0, 1)")

    o = section(init, "optimizer", path)
    w = f"{path}: trainer.init.optimizer"
    if len(o) != 1 or str(next(iter(o))).lower() != "adamw":
        raise ConfigError(f"{w}: {sorted(o)} (the peer runs AdamW only: {{AdamW: {{...}}}})")
    name = next(iter(o))
    a = o[name] or {}
    w = f"{w}.{name}"
    if "lr" in a and "learning_rate" in a:
        raise ConfigError(f"{w}.lr: also given as learning_rate: set one")
    for k in a:
        if k not in {"learning_rate", "lr", "beta1", "beta2", "betas", "eps", "weight_decay",
                     "amsgrad", "correct_bias", "bias_correction"}:
            raise ConfigError(f"{w}.{k}: a key the peer does not map onto torch.optim.AdamW")
    # Defaults: mantissa's AdamW (include/mantissa/optim/optimizer_settings.hpp).
    opt = dict(
        lr=take(a, "lr" if "lr" in a else "learning_rate", w, float, 1e-3, low=0.0),
        beta1=take(a, "beta1", w, float, 0.9),
        beta2=take(a, "beta2", w, float, 0.999),
        eps=take(a, "eps", w, float, 1e-6, low=0.0),
        weight_decay=take(a, "weight_decay", w, float, 0.0, low=0.0),
        amsgrad=take(a, "amsgrad", w, bool, False),
    )
    if "betas" in a:
        b = a["betas"]
        if "beta1" in a or "beta2" in a:
            raise ConfigError(f"{w}.betas: beta1 or beta2 is given too: set one spelling")
        if not (isinstance(b, list) and len(b) == 2 and all(isinstance(x, (int, float)) for x in b)):
            raise ConfigError(f"{w}.betas: {b!r} (expected a list of two numbers)")
        opt["beta1"], opt["beta2"] = float(b[0]), float(b[1])
    for k in ("correct_bias", "bias_correction"):
        if take(a, k, w, bool, True) is False:
            raise ConfigError(f"{w}.{k}: false (torch.optim.AdamW always corrects the bias)")

    d = section(doc, "trainer.fit.train_dataloader", path)
    w = f"{path}: trainer.fit.train_dataloader"
    # Defaults: mantissa's DataloaderConfig (include/mantissa/config/config.hpp).
    batch = take(d, "batch_size", w, int, 8, low=1)
    context = take(d, "context", w, int, 128, low=1)
    if context > c["max_position_embeddings"]:
        raise ConfigError(f"{w}.context: {context} exceeds trainer.init.model."
                          f"max_position_embeddings {c['max_position_embeddings']}")
    loop = section(init, "loop", path, required=False)
    accum = take(loop, "grad_accum_steps", f"{path}: trainer.init.loop", int, 1, low=1)
    seed = take(init, "seed", f"{path}: trainer.init", int, 0)
    return dict(model=c, optimizer=opt, batch=batch, context=context, accum=accum, seed=seed,
                parser=parser)


# --- The model.
def build_model(torch, c, attention):
    nn, F = torch.nn, torch.nn.functional
    d, heads, L = c["hidden_size"], c["num_heads"], c["num_hidden_layers"]
    head_dim = d // heads
    explicit = attention == "explicit"

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1 = nn.LayerNorm(d, eps=1e-5)
            self.qkv = nn.Linear(d, 3 * d)
            self.proj = nn.Linear(d, d)
            self.ln2 = nn.LayerNorm(d, eps=1e-5)
            self.fc = nn.Linear(d, c["filter_size"])
            self.out = nn.Linear(c["filter_size"], d)
            self.drop = nn.Dropout(c["dropout_rate"])

        def forward(self, x):
            B, T, C = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
            q, k, v = (t.view(B, T, heads, head_dim).transpose(1, 2) for t in (q, k, v))
            if explicit:
                att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(head_dim))
                future = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
                y = att.masked_fill(future, float("-inf")).softmax(dim=-1) @ v
            else:
                y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            y = y.transpose(1, 2).reshape(B, T, C)
            x = x + self.drop(self.proj(y))
            return x + self.drop(self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh")))

    class Gpt(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(c["vocab_size"], d)
            self.wpe = nn.Embedding(c["max_position_embeddings"], d)
            self.drop = nn.Dropout(c["dropout_rate"])
            self.blocks = nn.ModuleList(Block() for _ in range(L))
            self.lnf = nn.LayerNorm(d, eps=1e-5)
            self.head = None if c["tie_embeddings"] else nn.Linear(d, c["vocab_size"], bias=False)
            std = c["initializer_range"]
            for mod in self.modules():
                if isinstance(mod, (nn.Linear, nn.Embedding)):
                    nn.init.normal_(mod.weight, 0.0, std)
                    if getattr(mod, "bias", None) is not None:
                        nn.init.zeros_(mod.bias)
            for b in self.blocks:  # residual projections
                nn.init.normal_(b.proj.weight, 0.0, std / math.sqrt(2 * L))
                nn.init.normal_(b.out.weight, 0.0, std / math.sqrt(2 * L))

        def forward(self, idx, targets):
            B, T = idx.shape
            x = self.drop(self.wte(idx) + self.wpe(torch.arange(T, device=idx.device)))
            for b in self.blocks:
                x = b(x)
            h = self.lnf(x)
            logits = self.head(h) if self.head is not None else F.linear(h, self.wte.weight)
            return F.cross_entropy(logits.reshape(B * T, -1).float(), targets.reshape(B * T))

    return Gpt()


# --- The peer's build, for the report.
def build_info(torch):
    cfg = torch.__config__.show()

    def line(pattern):
        for l in cfg.splitlines():
            if re.search(pattern, l):
                return l.strip(" -")
        return None

    mkl = line(r"Math Kernel Library|Intel\(R\) oneAPI Math Kernel")
    onednn = line(r"oneDNN|MKL-DNN|Intel\(R\) MKL-DNN")
    blas = re.search(r"\bBLAS_INFO=([^,\s]*)", cfg)
    cap = torch.backends.cpu.get_cpu_capability() if hasattr(torch.backends, "cpu") else "?"
    where = os.path.dirname(torch.__file__)
    site = os.path.dirname(where)
    dist = [n for n in os.listdir(site) if re.fullmatch(r"torch-[^-]+\.dist-info", n)]
    if where.startswith("/usr/lib/python3/"):
        origin = "Debian's python3-torch"
    elif dist:
        try:
            with open(os.path.join(site, dist[0], "INSTALLER")) as f:
                installer = f.read().strip()
        except OSError:
            installer = "?"
        origin = f"wheel installed by {installer}"
    else:
        origin = "not an installed distribution (a source tree?)"
    cpu, flags = "?", []
    try:
        with open("/proc/cpuinfo") as f:
            for l in f:
                if l.startswith("model name") and cpu == "?":
                    cpu = l.split(":", 1)[1].strip()
                elif l.startswith("flags") and not flags:
                    flags = l.split(":", 1)[1].split()
    except OSError:
        pass
    # The vector ISA extensions that decide PyTorch's CPU kernels, as the kernel reports them.
    isa = [f for f in ("avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_vnni",
                       "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16", "amx_int8") if f in flags]
    return dict(torch=torch.__version__, torch_dir=where, origin=origin, python=sys.executable,
                mkl=mkl or "no MKL line in torch.__config__.show()",
                onednn=onednn or "no oneDNN line in torch.__config__.show()",
                blas=blas.group(1) if blas else "?", cpu_capability=cap, cpu=cpu,
                cpu_isa=" ".join(isa) or "none of avx2/avx512/amx", machine=platform.machine())


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", default=DEFAULT_CONFIG, help="a mantissa config with a gpt model "
                   "(default configs/bench/gpt-ref.yaml)")
    p.add_argument("--precision", choices=("float32", "bfloat16"), default="float32")
    p.add_argument("--attention", choices=("fused", "explicit"), default="fused")
    p.add_argument("--compile", action="store_true", help="torch.compile the model")
    p.add_argument("--steps", type=int, default=10, help="timed steps (default 10)")
    p.add_argument("--warmup", type=int, default=2, help="untimed steps first (default 2)")
    p.add_argument("--threads", type=int, default=0,
                   help="torch.set_num_threads (default: PyTorch's choice)")
    p.add_argument("--json", metavar="FILE", help="append one JSON line of results to FILE")
    a = p.parse_args()
    if a.steps < 1:
        p.error(f"--steps {a.steps}: at least 1")
    if a.warmup < 0:
        p.error(f"--warmup {a.warmup}: at least 0")
    if a.threads < 0:
        p.error(f"--threads {a.threads}: at least 0 (0: PyTorch's choice)")
    try:
        cfg = read_config(a.config)
    except ConfigError as e:
        print(f"peer_torch_gpt.py: {e}", file=sys.stderr)
        return 2

    try:
        import torch
    except ImportError:
        print(f"peer_torch_gpt.py: no PyTorch in {sys.executable}: run bench/install-peer.sh, then "
              "/opt/mantissa-peer/venv/bin/python bench/peer_torch_gpt.py", file=sys.stderr)
        return 2

    if a.threads:
        torch.set_num_threads(a.threads)
    if a.compile and not hasattr(torch, "compile"):
        print(f"peer_torch_gpt.py: --compile needs PyTorch 2.x (this is {torch.__version__})",
              file=sys.stderr)
        return 2
    if a.attention == "fused" and not hasattr(torch.nn.functional, "scaled_dot_product_attention"):
        print(f"peer_torch_gpt.py: --attention fused needs F.scaled_dot_product_attention "
              f"(PyTorch 2.x; this is {torch.__version__}): use --attention explicit",
              file=sys.stderr)
        return 2
    info = build_info(torch)
    print(f"peer: mantissa's PyTorch peer (bench/peer_torch_gpt.py), torch {info['torch']} "
          f"({info['origin']}, {info['torch_dir']}), python {sys.executable}")
    print(f"peer build: BLAS_INFO={info['blas']}; {info['mkl']}; {info['onednn']}")
    print(f"peer runtime: {torch.get_num_threads()} threads, ATen CPU capability "
          f"{info['cpu_capability']}, CPU {info['cpu']} ({info['machine']}; {info['cpu_isa']})")

    c, o = cfg["model"], cfg["optimizer"]
    torch.manual_seed(cfg["seed"])
    model = build_model(torch, c, a.attention)
    n_params = sum(t.numel() for t in model.parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=o["lr"], betas=(o["beta1"], o["beta2"]),
                            eps=o["eps"], weight_decay=o["weight_decay"], amsgrad=o["amsgrad"])
    step_model = torch.compile(model) if a.compile else model
    model.train()
    B, T, accum, V = cfg["batch"], cfg["context"], cfg["accum"], c["vocab_size"]
    g = torch.Generator().manual_seed(cfg["seed"] + 1)
    batches = [(torch.randint(0, V, (B, T), generator=g), torch.randint(0, V, (B, T), generator=g))
               for _ in range(accum)]
    bf16 = a.precision == "bfloat16"
    print(f"config: {a.config} (read with the {cfg['parser']}): gpt, vocab {V}, context {T} "
          f"(positions {c['max_position_embeddings']}), d {c['hidden_size']}, "
          f"{c['num_hidden_layers']} layers, {c['num_heads']} heads, filter {c['filter_size']}, "
          f"dropout {c['dropout_rate']}, {'tied' if c['tie_embeddings'] else 'untied'} head; "
          f"batch {B} x {accum} micro-batch(es); AdamW lr {o['lr']} betas ({o['beta1']}, "
          f"{o['beta2']}) eps {o['eps']} weight_decay {o['weight_decay']}")
    print(f"run: {a.precision}" + (" (autocast bfloat16, float32 master weights)" if bf16 else "")
          + f", attention {a.attention}, {'compiled' if a.compile else 'eager'}, "
          f"{n_params} parameters, {a.warmup} warm-up + {a.steps} timed steps", flush=True)

    times, losses = [], []
    for i in range(a.warmup + a.steps):
        t0 = time.perf_counter()
        total = 0.0
        for x, y in batches:
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                loss = step_model(x, y)
            (loss / accum if accum > 1 else loss).backward()
            total += loss.item()
        opt.step()
        opt.zero_grad(set_to_none=True)
        dt = time.perf_counter() - t0
        losses.append(total / accum)
        if i >= a.warmup:
            times.append(dt)
        print(f"  step {i + 1}/{a.warmup + a.steps}{' (warm-up)' if i < a.warmup else ''}: "
              f"{dt * 1e3:.1f} ms, loss {losses[-1]:.4f}", file=sys.stderr, flush=True)

    median = statistics.median(times)
    tokens = B * T * accum
    tokens_per_s = tokens / median
    # The FLOP count of mantissa's benchmark (src/bench/benchmark.cpp): 6 N tokens + attention.
    flops = accum * (6.0 * n_params * B * T + 12.0 * c["num_hidden_layers"] * c["hidden_size"] * T * T * B)
    rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux
    label = f"{a.precision} {a.attention} {'compiled' if a.compile else 'eager'}"
    print(f"result {label}: median step {median * 1e3:.1f} ms over {len(times)} steps, "
          f"{tokens_per_s:.0f} tokens/s, {flops / median / 1e9:.1f} GFLOP/s, peak RSS "
          f"{rss_mib:.0f} MiB, loss {losses[0]:.4f} (step 1) -> {losses[-1]:.4f} "
          f"(step {len(losses)})")
    if a.json:
        record = dict(peer="bench/peer_torch_gpt.py", config=a.config, precision=a.precision,
                      attention=a.attention, compiled=a.compile, threads=torch.get_num_threads(),
                      parameters=n_params, tokens_per_step=tokens, warmup=a.warmup,
                      median_step_s=median, tokens_per_s=tokens_per_s,
                      gflops=flops / median / 1e9, peak_rss_mib=rss_mib,
                      step_s=times, losses=losses, torch=info["torch"], torch_from=info["origin"],
                      torch_dir=info["torch_dir"], blas=info["blas"], mkl=info["mkl"],
                      onednn=info["onednn"], cpu_capability=info["cpu_capability"],
                      cpu=info["cpu"], cpu_isa=info["cpu_isa"])
        try:
            with open(a.json, "a", encoding="utf-8") as f:
                f.write(json.dumps(record) + "\n")
        except OSError as e:
            print(f"peer_torch_gpt.py: --json {a.json}: cannot append ({e.strerror})", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
