#!/usr/bin/env python3
"""The host memory of an exported JAX program before its first step
(core/docs/export.md, "Llama 3 8B: the attention core and the host's
memory"): imports the program with the plan's devices as virtual CPU
devices, makes its first batch and places it, and traces the function that
makes the weights (jax.eval_shape: their shapes, not their values, which the
devices make); prints the process's peak resident memory.

    python tests/export/host_memory.py plan.py
"""

import os
import resource
import runpy
import sys


def main():
    path = sys.argv[1]
    with open(path) as f:
        text = f.read()
    devices = int(text.split('"devices":', 1)[1].split(",", 1)[0])
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                               " --xla_force_host_platform_device_count=%d" % devices).strip()
    sys.argv = [path]
    program = runpy.run_path(path, run_name="plan")
    import jax
    import numpy as np
    shards = {k: program["sharding"](s) for k, s in program["param_specs"]().items()}
    shapes = jax.eval_shape(program["init_fn"](0, np.float32), 0)
    count = sum(int(np.prod(s.shape)) for s in shapes.values())
    i_shard = [{k: program["sharding"](s) for k, s in program["input_specs"]().items()}
               for _ in range(program["PLAN"]["microbatches"])]
    batches = jax.device_put(program["batches_of"](0), i_shard)
    jax.block_until_ready(batches)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print("%s: %d weights (%d parameters) on %d devices, made by the devices; the host's peak "
          "resident memory before the first step %.0f MB" % (program["PLAN"]["graph"], len(shards),
                                                            count, devices, peak))


if __name__ == "__main__":
    main()
