

# ---- The program: the graph in JAX, the plan as shardings, one step ----
# (core/docs/export.md, "JAX"). Everything above is the plan; everything
# below is the same in every exported program.

import argparse
import math
import os
import re
import sys


def parse_args():
    ap = argparse.ArgumentParser(
        description="One training step of " + PLAN["graph"] + " with the plan's shardings "
        "on " + str(PLAN["devices"]) + " devices (exported by PaSE Planner).")
    ap.add_argument("--check", action="store_true",
                    help="run on CPU with virtual devices: compare the sharded step with the "
                    "unsharded one (loss and gradients), check every layer's output sharding, "
                    "and list the compiled program's collectives beside the planner's "
                    "predicted communication")
    ap.add_argument("--reduce", action="store_true",
                    help="the graph with its large dimensions reduced (" +
                    PLAN["reduced_note"] + ")")
    ap.add_argument("--seed", type=int, default=0, help="the weights' and data's seed (0)")
    ap.add_argument("--tolerance", type=float, default=1e-5,
                    help="relative tolerance of --check (1e-5)")
    ap.add_argument("--report", help="write --check's findings to this file as JSON")
    return ap.parse_args()


ARGS = parse_args()
if ARGS.check:
    # Virtual CPU devices, as many as the plan has; set before JAX starts.
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    flag = "--xla_force_host_platform_device_count=" + str(PLAN["devices"])
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + flag).strip()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec  # noqa: E402

jax.config.update("jax_default_matmul_precision", "highest")

VARIANT = PLAN["variants"]["reduced" if ARGS.reduce else "full"]
if VARIANT is None:
    sys.exit("plan.py: this graph has no reduced form (" + PLAN["reduced_note"] + ")")
LAYERS = VARIANT["layers"]


def make_mesh():
    devices = jax.devices()
    if len(devices) < PLAN["devices"]:
        sys.exit("plan.py: the plan needs %d devices, JAX sees %d (on CPU: --check)"
                 % (PLAN["devices"], len(devices)))
    grid = np.array(devices[:PLAN["devices"]]).reshape(PLAN["mesh"]["shape"])
    return Mesh(grid, tuple(PLAN["mesh"]["axes"]))


MESH = make_mesh()


def spec(dims):
    """PartitionSpec of a tensor: per dimension None or the mesh axes."""
    return PartitionSpec(*[None if not a else (a[0] if len(a) == 1 else tuple(a))
                           for a in dims])


def sharding(dims):
    return NamedSharding(MESH, spec(dims))


# ---- the ops (core/docs/graph-format.md) ----

def _pw(x, count):
    # The point-wise operations fused after a layer: one GELU stands for them.
    return jax.nn.gelu(x) if count else x


def op_fc(layer, xs, ws):
    return [_pw(jnp.matmul(xs[0], ws[0]), layer.get("pw", 0))]


def op_einsum(layer, xs, ws):
    y = jnp.einsum(layer["equation"], xs[0], xs[1])
    return [_pw(y, layer.get("pw", 0))]


def op_embedding(layer, xs, ws):
    return [jnp.take(ws[0], xs[0], axis=0)]


def op_conv(layer, xs, ws):
    ph, pw = layer["pad"]
    y = jax.lax.conv_general_dilated(
        xs[0], ws[0], window_strides=tuple(layer["stride"]), padding=[(ph, ph), (pw, pw)],
        dimension_numbers=("NCHW", "OIHW", "NCHW"), feature_group_count=layer["group"])
    return [jax.nn.relu(y) if layer.get("pw", 0) else y]


def op_lstm(layer, xs, ws):
    """`layers` stacked LSTM layers over x of (b, s, u); the weight of each
    layer is (2, u, 4, u): the input's and the state's part, the four gates
    (input, forget, cell, output) apart, so that a split of the units splits
    every gate alike."""
    x, weight = xs[0], ws[0]
    batch, units = x.shape[0], x.shape[2]
    for w in weight:
        def step(carry, xt, w=w):
            h, c = carry
            gates = (jnp.einsum("bu,ugv->bgv", xt, w[0]) +
                     jnp.einsum("bu,ugv->bgv", h, w[1]))
            i, f, g, o = (gates[:, j] for j in range(4))
            c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
            h = jax.nn.sigmoid(o) * jnp.tanh(c)
            return (h, c), h
        zero = jnp.zeros((batch, units), x.dtype)
        _, ys = jax.lax.scan(step, (zero, zero), jnp.swapaxes(x, 0, 1))
        x = jnp.swapaxes(ys, 0, 1)
    return [x]


def op_pool(layer, xs, ws):
    r, s = layer["window"]
    ph, pw = layer["pad"]
    total = jax.lax.reduce_window(xs[0], 0.0, jax.lax.add, (1, 1, r, s),
                                  (1, 1) + tuple(layer["stride"]),
                                  [(0, 0), (0, 0), (ph, ph), (pw, pw)])
    return [total / (r * s)]


def op_elementwise(layer, xs, ws):
    return [_pw(xs[0] + xs[1], layer.get("pw", 0))]


def op_activation(layer, xs, ws):
    return [jax.nn.gelu(xs[0]) if layer.get("pw", 0) else jax.nn.relu(xs[0])]


def op_norm(layer, xs, ws):
    x, axis = xs[0], layer["axis"]
    mean = jnp.mean(x, axis=axis, keepdims=True)
    var = jnp.mean(jnp.square(x - mean), axis=axis, keepdims=True)
    return [(x - mean) * jax.lax.rsqrt(var + 1e-5)]


def op_reduce_mean(layer, xs, ws):
    axes = tuple(layer["axes"]) if layer.get("has_axes") else None
    return [jnp.mean(xs[0], axis=axes, keepdims=layer.get("keepdims", False))]


def op_softmax(layer, xs, ws):
    return [jax.nn.softmax(xs[0], axis=layer["axis"])]


def op_cross_entropy(layer, xs, ws):
    logits, labels = xs[0], xs[1]
    picked = jnp.take_along_axis(logits, labels[..., None], axis=-1)[..., 0]
    return [jax.nn.logsumexp(logits, axis=-1) - picked]


def op_reshape(layer, xs, ws):
    return [jnp.reshape(xs[0], layer["shape"])]


def op_transpose(layer, xs, ws):
    return [jnp.transpose(xs[0], layer["perm"])]


def op_concat(layer, xs, ws):
    return [jnp.concatenate(xs, axis=layer["axis"])]


def op_split(layer, xs, ws):
    return list(jnp.split(xs[0], layer["num"], axis=layer["axis"]))


def op_stack(layer, xs, ws):
    return [jnp.stack(xs, axis=layer["axis"])]


def op_unstack(layer, xs, ws):
    axis = layer["axis"]
    return [jnp.take(xs[0], i, axis=axis) for i in range(xs[0].shape[axis])]


OPS = {
    "FC": op_fc, "Einsum": op_einsum, "Embedding": op_embedding, "Conv": op_conv,
    "Pool": op_pool, "Elementwise": op_elementwise, "Activation": op_activation,
    "Norm": op_norm, "ReduceMean": op_reduce_mean, "Softmax": op_softmax,
    "SoftmaxCrossEntropy": op_cross_entropy, "Reshape": op_reshape,
    "Transpose": op_transpose, "Concat": op_concat, "Split": op_split, "Stack": op_stack,
    "Unstack": op_unstack, "LSTM": op_lstm,
}


# ---- weights, data, the step ----

def init_params(seed):
    """Every layer's weights, normal with a variance of 1 / fan-in (numpy,
    float32, from `seed`)."""
    rng = np.random.default_rng(seed)
    params = {}
    for layer in LAYERS:
        for k, w in enumerate(layer["weights"]):
            scale = 1.0 / math.sqrt(max(1, w["fan_in"]))
            params["%s/w%d" % (layer["name"], k)] = (
                rng.standard_normal(w["shape"], dtype=np.float32) * scale)
    return params


def make_inputs(seed, microbatch):
    """The graph's inputs for one micro-batch: normal data, token ids below
    their vocabulary, the losses' labels below their classes."""
    rng = np.random.default_rng(seed * 7919 + 1 + microbatch)
    data = {}
    for x in VARIANT["inputs"]:
        if x["kind"] == "ids":
            data[x["name"]] = rng.integers(0, x["high"], x["shape"], dtype=np.int32)
        else:
            data[x["name"]] = rng.standard_normal(x["shape"], dtype=np.float32)
    return data


def input_specs():
    return {x["name"]: x["spec"] for x in VARIANT["inputs"]}


def param_specs():
    return {"%s/w%d" % (layer["name"], k): w["spec"]
            for layer in LAYERS for k, w in enumerate(layer["weights"])}


def forward(params, data, constrain, outputs=None):
    """The loss of one micro-batch; with `constrain`, every layer's output
    (and each input the plan re-distributes) takes the plan's sharding. With
    `outputs` (a dict), every layer's outputs are put there."""
    env = dict(data)
    for index, layer in enumerate(LAYERS):
        with jax.named_scope("pase%d" % index):
            xs = []
            for k, operand in enumerate(layer["operands"]):
                if isinstance(operand, dict):
                    x = params["%s/w%d" % (layer["name"], operand["weight"])]
                else:
                    x = env[operand]
                in_spec = layer["in_specs"][k]
                if constrain and in_spec is not None:
                    x = jax.lax.with_sharding_constraint(x, sharding(in_spec))
                xs.append(x)
            ws = [params["%s/w%d" % (layer["name"], k)] for k in layer["implicit"]]
            ys = OPS[layer["op"]](layer, xs, ws)
            if constrain:
                ys = [jax.lax.with_sharding_constraint(y, sharding(s))
                      for y, s in zip(ys, layer["out_specs"])]
        if len(ys) == 1:
            env[layer["name"]] = ys[0]
        for k, y in enumerate(ys):
            env["%s:%d" % (layer["name"], k)] = y
        if outputs is not None:
            outputs[layer["name"]] = ys
    loss = 0.0
    for name in VARIANT["sinks"]:
        y = env[name]
        layer = next(lay for lay in LAYERS if lay["name"] == name.split(":")[0])
        loss = loss + (jnp.mean(y) if layer["op"] == "SoftmaxCrossEntropy"
                       else jnp.mean(jnp.square(y)))
    return loss


def step_function(constrain, outputs=False):
    """Loss and gradients over the plan's micro-batches (their mean); with
    `outputs`, also every layer's outputs of the first micro-batch."""
    def with_outputs(params, data):
        out = {}
        return forward(params, data, constrain, out), out

    def step(params, batches):
        total, grads, first = 0.0, None, None
        for data in batches:
            (loss, out), g = jax.value_and_grad(with_outputs, has_aux=True)(params, data)
            first = out if first is None else first
            total = total + loss
            grads = g if grads is None else jax.tree_util.tree_map(jnp.add, grads, g)
        m = float(len(batches))
        mean = jax.tree_util.tree_map(lambda t: t / m, grads)
        return (total / m, mean, first) if outputs else (total / m, mean)
    return step


def update(params, grads, rate=1e-3):
    return jax.tree_util.tree_map(lambda p, g: p - rate * g, params, grads)


def sharded_step(outputs=False):
    """The step jitted with the plan's shardings, and the shardings of its
    arguments. With `outputs` (check mode) it also returns every layer's
    outputs, whose shardings the compiler chooses: the check reads them."""
    pspecs, ispecs = param_specs(), input_specs()
    p_shard = {k: sharding(s) for k, s in pspecs.items()}
    i_shard = [{k: sharding(s) for k, s in ispecs.items()} for _ in range(PLAN["microbatches"])]
    if outputs:
        fn = jax.jit(step_function(True, True), in_shardings=(p_shard, i_shard))
    else:
        fn = jax.jit(step_function(True), in_shardings=(p_shard, i_shard),
                     out_shardings=(NamedSharding(MESH, PartitionSpec()), p_shard))
    return fn, p_shard, i_shard


def batches_of(seed):
    return [make_inputs(seed, m) for m in range(PLAN["microbatches"])]


def train_step():
    fn, p_shard, i_shard = sharded_step()
    params = jax.device_put(init_params(ARGS.seed), p_shard)
    batches = jax.device_put(batches_of(ARGS.seed), i_shard)
    loss, grads = fn(params, batches)
    params = jax.jit(update, out_shardings=p_shard)(params, grads)
    jax.block_until_ready(params)
    print("loss %.6f after one step on %d devices (mesh %s)"
          % (float(loss), PLAN["devices"], dict(zip(PLAN["mesh"]["axes"],
                                                    PLAN["mesh"]["shape"]))))


# ---- check mode ----

DTYPE_BYTES = {"f32": 4, "f16": 2, "bf16": 2, "s32": 4, "u32": 4, "s64": 8, "f64": 8,
               "pred": 1, "s8": 1, "u8": 1}
COLLECTIVE = re.compile(
    r"^\s*(?:ROOT )?%([\w.\-]+) = (.*?) "
    r"(all-reduce|all-gather|reduce-scatter|all-to-all|collective-permute)(-start)?\(")
ELEMENT = re.compile(r"get-tuple-element\(%([\w.\-]+)\), index=(\d+)")
SCOPE = re.compile(r"pase(\d+)")
SHAPE = re.compile(r"([a-z]+[0-9]*)\[([0-9,]*)\]")


def shape_bytes(text):
    total = 0
    for dtype, dims in SHAPE.findall(text):
        n = 1
        for d in filter(None, dims.split(",")):
            n *= int(d)
        total += n * DTYPE_BYTES.get(dtype, 4)
    return total


def group_size(line):
    # replica_groups=mesh['axis_0'=2,'axis_1'=4] {'axis_0'}: the named axes.
    m = re.search(r"replica_groups=mesh\[([^\]]*)\] \{([^}]*)\}", line)
    if m:
        sizes = dict(re.findall(r"'([^']+)'=(\d+)", m.group(1)))
        n = 1
        for axis in re.findall(r"'([^']+)'", m.group(2)):
            n *= int(sizes.get(axis, 1))
        return n
    m = re.search(r"replica_groups=\[([0-9,]+)\]<=", line)
    if m:
        return int(m.group(1).split(",")[-1])
    m = re.search(r"replica_groups=\{\{([0-9,]*)\}", line)
    if m:
        return len(m.group(1).split(","))
    return PLAN["devices"]


def collectives(hlo):
    """(kind, bytes sent per device, layer index or None) of every collective
    of a compiled program: a ring all-reduce sends 2 (p - 1) / p of its
    buffer, an all-gather (p - 1) / p of its result, a reduce-scatter p - 1
    times its result, an all-to-all (p - 1) / p of its buffer, a permute all
    of it. XLA combines collectives into one of a tuple: each element is
    counted for the layer that its reader names."""
    lines = hlo.splitlines()
    element_scope = {}
    for line in lines:
        m = ELEMENT.search(line)
        scope = SCOPE.findall(line)
        if m and scope:
            element_scope[(m.group(1), int(m.group(2)))] = int(scope[-1])
    found = []
    for line in lines:
        m = COLLECTIVE.search(line)
        if not m:
            continue
        name, result, kind, start = m.groups()
        shapes = SHAPE.findall(result)
        if start:  # async start: (operands, results); the results
            shapes = shapes[len(shapes) // 2:]
        p = group_size(line)
        factor = {"all-reduce": 2.0 * (p - 1) / p, "all-gather": (p - 1) / p,
                  "reduce-scatter": float(p - 1), "all-to-all": (p - 1) / p,
                  "collective-permute": 1.0}[kind]
        own = SCOPE.findall(line)
        own = int(own[-1]) if own else None
        tuple_result = result.startswith("(") and not start
        for k, shape in enumerate(shapes):
            size = shape_bytes("%s[%s]" % shape)
            layer = element_scope.get((name, k), own) if tuple_result else own
            found.append((kind, size * factor, layer))
    return found


def relative_error(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-30))


def compare_steps(dtype):
    """Loss and gradients of the sharded and the unsharded step in `dtype`:
    (relative error of the loss, of each gradient), and the sharded step's
    compiled program, loss, gradients, arguments."""
    params0 = {k: v.astype(dtype) for k, v in init_params(ARGS.seed).items()}
    batches = [{k: (v.astype(dtype) if v.dtype.kind == "f" else v) for k, v in b.items()}
               for b in batches_of(ARGS.seed)]
    # The step on one device, without any sharding: the reference.
    one = jax.devices()[0]
    ref_loss, ref_grads = jax.jit(step_function(False))(
        jax.device_put(params0, one), jax.device_put(batches, one))
    fn, p_shard, i_shard = sharded_step(outputs=True)
    params = jax.device_put(params0, p_shard)
    placed = jax.device_put(batches, i_shard)
    compiled = fn.lower(params, placed).compile()
    loss, grads, _ = compiled(params, placed)
    errors = {name: relative_error(grads[name], ref_grads[name]) for name in ref_grads}
    return (relative_error(loss, ref_loss), errors, compiled,
            (float(loss), float(ref_loss), grads, params, placed, p_shard, i_shard))


def check():
    report = {"graph": PLAN["graph"], "devices": PLAN["devices"], "variant":
              "reduced" if ARGS.reduce else "full", "mismatches": []}
    err, errors, compiled, rest = compare_steps(np.float32)
    loss, ref_loss, grads, params, placed, p_shard, i_shard = rest
    worst = max(errors.values(), default=0.0)
    report["loss"] = {"sharded": loss, "unsharded": ref_loss, "error": err}
    report["gradients"] = {"count": len(errors), "largest_error": worst}
    failed = [k for k, e in errors.items() if not e <= ARGS.tolerance]
    if failed or not err <= ARGS.tolerance:
        # Float32 sums in another order differ by their rounding, which a
        # cancelling sum (a batch norm's backward) magnifies: the same step
        # in float64 tells rounding from a wrong program.
        jax.config.update("jax_enable_x64", True)
        err64, errors64, _, _ = compare_steps(np.float64)
        jax.config.update("jax_enable_x64", False)
        report["float64"] = {"loss_error": err64,
                             "largest_error": max(errors64.values(), default=0.0)}
        for k in failed:
            report.setdefault("rounding", []).append(
                "gradient %s: relative error %.3g in float32, %.3g in float64"
                % (k, errors[k], errors64[k]))
        if not err64 <= ARGS.tolerance * 1e-6:
            report["mismatches"].append("loss: relative error %.3g (float64 %.3g)" % (err, err64))
        for k in failed:
            if not errors64[k] <= ARGS.tolerance * 1e-6:
                report["mismatches"].append("gradient %s: relative error %.3g (float64 %.3g)"
                                            % (k, errors[k], errors64[k]))
    new = jax.jit(update, out_shardings=p_shard)(params, grads)
    jax.block_until_ready(new)

    # Every layer's outputs as the compiled program shards them.
    outs = compiled.output_shardings[2]
    wrong = 0
    for layer in LAYERS:
        for k, s in enumerate(layer["out_specs"]):
            got = outs[layer["name"]][k]
            want = sharding(s)
            ndim = len(s)
            if not got.is_equivalent_to(want, ndim):
                wrong += 1
                report["mismatches"].append("%s: output sharded %s, planned %s"
                                            % (layer["name"], got.spec, want.spec))
    report["shardings"] = {"layers": len(LAYERS), "as_planned": len(LAYERS) - wrong}

    # The compiled step's collectives beside the planner's communication.
    per_layer, layer_kinds = {}, {}
    unplaced = 0.0
    kinds = {}
    for kind, size, index in collectives(compiled.as_text()):
        kinds[kind] = kinds.get(kind, 0) + 1
        if index is None:
            unplaced += size
        else:
            per_layer[index] = per_layer.get(index, 0.0) + size
            counts = layer_kinds.setdefault(index, {})
            counts[kind] = counts.get(kind, 0) + 1
    rows = []
    for index, layer in enumerate(LAYERS):
        moved = per_layer.get(index, 0.0)
        predicted = layer["predicted_bytes"] * PLAN["microbatches"]
        if moved or predicted:
            rows.append({"layer": layer["name"], "xla_bytes": moved,
                         "predicted_bytes": predicted,
                         "collectives": layer_kinds.get(index, {})})
    total_xla = sum(r["xla_bytes"] for r in rows) + unplaced
    total_pred = sum(r["predicted_bytes"] for r in rows)
    report["collectives"] = {"kinds": kinds, "layers": rows, "unattributed_bytes": unplaced,
                             "xla_bytes": total_xla, "predicted_bytes": total_pred}

    print("check: %s on %d virtual devices, mesh %s, %s graph"
          % (PLAN["graph"], PLAN["devices"], dict(zip(PLAN["mesh"]["axes"],
                                                      PLAN["mesh"]["shape"])),
             report["variant"]))
    if ARGS.reduce:
        print("  reduced   " + PLAN["reduced_note"])
    print("  loss      sharded %.8g, unsharded %.8g (relative error %.2g)"
          % (loss, ref_loss, err))
    print("  gradients %d tensors, largest relative error %.2g" % (len(errors), worst))
    if "float64" in report:
        print("  float64   loss error %.2g, largest gradient error %.2g (float32's larger "
              "errors are rounding:)" % (report["float64"]["loss_error"],
                                         report["float64"]["largest_error"]))
        for line in report.get("rounding", []):
            print("    " + line)
    print("  shardings %d of %d layers as planned" % (len(LAYERS) - wrong, len(LAYERS)))
    print("  collectives (bytes per device, one step): %s"
          % (", ".join("%d %s" % (n, k) for k, n in sorted(kinds.items())) or "none"))
    print("    %-28s %14s %14s %8s  %s" % ("layer", "compiled", "predicted", "ratio",
                                         "the compiled collectives"))
    for r in rows:
        ratio = ("%8.2f" % (r["xla_bytes"] / r["predicted_bytes"])
                 if r["predicted_bytes"] else "       -")
        what = ", ".join("%s x%d" % (k, n) if n > 1 else k
                         for k, n in sorted(r["collectives"].items()))
        print("    %-28s %14.0f %14.0f %s  %s" % (r["layer"][:28], r["xla_bytes"],
                                                  r["predicted_bytes"], ratio, what))
    if unplaced:
        print("    %-28s %14.0f" % ("(no layer)", unplaced))
    ratio = "%8.2f" % (total_xla / total_pred) if total_pred else "       -"
    print("    %-28s %14.0f %14.0f %s" % ("step", total_xla, total_pred, ratio))
    if ARGS.report:
        import json as _json
        with open(ARGS.report, "w") as f:
            _json.dump(report, f, indent=1)
    if report["mismatches"]:
        for m in report["mismatches"]:
            print("MISMATCH " + m)
        sys.exit(1)
    print("check passed")


if __name__ == "__main__":
    if ARGS.check:
        check()
    else:
        train_step()
