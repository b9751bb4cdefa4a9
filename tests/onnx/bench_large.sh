#!/usr/bin/env bash
# Imports a large ONNX file (VGG-16 with its weights, ~550 MB) and reports the
# time and the peak memory against the file's size: the importer reads only
# the structure and skips the weights' bytes, so its memory must not grow with
# the file (tests/onnx/README.md).
#
#   bash tests/onnx/bench_large.sh [FILE.onnx] [PASE]
#
# FILE defaults to /tmp/pase-vgg16.onnx, made first with make_fixtures.py
# --vgg16 when it does not exist; PASE defaults to build/pase. Prints one line:
#   vgg16.onnx: 553.4 MB imported in 0.41 s, peak RSS 9.8 MB (1.8% of the file)
# and exits non-zero when the import fails.
set -euo pipefail
cd "$(dirname "$0")/../.."
file="${1:-/tmp/pase-vgg16.onnx}"
pase="${2:-build/pase}"

if [ ! -x "$pase" ]; then
  echo "bench_large: $pase not found (build it first: cmake --build build -j2)" >&2
  exit 1
fi
if [ ! -f "$file" ]; then
  echo "bench_large: exporting VGG-16 with its weights to $file ..." >&2
  /usr/bin/python3 tests/onnx/make_fixtures.py --vgg16 "$file" >&2
fi

log="$(mktemp)"
trap 'rm -f "$log"' EXIT
if ! /usr/bin/time -v "$pase" import "$file" --output /dev/null 2>"$log"; then
  cat "$log" >&2
  echo "bench_large: the import failed" >&2
  exit 1
fi

bytes=$(stat -c %s "$file")
# GNU time: "Elapsed (wall clock) time (h:mm:ss or m:ss): 0:00.41" and
# "Maximum resident set size (kbytes): 10040".
elapsed=$(sed -n 's/.*Elapsed (wall clock) time.*: //p' "$log")
rss_kb=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$log")
awk -v name="$(basename "$file")" -v bytes="$bytes" -v elapsed="$elapsed" -v rss="$rss_kb" '
  BEGIN {
    n = split(elapsed, part, ":"); s = 0
    for (i = 1; i <= n; i++) s = s * 60 + part[i]
    printf "%s: %.1f MB imported in %.2f s, peak RSS %.1f MB (%.1f%% of the file)\n",
           name, bytes / 1e6, s, rss * 1024 / 1e6, 100 * rss * 1024 / bytes
  }'
