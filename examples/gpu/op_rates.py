#!/usr/bin/env python3
"""Measures on a GPU the op classes that pase's plans produce, beside the
practice cost model's prediction for them (core/docs/practice-model.md,
"Measured on a GPU").

Input: plan or evaluation results written by `pase plan --format json` or
`pase eval --format json` under the practice model. Each vertex there
carries the kernel the model priced it as ("kernel": a matrix product of
`bpp` batch points of m x k by k x n, fused attention, or a memory-bound op
touching `elements` elements per device) and its compute cost; the model's
seconds are (compute - recompute) over the cluster's peak. Every distinct
kernel is run here at its per-device shape in BF16, forward and backward:

- matmul: the forward product and the backward's two (6 bpp m n k FLOPs);
- attention: torch's scaled_dot_product_attention (FlashAttention kernels on
  Hopper), forward and backward, causal where the model says so;
- memory: the vertex's op (RMSNorm or LayerNorm, add or multiply, SiLU or
  GELU, softmax, cross-entropy, embedding) forward and backward on tensors of
  its per-device size; reported as the model's bytes (3 x 2 bytes per
  touched element) over the measured time.

It also sweeps square and skinny products to put the measured rate beside the
model's curve F * eta * s(m) s(n) s(k), s(d) = d / (d + h), with the preset's
fitted parameters from `pase presets --format json` (--presets, --preset).

Run: python3 op_rates.py --presets presets.json --preset h200 plan1.json ...
Prints a markdown table per class; --out FILE writes every row as JSON.
Needs PyTorch with a CUDA device; nothing in the tests runs it.
"""

import argparse
import json
import math
import sys

import torch
import torch.nn.functional as F

DTYPE = torch.bfloat16


def timed(fn, min_seconds=0.05, warmup=3):
    """Mean seconds of fn() over enough repetitions to last min_seconds."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    reps = 1
    while True:
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(reps):
            fn()
        stop.record()
        torch.cuda.synchronize()
        seconds = start.elapsed_time(stop) / 1e3
        if seconds >= min_seconds or reps >= 4096:
            return seconds / reps
        reps = max(reps * 2, int(reps * 1.2 * min_seconds / max(seconds, 1e-6)))


def rand(*shape, grad=False):
    return torch.randn(*shape, device="cuda", dtype=DTYPE, requires_grad=grad)


def run_matmul(bpp, m, n, k):
    shape = (bpp,) if bpp > 1 else ()
    a, b, dc = rand(*shape, m, k), rand(*shape, k, n), rand(*shape, m, n)

    def step():
        torch.matmul(a, b)  # forward
        torch.matmul(dc, b.transpose(-1, -2))  # input gradient
        torch.matmul(a.transpose(-1, -2), dc)  # weight gradient

    return timed(step)


def run_attention(bpp, m, n, k, causal):
    # Grouped-query attention folds a group's query heads into m (m = r n):
    # each head attends to the n keys on its own, under its own mask.
    if m > n and m % n == 0:
        bpp, m = bpp * (m // n), n
    q = rand(1, bpp, m, k, grad=True)
    kk = rand(1, bpp, n, k, grad=True)
    v = rand(1, bpp, n, k, grad=True)
    do = rand(1, bpp, m, k)

    def step():
        o = F.scaled_dot_product_attention(q, kk, v, is_causal=causal)
        o.backward(do)

    return timed(step)


def memory_op(op, name, last, elements, rms):
    """Forward and backward of `op` on tensors of a vertex's per-device size,
    with `elements` touched (operands and results), `last` the size of its
    last dimension per device; `rms`: norms are RMSNorm (Llama, Mixtral)."""
    lname = name.lower()
    if op == "Norm":
        n = int(elements // 2)
        rows = max(1, n // last)
        x = rand(rows, last, grad=True)
        w = rand(last, grad=True)
        g = rand(rows, last)
        if rms and hasattr(F, "rms_norm"):
            return lambda: F.rms_norm(x, (last,), w).backward(g)
        return lambda: F.layer_norm(x, (last,), w).backward(g)
    if op in ("Elementwise",):
        n = int(elements // 3)
        a, b, g = rand(n, grad=True), rand(n, grad=True), rand(n)
        if "add" in lname:
            return lambda: (a + b).backward(g)
        return lambda: (a * b).backward(g)
    if op in ("Activation",):
        n = int(elements // 2)
        x, g = rand(n, grad=True), rand(n)
        fn = F.silu if ("gate" in lname or "silu" in lname) else F.gelu
        return lambda: fn(x).backward(g)
    if op == "Softmax":
        n = int(elements // 2)
        rows = max(1, n // last)
        x, g = rand(rows, last, grad=True), rand(rows, last)
        return lambda: F.softmax(x, dim=-1).backward(g)
    if op == "SoftmaxCrossEntropy":
        n = int(elements // 2)
        rows = max(1, n // last)
        x = rand(rows, last, grad=True)
        y = torch.randint(0, last, (rows,), device="cuda")
        return lambda: F.cross_entropy(x.float(), y).backward()
    if op == "Embedding":
        return None  # a gather and a scatter-add; left to the whole-step checks
    return None


def per_device(v):
    return [math.ceil(s / c) for s, c in zip(v["sizes"], v["config"])]


def from_plans(paths):
    """Distinct kernels of the plans, with the model's seconds."""
    seen = {}
    for path in paths:
        with open(path) as f:
            doc = json.load(f)
        peak = doc["cluster"]["tflops"] * 1e12
        graph = json.dumps(doc.get("graph", "")).lower()
        rms = any(x in graph for x in ("llama", "mixtral", "mistral"))
        for v in doc["vertices"]:
            kern = v.get("kernel")
            if not kern or kern["class"] in ("fused", "none"):
                continue
            model_s = (v["compute"] - v.get("recompute", 0.0)) / peak
            if kern["class"] == "memory":
                key = ("memory", v["op"], v["name"].split("_", 1)[-1], kern["elements"])
            else:
                shape = tuple(kern[x] for x in ("bpp", "m", "n", "k"))
                key = (kern["class"], shape, kern.get("causal", False))
            if key in seen:
                continue
            seen[key] = {"plan": path, "vertex": v["name"], "op": v["op"], "kernel": kern,
                         "last": per_device(v)[-1], "model_s": model_s, "rms": rms}
    return list(seen.values())


def model_rate(profile, peak, m, n, k):
    h = profile["matmul_half"]
    s = lambda d: d / (d + h)  # noqa: E731
    return peak * profile["matmul_efficiency"] * s(m) * s(n) * s(k)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("plans", nargs="*", help="pase plan/eval results (--format json)")
    ap.add_argument("--presets", help="the output of `pase presets --format json`")
    ap.add_argument("--preset", default="h200", help="the preset whose curve to compare (h200)")
    ap.add_argument("--out", help="write every row as JSON here")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("op_rates.py: no CUDA device")
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = True
    rows = []
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}")

    for k in from_plans(args.plans):
        kern = k["kernel"]
        row = {**k}
        try:
            if kern["class"] == "matmul":
                bpp, m, n, kk = (int(kern[x]) for x in ("bpp", "m", "n", "k"))
                t = run_matmul(bpp, m, n, kk)
                row["flops"] = 6.0 * bpp * m * n * kk
            elif kern["class"] == "attention":
                bpp, m, n, kk = (int(kern[x]) for x in ("bpp", "m", "n", "k"))
                t = run_attention(bpp, m, n, kk, kern["causal"])
                row["flops"] = 3.5 * 4.0 * bpp * m * n * kk * (0.5 if kern["causal"] else 1.0)
            else:
                fn = memory_op(k["op"], k["vertex"], k["last"], kern["elements"], k["rms"])
                if fn is None:
                    continue
                t = timed(fn)
                row["bytes"] = 3.0 * 2.0 * kern["elements"]
        except torch.OutOfMemoryError:
            print(f"skipped {k['vertex']}: out of memory", file=sys.stderr)
            torch.cuda.empty_cache()
            continue
        row["measured_s"] = t
        rows.append(row)
        torch.cuda.empty_cache()

    print("\n| plan | vertex | kernel | model ms | measured ms | model/measured |")
    print("|---|---|---|---:|---:|---:|")
    for r in rows:
        kern = r["kernel"]
        if kern["class"] == "memory":
            desc = f"{r['op']} {kern['elements']:.3g} el"
        else:
            desc = (f"{kern['class']} {int(kern['bpp'])}x{int(kern['m'])}x{int(kern['n'])}"
                    f"x{int(kern['k'])}" + (" causal" if kern.get("causal") else ""))
        print(f"| {r['plan'].split('/')[-1]} | {r['vertex']} | {desc} | {1e3 * r['model_s']:.3f} "
              f"| {1e3 * r['measured_s']:.3f} | {r['model_s'] / r['measured_s']:.2f} |")

    if args.presets:
        with open(args.presets) as f:
            preset = next(p for p in json.load(f) if p["id"] == args.preset)
        peak, prof = preset["tflops"] * 1e12, preset["practice"]
        sweep = [(d, d, d) for d in (256, 512, 1024, 2048, 4096, 8192, 16384)]
        sweep += [(8192, d, 4096) for d in (128, 256, 512, 1024, 2048, 4096, 14336)]
        print(f"\nMatrix products against the model's curve ({args.preset}: "
              f"eta {prof['matmul_efficiency']}, h {prof['matmul_half']})")
        print("| m x n x k | model TFLOP/s | measured TFLOP/s |")
        print("|---|---:|---:|")
        for m, n, k in sweep:
            t = run_matmul(1, m, n, k)
            meas = 6.0 * m * n * k / t
            modl = model_rate(prof, peak, m, n, k)
            rows.append({"sweep": [m, n, k], "measured_tflops": meas / 1e12,
                         "model_tflops": modl / 1e12})
            print(f"| {m} x {n} x {k} | {modl / 1e12:.0f} | {meas / 1e12:.0f} |")
            torch.cuda.empty_cache()
        # Memory bandwidth: a device-to-device copy, counting reads and writes.
        x = torch.empty(2 ** 30, dtype=torch.uint8, device="cuda")
        y = torch.empty_like(x)
        t = timed(lambda: y.copy_(x))
        bw = 2 * x.numel() / t
        rows.append({"copy_gbps": bw / 1e9, "model_gbps": preset["memory_gbps"] *
                     prof["memory_efficiency"]})
        print(f"\ncopy: {bw / 1e9:.0f} GB/s; the model's memory-bound rate "
              f"{preset['memory_gbps'] * prof['memory_efficiency']:.0f} GB/s")

    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
