#!/usr/bin/env bash
# The goal of core/docs/export.md, "Every built-in network": every built-in
# network planned on 4 and 8 devices under both cost models (the practice
# model with the h100 preset's rates and no memory cap), exported with
# `pase plan --emit jax` and run in check mode with --reduce. A benchmark,
# not a CI test (about 15 minutes on 2 cores): prints each network's rows of
# check_plans.py's table, and the plans that cannot be exported, and why.
#
#   bash tests/export/check_builtins.sh [MODEL ...]
set -uo pipefail
cd "$(dirname "$0")/../.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(alexnet resnet101 inception3 rnnlm transformer gpt2 llama3-8b llama3-70b mixtral-8x7b gpt3-175b)
status=0
for m in "${models[@]}"; do
  plans=()
  for devices in 4 8; do
    for model in paper practice; do
      cluster=(--procs "$devices" --cost-model "$model")
      [ "$model" = practice ] && cluster+=(--preset h100 --memory 0)
      name="$m-$devices-$model"
      if ! build/pase plan --model "$m" "${cluster[@]}" --emit jax -o "$out/$name.py" >/dev/null 2>"$out/$name.err"; then
        echo "$name: not exported: $(grep -v '^emit: note' "$out/$name.err" | head -1)"
        status=1
        continue
      fi
      plans+=("$out/$name.py")
    done
  done
  # One process per network: its four plans share the unsharded reference.
  [ ${#plans[@]} -eq 0 ] || build-venv/bin/python tests/export/check_plans.py --reduce "${plans[@]}" 2>/dev/null |
    grep -E "^($m-|check_plans:)" || status=1
done
exit "$status"
