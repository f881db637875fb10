#!/usr/bin/env python3
"""The data-parallel scaling model of docs/distributed.md, on paper: the projected efficiency of
GPT-ref training on N nodes (one process each, a fixed batch per node) over a network link,
from figures measured on one machine.

  bench/scaling_model.py --compute-ms 1100 --local-ms 14 [--params 10942464]
                         [--latency-us 20] [--buckets 2] [--nodes 2,4,8,16,32,64]
                         [--links-gbps 10,100] [--speedups 1,16]

Per step, with P parameters, w bytes a gradient on the wire (4 float32, 2 bfloat16), link
bandwidth B (bytes/s, each direction), k buckets and a per-message latency a:

  wire(N)  = 2 (N-1)/N * P * w / B     (each node sends (N-1)/N of every bucket to its owners,
                                        then (N-1)/N of the results back: reduce-scatter and
                                        all-gather over point-to-point messages)
  lat(N)   = 2 k a                     (the two phases of each bucket, their N-1 messages in
                                        flight at once)
  comm(N)  = local + wire(N) + lat(N)  (local: packing onto the wire, the rank's share of the
                                        sum, unpacking; measured, it does not shrink with N)

and the efficiency against one node's step (compute C, measured):

  no overlap:    E = C / (C + comm)
  with overlap:  E = C / (C + local + max((wire + lat) / k, wire + lat - 2/3 C))
                 (the buckets' messages fly while the backward, about 2/3 of the step,
                 goes on, except the last bucket's, which starts when the backward ends; the
                 local copies run on the cores the backward needs and are not hidden, as
                 measured here)

--speedups divides C by each factor: a node that computes that many times faster than the
measured one (more cores), the same network and local copy time. Assumptions, not measurements:
a non-blocking switch (every node can send and receive at B at once), a fixed latency a per
message phase, no congestion from the all-to-all pattern.
"""
import argparse


def floats(text):
    return [float(x) for x in text.split(",")]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--compute-ms", type=float, required=True,
                   help="one node's step time without communication (measured)")
    p.add_argument("--local-ms", type=float, required=True,
                   help="the all-reduce's local work per step (measured), per wire: "
                        "float32 value; --local-ms-bf16 for bfloat16")
    p.add_argument("--local-ms-bf16", type=float, default=None)
    p.add_argument("--params", type=int, default=10942464)
    p.add_argument("--latency-us", type=float, default=20.0)
    p.add_argument("--buckets", type=int, default=2)
    p.add_argument("--nodes", default="2,4,8,16,32,64")
    p.add_argument("--links-gbps", default="10,100")
    p.add_argument("--speedups", default="1,16")
    a = p.parse_args()
    local = {"float32": a.local_ms, "bfloat16": a.local_ms_bf16 or a.local_ms}
    nodes = [int(x) for x in a.nodes.split(",")]
    for speedup in floats(a.speedups):
        compute = a.compute_ms / speedup
        print(f"\nnode compute per step C = {compute:.1f} ms "
              f"({'measured' if speedup == 1 else f'measured / {speedup:g}'}), "
              f"local work {local['float32']:.1f} ms (float32) / {local['bfloat16']:.1f} ms (bfloat16), "
              f"{a.buckets} buckets, latency {a.latency_us:g} us")
        header = "link      wire      " + "".join(f"{'N=' + str(n):>14}" for n in nodes)
        print(header)
        print(" " * 20 + "".join(f"{'no ovl / ovl':>14}" for _ in nodes))
        for gbps in floats(a.links_gbps):
            bandwidth = gbps * 1e9 / 8
            for wire, w in (("float32", 4), ("bfloat16", 2)):
                cells = []
                for n in nodes:
                    wire_ms = 2 * (n - 1) / n * a.params * w / bandwidth * 1e3
                    lat_ms = 2 * a.buckets * a.latency_us / 1e3
                    comm = local[wire] + wire_ms + lat_ms
                    plain = compute / (compute + comm)
                    exposed = max((wire_ms + lat_ms) / a.buckets, wire_ms + lat_ms - 2 / 3 * compute)
                    hidden = compute / (compute + local[wire] + exposed)
                    cells.append(f"{plain * 100:5.1f}/{hidden * 100:5.1f}%")
                print(f"{gbps:>4g} Gb/s {wire:9} " + "".join(f"{c:>14}" for c in cells))


if __name__ == "__main__":
    main()
