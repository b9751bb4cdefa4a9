#!/usr/bin/env bash
# The goal of core/docs/export.md, "Every built-in network": every built-in
# network planned on 4 and 8 devices under both cost models (the practice
# model with the h100 preset's rates and no memory cap), exported with
# `pase plan --emit jax` and run in check mode with --reduce. A benchmark,
# not a CI test (about 15 minutes on 2 cores): prints check_plans.py's table
# and which networks cannot be exported, and why.
#
#   bash tests/export/check_builtins.sh [MODEL ...]
set -uo pipefail
cd "$(dirname "$0")/../.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(alexnet resnet101 inception3 rnnlm transformer gpt2 llama3-8b llama3-70b mixtral-8x7b gpt3-175b)
for m in "${models[@]}"; do
  for devices in 4 8; do
    for model in paper practice; do
      cluster=(--procs "$devices" --cost-model "$model")
      [ "$model" = practice ] && cluster+=(--preset h100 --memory 0)
      name="$m-$devices-$model"
      start=$(date +%s.%N)
      if ! build/pase plan --model "$m" "${cluster[@]}" --emit jax -o "$out/$name.py" >/dev/null 2>"$out/$name.err"; then
        echo "$name: not exported: $(grep -v '^emit: note' "$out/$name.err" | head -1)"
        rm -f "$out/$name.py"
        continue
      fi
      echo "$name: planned and exported in $(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }') s"
    done
  done
done
build-venv/bin/python tests/export/check_plans.py --reduce "$out"/*.py | grep -vE '^(    |  |check:|check passed|$)'
