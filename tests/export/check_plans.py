#!/usr/bin/env python3
"""Runs exported JAX programs (pase plan --emit jax) in check mode, all in
one process so that JAX starts once (core/docs/export.md, "Tests").

    python tests/export/check_plans.py [--reduce] [--report FILE] plan1.py plan2.py ...

Each program's check runs as `python planN.py --check` would (with --reduce
when given and the program has a reduced graph): sharded against
unsharded, the layers' shardings, the collectives. Prints each check and a
table of every plan's collectives against the planner's prediction (bytes
per device, summed over the step); exits 1 when any check found a mismatch.
"""

import gc
import json
import os
import runpy
import sys
import tempfile
import time
import traceback

DEVICES = 8  # the most any checked plan uses

os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                           " --xla_force_host_platform_device_count=%d" % DEVICES).strip()
# XLA's compilation cache, for this run: the unsharded reference step of a
# graph is the same program for every plan of it, and compiles once.
CACHE = tempfile.mkdtemp(prefix="pase-jax-cache-")
os.environ["JAX_COMPILATION_CACHE_DIR"] = CACHE
os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0"
os.environ["JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES"] = "0"
# JAX starts here, with DEVICES virtual devices: a program's own setting of
# XLA_FLAGS (its plan's devices) then changes nothing, and a plan of fewer
# devices uses the first of them.
import jax  # noqa: E402

assert len(jax.devices()) >= DEVICES, jax.devices()


def main():
    args = sys.argv[1:]
    reduce = "--reduce" in args
    args = [a for a in args if a != "--reduce"]
    summary_path = None
    if "--report" in args:
        i = args.index("--report")
        summary_path = args[i + 1]
        del args[i:i + 2]
    rows, failed = [], []
    for path in args:
        with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
            report_path = f.name
        with open(path) as f:
            has_reduced = '\n"reduced": null}' not in f.read()
        argv = [path, "--check", "--report", report_path]
        if reduce and has_reduced:
            argv.append("--reduce")
        sys.argv = argv
        start = time.time()
        code = 0
        try:
            runpy.run_path(path, run_name="__main__")
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
            if not isinstance(e.code, int) and e.code is not None:
                print(e.code)
        except Exception:  # a program that fails is a failed check, not the end of the run
            traceback.print_exc()
            code = 1
        seconds = time.time() - start
        # The programs' compiled steps and arrays are of no use to the next.
        jax.clear_caches()
        gc.collect()
        report = {}
        if os.path.getsize(report_path):
            with open(report_path) as f:
                report = json.load(f)
        os.unlink(report_path)
        if code != 0 or not report or report.get("mismatches"):
            failed.append(path)
        c = report.get("collectives", {})
        rows.append((os.path.basename(path), report.get("variant", "-"), seconds,
                     report.get("gradients", {}).get("largest_error", float("nan")),
                     c.get("xla_bytes", 0.0), c.get("predicted_bytes", 0.0)))
        print(flush=True)
    print("%-36s %-8s %7s %10s %14s %14s %7s" % ("plan", "graph", "seconds", "grad err",
                                                 "compiled B", "predicted B", "ratio"))
    for name, variant, seconds, err, xla, pred in rows:
        ratio = "%7.2f" % (xla / pred) if pred else "      -"
        print("%-36s %-8s %7.1f %10.2g %14.0f %14.0f %s" % (name[:36], variant, seconds, err, xla,
                                                         pred, ratio))
    if summary_path:
        with open(summary_path, "w") as f:
            json.dump([dict(zip(("plan", "variant", "seconds", "gradient_error", "xla_bytes",
                                 "predicted_bytes"), r)) for r in rows], f, indent=1)
    if failed:
        print("check_plans: %d of %d failed: %s" % (len(failed), len(rows), ", ".join(failed)))
        sys.exit(1)
    print("check_plans: %d plans passed" % len(rows))


if __name__ == "__main__":
    main()
