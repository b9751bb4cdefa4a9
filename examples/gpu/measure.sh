#!/usr/bin/env bash
# The exported JAX program of a small Llama (examples/gpu/llama-1b: Llama
# 3.2 1B's shape, 1.24 billion parameters) on one GPU, measured beside the
# practice model's prediction for that GPU (core/docs/export.md, "Measured on
# a GPU"). Not part of CI: it needs an NVIDIA GPU and JAX's CUDA build.
#
#   bash examples/gpu/measure.sh [h100|h200] [STEPS]
#
# Needs build/pase (bash .ci/build --start native) and a Python with
# jax[cuda12]==0.10.2 and the packages of requirements.txt
# (python -m pip install "jax[cuda12]==0.10.2" -r requirements.txt); set
# PYTHON to it (default build-venv/bin/python). Writes the plan, the program
# and both outputs to $OUT (default examples/gpu/out), and prints the
# predicted and the measured step time and memory.
set -euo pipefail
cd "$(dirname "$0")/../.."
preset=${1:-h100}
steps=${2:-10}
python=${PYTHON:-build-venv/bin/python}
out=${OUT:-examples/gpu/out}
mkdir -p "$out"
# A batch of 8 sequences of 2,048 tokens on one GPU; the practice model with
# the preset's rates, BF16 weights and activations, AdamW's FP32 state, and
# the recomputation it chooses (auto) under the GPU's memory.
flags=(--graph examples/gpu/llama-1b/config.json --batch 8 --seq 2048 --procs 1
       --preset "$preset" --cost-model practice --recompute auto)
build/pase plan "${flags[@]}" --format json >"$out/plan.json"
build/pase plan "${flags[@]}" --emit jax -o "$out/plan.py" | tee "$out/plan.txt"
"$python" - "$out/plan.json" <<'PY' | tee "$out/predicted.txt"
import json, sys
plan = json.load(open(sys.argv[1]))
m = plan["memory"]
print("predicted step time %.4f s, %.0f tokens/s, memory per device %.2f GiB "
      "(weights %.2f, gradients %.2f, optimizer %.2f, activations %.2f GiB); training %s"
      % (plan["step_time_s"], plan["throughput"]["tokens_per_s"], m["per_device_bytes"] / 2**30,
         m["params"] / 2**30, m["grads"] / 2**30, m["optimizer"] / 2**30,
         m["activations"] / 2**30, plan["training"]))
PY
# The first step compiles; the steps after it are the measurement.
"$python" "$out/plan.py" --steps "$steps" --fused-attention | tee "$out/measured.txt"
"$python" - "$out/measured.txt" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
times = [float(t) for t in re.findall(r"^step \d+ .*?  ([0-9.]+) s", text, re.M)][1:]
if times:
    times.sort()
    print("measured step time %.4f s (median of %d steps after the first)"
          % (times[len(times) // 2], len(times)))
m = re.search(r"peak memory per device ([0-9.]+) GiB", text)
print("measured peak memory %s GiB" % (m.group(1) if m else "(not reported)"))
PY
