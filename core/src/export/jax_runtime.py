

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
        description="Training steps of " + PLAN["graph"] + " with the plan's shardings "
        "on " + str(PLAN["devices"]) + " devices (exported by PaSE Planner).")
    ap.add_argument("--check", action="store_true",
                    help="run on CPU with virtual devices: compare the sharded step with the "
                    "unsharded one (loss and gradients), check every layer's output sharding, "
                    "and list the compiled program's collectives beside the planner's "
                    "predicted communication; with --steps, also train both ways and "
                    "compare the loss of every step")
    ap.add_argument("--reduce", action="store_true",
                    help="the graph with its large dimensions reduced (" +
                    PLAN["reduced_note"] + ")")
    ap.add_argument("--steps", type=int, default=None,
                    help="training steps to run (1; with --check 0: the check's one step)")
    ap.add_argument("--lr", type=float, default=1e-3, help="AdamW's learning rate (1e-3)")
    ap.add_argument("--data", help="a text file: byte-level tokens of a language model "
                    "(else random tokens); windows of the sequence's length, the labels "
                    "the next bytes")
    ap.add_argument("--fused-attention", action="store_true",
                    help="a language model's attention core as jax.nn.dot_product_attention "
                    "(causal; the scores layer is not formed, so no sharding of it is "
                    "constrained); not with --check")
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

import time  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402
from jax.ad_checkpoint import checkpoint_name  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec  # noqa: E402

jax.config.update("jax_default_matmul_precision", "highest")

VARIANT = PLAN["variants"]["reduced" if ARGS.reduce else "full"]
if VARIANT is None:
    sys.exit("plan.py: this graph has no reduced form (" + PLAN["reduced_note"] + ")")
LAYERS = VARIANT["layers"]
LLM = PLAN.get("llm")          # a language model's own layers (its graph's meta), or None
TRAINING = PLAN["training"]    # the plan's precisions, optimizer bytes and ZeRO stage
if ARGS.fused_attention and (ARGS.check or not LLM):
    sys.exit("plan.py: --fused-attention runs a language model's attention, without --check")


def make_mesh():
    devices = jax.devices()
    if len(devices) < PLAN["devices"]:
        sys.exit("plan.py: the plan needs %d devices, JAX sees %d (on CPU: --check)"
                 % (PLAN["devices"], len(devices)))
    grid = np.array(devices[:PLAN["devices"]]).reshape(PLAN["mesh"]["shape"])
    return Mesh(grid, tuple(PLAN["mesh"]["axes"]))


MESH = make_mesh()
AXIS_SIZE = dict(zip(PLAN["mesh"]["axes"], PLAN["mesh"]["shape"]))


def spec(dims):
    """PartitionSpec of a tensor: per dimension None or the mesh axes."""
    return PartitionSpec(*[None if not a else (a[0] if len(a) == 1 else tuple(a))
                           for a in dims])


def sharding(dims):
    return NamedSharding(MESH, spec(dims))


def zero_dims(dims, shape):
    """A weight's sharding (per dimension its mesh axes) split further, as
    ZeRO splits what it shards, over the axes the weight's own splits leave
    free: each free axis (outermost first) on the first dimension whose size
    it still divides."""
    used = {a for d in dims for a in d}
    out = [list(d) for d in dims]
    for axis in PLAN["mesh"]["axes"]:
        if axis in used or AXIS_SIZE[axis] == 1:
            continue
        for i, size in enumerate(shape):
            split = AXIS_SIZE[axis]
            for a in out[i]:
                split *= AXIS_SIZE[a]
            if size % split == 0:
                out[i].append(axis)
                break
    return out


# ---- precisions (the plan's bytes: core/docs/export.md, "Training") ----

class Precision:
    """The dtypes of a run: the weights, the activations (matrix products'
    operands), the optimizer's state; and whether the optimizer keeps a
    float32 master copy of the weights (the plan's 12 optimizer bytes per
    parameter under 2-byte weights: the master copy and Adam's two moments)."""

    def __init__(self, param, act, master):
        self.param, self.act, self.master = param, act, master


def plan_precision():
    bf = jnp.bfloat16
    param = bf if TRAINING["param_bytes"] == 2 else jnp.float32
    act = bf if TRAINING["activation_bytes"] == 2 else jnp.float32
    master = param != jnp.float32 and TRAINING["optimizer_bytes"] >= 12
    return Precision(param, act, master)


PREC = Precision(jnp.float32, jnp.float32, False)  # set by the run; --check: float32


def wide():
    """The dtype of norms, softmax, accumulation and the loss: float32, or
    float64 in the check's float64 re-run."""
    return jnp.float64 if jnp.dtype(PREC.act) == jnp.dtype("float64") else jnp.float32


# ---- a language model's layers (core/docs/export.md, "Language models") ----

BLOCK = re.compile(r"^layer(\d+)_(.*)$")


def role(name):
    """(decoder block or None, the layer's role: q, scores, gate, ...)."""
    m = BLOCK.match(name)
    return (int(m.group(1)), m.group(2)) if m else (None, name)


def activation(name):
    """The MLP's activation by its Hugging Face name, and whether that is the
    function itself (else an approximation, which --check lists)."""
    table = {"silu": jax.nn.silu, "swish": jax.nn.silu, "relu": jax.nn.relu,
             "gelu": lambda x: jax.nn.gelu(x, approximate=False),
             "gelu_new": lambda x: jax.nn.gelu(x, approximate=True),
             "gelu_pytorch_tanh": lambda x: jax.nn.gelu(x, approximate=True),
             "gelu_fast": lambda x: jax.nn.gelu(x, approximate=True)}
    act = (LLM or {}).get("hidden_act", "gelu_new")
    return table.get(act, table["gelu_new"]), act in table


def einsum_letters(layer):
    eq = layer["equation"]
    ins, out = eq.split("->")
    return ins.split(","), out


def bias_of(layer):
    """Whether a language model's projection has a bias (the config's)."""
    if not LLM:
        return False
    _, r = role(layer["name"])
    experts = "x" in einsum_letters(layer)[1] if layer["op"] == "Einsum" else False
    if r in ("q", "k", "v"):
        return bool(LLM.get("qkv_bias"))
    if r == "o":
        return bool(LLM.get("out_bias"))
    if r in ("gate", "up", "down") and not experts:
        return bool(LLM.get("mlp_bias"))
    return False


def tied(layer):
    return bool(LLM and LLM.get("tied_embeddings") and layer["name"] == "lm_head")


def extra_weights(layer):
    """A language model's weights that its graph's shapes leave out, each
    (name, shape, dims, init): the norms' scale (and LayerNorm's shift) along
    the normalised axis, and the biases over the output's letters but the
    batch, positions and token slots; sharded as the layer's output."""
    out = []
    if not LLM:
        return onnx_weights(layer)
    shape = layer["out_shapes"][0]
    dims = layer["out_specs"][0]
    if layer["op"] == "Norm":
        axis = layer["axis"] % len(shape)
        out.append(("scale", [shape[axis]], [dims[axis]], "ones"))
        if LLM.get("norm") == "layer":
            out.append(("shift", [shape[axis]], [dims[axis]], "zeros"))
    elif layer["op"] == "Einsum" and bias_of(layer):
        letters = einsum_letters(layer)[1]
        keep = [i for i, c in enumerate(letters) if c not in "blmt"]
        out.append(("bias", [shape[i] for i in keep], [dims[i] for i in keep], "zeros"))
    return out


def approximations():
    """The layers whose semantics the graph cannot carry, and what the
    program runs for each: (layer, how). An imported model's layer that its
    meta.onnx_layers describes runs as ONNX defines it and is not listed."""
    found = []
    fn, known = activation(None)
    if LLM and not known:
        found.append(("the MLPs", "the config's activation %r is not one the program knows; "
                      "GELU (tanh) runs in its place" % LLM.get("hidden_act")))
    for layer in LAYERS:
        op, pw, name = layer["op"], layer.get("pw", 0), layer["name"]
        if LLM and role(name)[1] in LLM_ROLES.get(op, ()):
            continue
        sem = layer.get("onnx", {})  # an imported layer's ONNX semantics, as recorded
        if "norm" in sem or "pool" in sem or "pointwise" in sem:
            continue
        if op == "Norm":
            found.append((name, "normalised along its axis without scale or shift, epsilon "
                          "1e-5: the graph's Norm has no weights and does not say RMS or mean"))
        elif op in ("FC", "Einsum", "Elementwise") and pw:
            found.append((name, "its %d fused point-wise operation(s) run as one GELU: the "
                          "graph counts them, it does not name them" % pw))
        elif op == "Conv" and pw:
            found.append((name, "its %d fused point-wise operation(s) run as one ReLU" % pw))
        elif op == "Activation":
            found.append((name, ("GELU" if pw else "ReLU") + ": the graph's Activation names "
                          "no function"))
        elif op == "Pool":
            found.append((name, "the mean over the window: the graph's Pool does not say "
                          "max or average"))
    return found


# The roles a language model's graph runs as the model's own layers.
LLM_ROLES = {
    "Norm": ("attn_norm", "mlp_norm", "final_norm"),
    "Einsum": ("q", "k", "v", "scores", "context", "o", "gate", "up", "down", "router",
               "slots", "dispatch", "combine", "lm_head"),
    "Elementwise": ("attn_add", "mlp_add", "gate_up", "embed_add"),
}


def rotary(x, base):
    """Rotary embedding of x (..., positions, head width) as Hugging Face's
    Llama applies it (rotate_half): frequencies base^(-2i/width) of the
    position; an odd width leaves its last element as it is."""
    n, width = x.shape[-2], x.shape[-1]
    half = width // 2
    inv = 1.0 / (base ** (jnp.arange(0, half, dtype=wide()) * 2.0 / (2 * half)))
    angle = jnp.arange(n, dtype=wide())[:, None] * inv[None, :]
    cos = jnp.concatenate([jnp.cos(angle)] * 2, axis=-1)
    sin = jnp.concatenate([jnp.sin(angle)] * 2, axis=-1)
    xr, rest = x[..., :2 * half], x[..., 2 * half:]
    x1, x2 = xr[..., :half], xr[..., half:]
    rotated = jnp.concatenate([-x2, x1], axis=-1)
    y = (xr.astype(wide()) * cos + rotated.astype(wide()) * sin).astype(x.dtype)
    return jnp.concatenate([y, rest], axis=-1) if rest.shape[-1] else y


def norm(layer, x, extra):
    """RMSNorm (x / rms * scale) or LayerNorm (standardised * scale + shift)
    in float32 with the config's epsilon."""
    axis = layer["axis"]
    eps = LLM.get("norm_eps", 1e-5)
    xf = x.astype(wide())
    if LLM.get("norm") == "layer":
        mean = jnp.mean(xf, axis=axis, keepdims=True)
        var = jnp.mean(jnp.square(xf - mean), axis=axis, keepdims=True)
        y = (xf - mean) * jax.lax.rsqrt(var + eps)
        y = y * extra["scale"].astype(wide()) + extra["shift"].astype(wide())
    else:
        y = xf * jax.lax.rsqrt(jnp.mean(jnp.square(xf), axis=axis, keepdims=True) + eps)
        y = y * extra["scale"].astype(wide())
    return y.astype(PREC.act)


def causal_softmax(y, letters):
    """The attention's scale 1 / sqrt(head width) is applied to q before;
    here the causal mask (key position m at most the query's l) and the
    softmax over the keys, in float32."""
    li, mi = letters.index("l"), letters.index("m")
    n, m = y.shape[li], y.shape[mi]
    mask = jnp.arange(m)[None, :] <= jnp.arange(n)[:, None]
    shape = [1] * y.ndim
    shape[li], shape[mi] = n, m
    mask = jnp.reshape(mask, shape)
    yf = jnp.where(mask, y.astype(wide()), -jnp.inf)
    return jax.nn.softmax(yf, axis=mi).astype(PREC.act)


def llm_layer(layer, xs, ws, extra, params):
    """One layer of a language model as the model computes it, or None for a
    layer the generic ops run."""
    _, r = role(layer["name"])
    op = layer["op"]
    if r not in LLM_ROLES.get(op, ()):
        return None
    if op == "Norm":
        return [norm(layer, xs[0], extra)]
    if op == "Elementwise":
        return [xs[0] * xs[1] if r == "gate_up" else xs[0] + xs[1]]
    ins, out = einsum_letters(layer)
    eq = layer["equation"]
    a, b = xs[0], xs[1]
    if r == "scores":
        # The scale folded into q (the same product), the mask and softmax after.
        a = a * jnp.asarray(1.0 / math.sqrt(a.shape[-1]), a.dtype)
        y = jnp.einsum(eq, a, b, preferred_element_type=wide())
        y = causal_softmax(y, out)
        return [checkpoint_name(y, "pase_attention_core")]
    if r == "dispatch":
        # The tokens go to their slots whole: the routing weight is applied
        # once, at the combination.
        a = (a > 0).astype(b.dtype)
    y = jnp.einsum(eq, a, b, preferred_element_type=wide())
    if "bias" in extra:
        # Over the output's letters but b, l, m, t: broadcast along those.
        shape = [1 if c in "blmt" else n for c, n in zip(out, y.shape)]
        y = y + jnp.reshape(extra["bias"].astype(wide()), shape)
    if r in ("q", "k") and LLM.get("rope_theta"):
        y = rotary(y, float(LLM["rope_theta"]))
    if r == "gate" or (r == "up" and not LLM.get("gated_mlp", True)):
        y = activation(None)[0](y)
    if r == "router":
        y = jax.nn.softmax(y, axis=-1)
    if r == "slots":
        return [route(xs[0], b.shape[0]).astype(PREC.act)]
    if r == "context":
        y = checkpoint_name(y, "pase_attention_core")
    return [y.astype(wide() if r in ("router", "lm_head") else PREC.act)]


def route(probs, capacity):
    """Top-k routing with a capacity (Mixtral's top-k, GShard's slots): each
    token's k most probable experts, their probabilities renormalised to sum
    to one; a token takes the next free slot of each chosen expert, in the
    sequence's order, and is dropped by an expert whose `capacity` slots are
    full. The result (batch, positions, experts, slots) holds each kept
    token's weight at its slot."""
    k = int(LLM.get("experts_per_token", 1))
    probs = probs.astype(wide())
    top, _ = jax.lax.top_k(probs, k)
    chosen = probs >= top[..., -1:]
    weight = jnp.where(chosen, probs, 0.0)
    weight = weight / jnp.sum(weight, axis=-1, keepdims=True)
    position = jnp.cumsum(chosen.astype(jnp.int32), axis=1) - 1   # per sequence, expert
    keep = chosen & (position < capacity)
    slot = jax.nn.one_hot(jnp.where(keep, position, -1), capacity, dtype=wide())
    return weight[..., None] * slot


def fused_context(q, k, v):
    """The attention core in one call (--fused-attention): q (b, h[, r], l,
    k), keys and values (b, h, m, k), as jax.nn.dot_product_attention's (b,
    l, heads, k) with the query heads of a key-value head together."""
    grouped = q.ndim == 5
    b, h = q.shape[0], q.shape[1]
    r = q.shape[2] if grouped else 1
    n, width = q.shape[-2], q.shape[-1]
    qq = jnp.moveaxis(q.reshape(b, h * r, n, width), 2, 1)
    kk, vv = jnp.moveaxis(k, 2, 1), jnp.moveaxis(v, 2, 1)
    y = jax.nn.dot_product_attention(qq, kk, vv, is_causal=True)
    y = jnp.moveaxis(y, 1, 2)
    return y.reshape(q.shape)


# ---- an imported model's layers as ONNX defines them (core/docs/export.md, "The graph") ----

def _selu(x, p):
    neg = p.get("alpha", 1.67326319217681884765625) * jnp.expm1(jnp.minimum(x, 0))
    return p.get("gamma", 1.05070102214813232421875) * jnp.where(x > 0, x, neg)


def _celu(x, p):
    a = p.get("alpha", 1.0)
    return jnp.maximum(x, 0) + jnp.minimum(0, a * jnp.expm1(jnp.minimum(x, 0) / a))


def _clip(x, p):
    lo, hi = p.get("min"), p.get("max")
    if lo is not None:
        x = jnp.maximum(x, jnp.asarray(lo, x.dtype))
    if hi is not None:
        x = jnp.minimum(x, jnp.asarray(hi, x.dtype))
    return x


# The one-input point-wise ops by their ONNX names, each as the ONNX
# operator defines it, with its attributes (ONNX's defaults where absent).
ONNX_UNARY = {
    "Relu": lambda x, p: jax.nn.relu(x),
    "LeakyRelu": lambda x, p: jnp.where(x >= 0, x, x * p.get("alpha", 0.01)),
    "Elu": lambda x, p: jnp.where(x >= 0, x, p.get("alpha", 1.0) * jnp.expm1(jnp.minimum(x, 0))),
    "Selu": _selu,
    "Celu": _celu,
    "Gelu": lambda x, p: jax.nn.gelu(x, approximate=p.get("approximate", "none") == "tanh"),
    "Sigmoid": lambda x, p: jax.nn.sigmoid(x),
    "HardSigmoid": lambda x, p: jnp.clip(p.get("alpha", 0.2) * x + p.get("beta", 0.5), 0, 1),
    "HardSwish": lambda x, p: x * jnp.clip(x / 6 + 0.5, 0, 1),
    "Softplus": lambda x, p: jax.nn.softplus(x),
    "Softsign": lambda x, p: x / (1 + jnp.abs(x)),
    "Tanh": lambda x, p: jnp.tanh(x),
    "Erf": lambda x, p: jax.lax.erf(x),
    "Clip": _clip,
    "Sqrt": lambda x, p: jnp.sqrt(x),
    "Neg": lambda x, p: -x,
    "Exp": lambda x, p: jnp.exp(x),
    "Log": lambda x, p: jnp.log(x),
    "Abs": lambda x, p: jnp.abs(x),
    "Reciprocal": lambda x, p: 1 / x,
    "Floor": lambda x, p: jnp.floor(x),
    "Ceil": lambda x, p: jnp.ceil(x),
    "Sin": lambda x, p: jnp.sin(x),
    "Cos": lambda x, p: jnp.cos(x),
    "Mish": lambda x, p: x * jnp.tanh(jax.nn.softplus(x)),
}

ONNX_BINARY = {"Add": jnp.add, "Sub": jnp.subtract, "Mul": jnp.multiply,
               "Div": jnp.divide, "Pow": jnp.power}

# The initial value of a learned point-wise operand: a bias adds nothing,
# a factor, divisor or exponent is one, PRelu's slope PyTorch's 0.25.
ONNX_WEIGHT_INIT = {"Add": "zeros", "Sub": "zeros", "Mul": "ones", "Div": "ones", "Pow": "ones",
                    "PRelu": 0.25}


def onnx_operand_dims(layer, shape):
    """A point-wise operand recorded as `shape` (broadcast against the
    layer's output from the right) in this variant: each dimension of size
    1 stays 1, unsharded; each other is the output's, sharded as it."""
    out, dims = layer["out_shapes"][0], layer["out_specs"][0]
    off = len(out) - len(shape)
    return ([1 if n == 1 else out[off + i] for i, n in enumerate(shape)],
            [[] if n == 1 else dims[off + i] for i, n in enumerate(shape)])


def norm_axes(layer, rank):
    """A recorded norm's weight axes: batch, the channel axis; layer, the
    normalised axes."""
    sem = layer["onnx"]
    axis = sem["axis"]
    return [axis] if sem["norm"] == "batch" else list(range(axis, rank))


def onnx_weights(layer):
    """The weights of an imported layer that its pase layer leaves out, each
    (name, shape, dims, init): a recorded norm's scale (ones) and bias
    (zeros) over its channels or normalised axes, the learned operands of
    its point-wise ops; sharded as the output's dimensions they follow."""
    sem = layer.get("onnx")
    if not sem:
        return []
    out = []
    shape, dims = layer["out_shapes"][0], layer["out_specs"][0]
    if "norm" in sem:
        keep = norm_axes(layer, len(shape))
        w = ([shape[i] for i in keep], [dims[i] for i in keep])
        if sem.get("scale"):
            out.append(("scale",) + w + ("ones",))
        if sem.get("bias"):
            out.append(("shift",) + w + ("zeros",))
    for i, p in enumerate(sem.get("pointwise", [])):
        if "weight" in p:
            wshape, wdims = onnx_operand_dims(layer, p["weight"])
            out.append(("pw%d" % i, wshape, wdims, ONNX_WEIGHT_INIT[p["op"]]))
    return out


def onnx_operand(layer, p, i, x, extra):
    """The second operand of point-wise op i: its learned weight, or its
    constant broadcast as recorded."""
    if "weight" in p:
        return extra["pw%d" % i].astype(x.dtype)
    c = jnp.asarray(p["constant"], x.dtype)
    return c if "shape" not in p else jnp.reshape(c, p["shape"])


def onnx_pointwise(layer, x, extra):
    """The point-wise ops recorded for the layer, in order, each as ONNX
    defines it."""
    for i, p in enumerate(layer["onnx"]["pointwise"]):
        op = p["op"]
        if op in ONNX_BINARY:
            w = onnx_operand(layer, p, i, x, extra)
            if i == 0 and "beta" in layer["onnx"]:  # a Gemm's C, times beta
                w = w * layer["onnx"]["beta"]
            x = ONNX_BINARY[op](w, x) if p.get("swapped") else ONNX_BINARY[op](x, w)
        elif op == "PRelu":
            x = jnp.where(x >= 0, x, x * onnx_operand(layer, p, i, x, extra))
        else:
            x = ONNX_UNARY[op](x, p)
    return x


def onnx_norm(layer, x, extra):
    """BatchNormalization in training mode (the batch's statistics over
    every axis but the channels, biased variance) or LayerNormalization (over
    the normalised axes), epsilon as recorded, then the scale and bias; the
    statistics in float32."""
    sem = layer["onnx"]
    axis, rank = sem["axis"], x.ndim
    axes = (tuple(i for i in range(rank) if i != axis) if sem["norm"] == "batch"
            else tuple(range(axis, rank)))
    xf = x.astype(wide())
    mean = jnp.mean(xf, axis=axes, keepdims=True)
    var = jnp.mean(jnp.square(xf - mean), axis=axes, keepdims=True)
    y = (xf - mean) * jax.lax.rsqrt(var + sem.get("epsilon", 1e-5))
    shape = [x.shape[i] if i in norm_axes(layer, rank) else 1 for i in range(rank)]
    if "scale" in extra:
        y = y * jnp.reshape(extra["scale"].astype(wide()), shape)
    if "shift" in extra:
        y = y + jnp.reshape(extra["shift"].astype(wide()), shape)
    return y.astype(x.dtype)


def onnx_pool(layer, x):
    """MaxPool (-inf outside the image) or AveragePool (the mean over the
    window's elements, the padding counted with count_include_pad), the
    node's own padding as recorded, after the zeros of a Pad before it."""
    sem = layer["onnx"]
    r, s = layer["window"]
    ph, pw = layer["pad"]
    z = sem.get("zero_pads")
    if z:
        x = jnp.pad(x, ((0, 0), (0, 0), (z[0], z[2]), (z[1], z[3])))
    p = sem.get("pads", [ph, pw, ph, pw])
    window, strides = (1, 1, r, s), (1, 1) + tuple(layer["stride"])
    padding = [(0, 0), (0, 0), (p[0], p[2]), (p[1], p[3])]
    if sem["pool"] == "max":
        return jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, window, strides, padding)
    total = jax.lax.reduce_window(x, 0.0, jax.lax.add, window, strides, padding)
    if sem.get("count_include_pad"):
        return total / (r * s)
    ones = jnp.ones((1, 1) + x.shape[2:], x.dtype)
    count = jax.lax.reduce_window(ones, 0.0, jax.lax.add, window, strides, padding)
    return total / count


# ---- the ops (core/docs/graph-format.md) ----

def _pw(layer, x, extra, stand_in):
    """The point-wise operations fused after a layer: as recorded for an
    imported model, else `stand_in` (GELU or ReLU) for them all."""
    if "pointwise" in layer.get("onnx", {}):
        return onnx_pointwise(layer, x, extra)
    return stand_in(x) if layer.get("pw", 0) else x


def _alpha(layer, y):
    # A Gemm's alpha: the product's factor.
    alpha = layer.get("onnx", {}).get("alpha")
    return y if alpha is None else y * alpha


def op_fc(layer, xs, ws, extra):
    return [_pw(layer, _alpha(layer, jnp.matmul(xs[0], ws[0])), extra, jax.nn.gelu)]


def op_einsum(layer, xs, ws, extra):
    y = _alpha(layer, jnp.einsum(layer["equation"], xs[0], xs[1]))
    return [_pw(layer, y, extra, jax.nn.gelu)]


def op_embedding(layer, xs, ws, extra):
    return [jnp.take(ws[0], xs[0], axis=0)]


def op_conv(layer, xs, ws, extra):
    ph, pw = layer["pad"]
    p = layer.get("onnx", {}).get("pads", [ph, pw, ph, pw])
    y = jax.lax.conv_general_dilated(
        xs[0], ws[0], window_strides=tuple(layer["stride"]),
        padding=[(p[0], p[2]), (p[1], p[3])],
        dimension_numbers=("NCHW", "OIHW", "NCHW"), feature_group_count=layer["group"])
    return [_pw(layer, y, extra, jax.nn.relu)]


def op_lstm(layer, xs, ws, extra):
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


def op_pool(layer, xs, ws, extra):
    if "pool" in layer.get("onnx", {}):
        return [onnx_pool(layer, xs[0])]
    r, s = layer["window"]
    ph, pw = layer["pad"]
    total = jax.lax.reduce_window(xs[0], 0.0, jax.lax.add, (1, 1, r, s),
                                  (1, 1) + tuple(layer["stride"]),
                                  [(0, 0), (0, 0), (ph, ph), (pw, pw)])
    return [total / (r * s)]


def op_elementwise(layer, xs, ws, extra):
    y = ONNX_BINARY[layer.get("onnx", {}).get("elementwise", "Add")](xs[0], xs[1])
    return [_pw(layer, y, extra, jax.nn.gelu)]


def op_activation(layer, xs, ws, extra):
    if "pointwise" in layer.get("onnx", {}):
        return [onnx_pointwise(layer, xs[0], extra)]
    return [jax.nn.gelu(xs[0]) if layer.get("pw", 0) else jax.nn.relu(xs[0])]


def op_norm(layer, xs, ws, extra):
    if "norm" in layer.get("onnx", {}):
        return [onnx_norm(layer, xs[0], extra)]
    x, axis = xs[0], layer["axis"]
    mean = jnp.mean(x, axis=axis, keepdims=True)
    var = jnp.mean(jnp.square(x - mean), axis=axis, keepdims=True)
    return [(x - mean) * jax.lax.rsqrt(var + 1e-5)]


def op_reduce_mean(layer, xs, ws, extra):
    axes = tuple(layer["axes"]) if layer.get("has_axes") else None
    return [jnp.mean(xs[0], axis=axes, keepdims=layer.get("keepdims", False))]


def op_softmax(layer, xs, ws, extra):
    if layer.get("onnx", {}).get("softmax") == "log":
        return [jax.nn.log_softmax(xs[0], axis=layer["axis"])]
    return [jax.nn.softmax(xs[0], axis=layer["axis"])]


def op_cross_entropy(layer, xs, ws, extra):
    logits, labels = xs[0], xs[1]
    picked = jnp.take_along_axis(logits, labels[..., None], axis=-1)[..., 0]
    return [jax.nn.logsumexp(logits, axis=-1) - picked]


def op_reshape(layer, xs, ws, extra):
    return [jnp.reshape(xs[0], layer["shape"])]


def op_transpose(layer, xs, ws, extra):
    return [jnp.transpose(xs[0], layer["perm"])]


def op_concat(layer, xs, ws, extra):
    return [jnp.concatenate(xs, axis=layer["axis"])]


def op_split(layer, xs, ws, extra):
    return list(jnp.split(xs[0], layer["num"], axis=layer["axis"]))


def op_stack(layer, xs, ws, extra):
    return [jnp.stack(xs, axis=layer["axis"])]


def op_unstack(layer, xs, ws, extra):
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

def param_defs():
    """Every weight: name -> (shape, planned dims, init, scale). The graph's
    weights are normal: a language model's with Hugging Face's standard
    deviation 0.02 (initializer_range), any other graph's with a variance of
    1 / fan-in; the norms' scales are ones, shifts and biases zeros. A tied
    output projection is the embedding's table (no weight of its own)."""
    defs = {}
    for layer in LAYERS:
        for k, w in enumerate(layer["weights"]):
            if tied(layer) and k == 0:
                continue
            scale = 0.02 if LLM else 1.0 / math.sqrt(max(1, w["fan_in"]))
            defs["%s/w%d" % (layer["name"], k)] = (w["shape"], w["spec"], "normal", scale)
        for name, shape, dims, init in extra_weights(layer):
            defs["%s/%s" % (layer["name"], name)] = (shape, dims, init, 1.0)
    return defs


PARAMS = param_defs()


def param_dims():
    """Where each weight is kept: its planned sharding, split further over
    the free axes under ZeRO-3."""
    z3 = TRAINING["zero"] >= 3
    return {k: (zero_dims(d, s) if z3 else d) for k, (s, d, _, _) in PARAMS.items()}


def init_fn(seed, dtype):
    """The weights as one function of the seed (jax.eval_shape reads their
    shapes from it): weight i is normal from fold_in(key(seed), i), scaled,
    or ones or zeros."""
    def make(seed):
        key = jax.random.key(seed, impl="rbg")
        return {name: _make_one(key, i, PARAMS[name], dtype)
                for i, name in enumerate(sorted(PARAMS))}
    return make


def _make_one(key, i, definition, dtype):
    shape, _, init, scale = definition
    if init == "ones":
        return jnp.ones(shape, dtype)
    if init == "zeros":
        return jnp.zeros(shape, dtype)
    if isinstance(init, float):
        return jnp.full(shape, init, dtype)
    w = jax.random.normal(jax.random.fold_in(key, i), shape, jnp.float32)
    return (w * scale).astype(dtype)


_MAKERS = {}


def make_params(seed, dtype, shardings=None):
    """The weights, made where they are kept: each by a jitted function of
    the seed whose output sharding is the weight's (each device makes its
    own shards; nothing is made whole on the host, and the values are the
    same under any sharding). One function per weight's shape and sharding,
    not one for all; the bits are XLA's RngBitGenerator ("rbg"), which
    compiles in a tenth of threefry's time (about 1.5 s a shape on a CPU)
    and gives the same values under every sharding, as the check confirms."""
    key = jax.random.key(seed, impl="rbg")
    out = {}
    for i, name in enumerate(sorted(PARAMS)):
        shape, _, init, scale = PARAMS[name]
        target = shardings[name] if shardings is not None else None
        sig = (tuple(shape), init, scale, jnp.dtype(dtype).name,
               None if target is None else (target.spec, id(target.mesh)))
        fn = _MAKERS.get(sig)
        if fn is None:
            def one(key, i, definition=PARAMS[name]):
                return _make_one(key, i, definition, dtype)
            fn = jax.jit(one, out_shardings=target) if target is not None else jax.jit(one)
            _MAKERS[sig] = fn
        if target is None:
            with jax.default_device(jax.devices()[0]):
                out[name] = fn(key, i)
        else:
            out[name] = fn(key, i)
    return out


TEXT = None
if ARGS.data:
    with open(ARGS.data, "rb") as f:
        TEXT = np.frombuffer(f.read(), dtype=np.uint8).astype(np.int32)


def vocabulary(high):
    """Token ids below the model's vocabulary (a padded vocabulary's extra
    rows are never a token)."""
    v = (LLM or {}).get("vocab_size", high)
    return max(1, min(v, high))


def make_inputs(seed, microbatch):
    """The graph's inputs for one micro-batch. A language model: its tokens
    (windows of --data's bytes, else random below the vocabulary), the
    labels the next tokens, positions 0, 1, ...; other graphs: normal data,
    ids below their vocabulary, the losses' labels below their classes."""
    rng = np.random.default_rng(seed * 7919 + 1 + microbatch)
    data = {}
    tokens = None
    for x in VARIANT["inputs"]:
        shape = x["shape"]
        if LLM and x["name"] == "positions":
            data[x["name"]] = np.broadcast_to(np.arange(shape[-1], dtype=np.int32),
                                              shape).copy()
        elif LLM and x["kind"] == "ids" and len(shape) == 2:
            b, n = shape
            high = vocabulary(x["high"])
            if TEXT is not None:
                starts = rng.integers(0, len(TEXT) - n - 1, b)
                seqs = np.stack([TEXT[s:s + n + 1] for s in starts]) % high
            else:
                seqs = rng.integers(0, high, (b, n + 1), dtype=np.int32)
            if x["name"].endswith("/labels") and tokens is not None:
                data[x["name"]] = tokens[:, 1:].astype(np.int32)
            else:
                tokens = seqs
                data[x["name"]] = seqs[:, :-1].astype(np.int32)
        elif x["kind"] == "ids":
            data[x["name"]] = rng.integers(0, x["high"], shape, dtype=np.int32)
        else:
            data[x["name"]] = rng.standard_normal(shape, dtype=np.float32)
    return data


def input_specs():
    return {x["name"]: x["spec"] for x in VARIANT["inputs"]}


def param_specs():
    return param_dims()


def segments():
    """The layers in runs that recompute alike: (mode, layer indices), mode
    None, "selective" or "full" (a decoder block as the plan recomputes it)."""
    out = []
    for index, layer in enumerate(LAYERS):
        mode = layer.get("recompute")
        block = role(layer["name"])[0]
        if out and mode and out[-1][0] == mode and out[-1][2] == block:
            out[-1][1].append(index)
        else:
            out.append((mode, [index], block))
    return [(m, idx) for m, idx, _ in out]


def run_layer(index, params, env, constrain):
    layer = LAYERS[index]
    name = layer["name"]
    with jax.named_scope("pase%d" % index):
        if ARGS.fused_attention and role(name)[1] == "scores":
            return None
        fused = ARGS.fused_attention and role(name)[1] == "context"
        xs = []
        for k, operand in enumerate(layer["operands"]):
            if fused and k == 0:  # the scores, not formed: q and k are read below
                xs.append(None)
                continue
            if isinstance(operand, dict):
                if tied(layer) and operand["weight"] == 0:
                    x = jnp.transpose(params["embed/w0"])
                else:
                    x = params["%s/w%d" % (name, operand["weight"])]
                x = x.astype(PREC.act)
                if constrain and (TRAINING["zero"] >= 3 or tied(layer)):
                    # ZeRO-3 gathers the weight to the layer's planned sharding
                    # (a tied table is the embedding's, read as the head's).
                    x = jax.lax.with_sharding_constraint(
                        x, sharding(layer["weights"][operand["weight"]]["spec"]))
            else:
                x = env[operand]
            in_spec = layer["in_specs"][k]
            if constrain and in_spec is not None:
                x = jax.lax.with_sharding_constraint(x, sharding(in_spec))
            xs.append(x)
        ws = [params["%s/w%d" % (name, k)].astype(PREC.act) for k in layer["implicit"]]
        extra = {n: params["%s/%s" % (name, n)] for n, _, _, _ in extra_weights(layer)}
        if constrain and TRAINING["zero"] >= 3:
            # ZeRO-3 gathers them, as the graph's weights, to the planned sharding.
            extra = {n: jax.lax.with_sharding_constraint(extra[n], sharding(d))
                     for n, _, d, _ in extra_weights(layer)}
        ys = None
        if LLM and fused:
            scores = LAYERS[index - 1] if index else None
            q, kk = (env[o] for o in scores["operands"]) if scores else (None, None)
            ys = [fused_context(q * jnp.asarray(1.0 / math.sqrt(q.shape[-1]), q.dtype),
                                kk, xs[1]).astype(PREC.act)]
        elif LLM:
            ys = llm_layer(layer, xs, ws, extra, params)
        if ys is None:
            ys = OPS[layer["op"]](layer, xs, ws, extra)
        if constrain:
            ys = [jax.lax.with_sharding_constraint(y, sharding(s))
                  for y, s in zip(ys, layer["out_specs"])]
    return ys


def forward(params, data, constrain, outputs=None):
    """The loss of one micro-batch; with `constrain`, every layer's output
    (and each input the plan re-distributes) takes the plan's sharding. With
    `outputs` (a dict), every layer's outputs are put there. A decoder block
    that the plan recomputes runs under jax.checkpoint: full, nothing of it
    kept; selective, all but the attention core (scores, softmax, context)."""
    env = dict(data)

    def run(indices, params, env):
        env = dict(env)
        got = {}
        for index in indices:
            ys = run_layer(index, params, env, constrain)
            if ys is None:
                continue
            name = LAYERS[index]["name"]
            if len(ys) == 1:
                env[name] = ys[0]
            for k, y in enumerate(ys):
                env["%s:%d" % (name, k)] = y
            got[name] = ys
        return got

    for mode, indices in segments():
        fn = lambda p, e, indices=indices: run(indices, p, e)  # noqa: E731
        if mode == "full":
            fn = jax.checkpoint(fn)
        elif mode == "selective":
            fn = jax.checkpoint(fn, policy=jax.checkpoint_policies.save_anything_except_these_names(
                "pase_attention_core"))
        got = fn(params, env)
        for name, ys in got.items():
            if len(ys) == 1:
                env[name] = ys[0]
            for k, y in enumerate(ys):
                env["%s:%d" % (name, k)] = y
            if outputs is not None:
                outputs[name] = ys
    loss = 0.0
    for name in VARIANT["sinks"]:
        y = env[name].astype(wide())
        layer = next(lay for lay in LAYERS if lay["name"] == name.split(":")[0])
        loss = loss + (jnp.mean(y) if layer["op"] == "SoftmaxCrossEntropy"
                       else jnp.mean(jnp.square(y)))
    return loss


def step_function(constrain, outputs=False):
    """Loss and gradients over the plan's micro-batches (their mean: the
    gradients accumulated in float32); with `outputs`, also every layer's
    outputs of the first micro-batch. Under ZeRO-2 and 3 the gradients are
    kept as the optimizer's state is (split over the free axes)."""
    gdims = {k: zero_dims(d, PARAMS[k][0]) for k, d in param_dims().items()}

    def with_outputs(params, data):
        out = {}
        return forward(params, data, constrain, out), out

    def step(params, batches):
        total, grads, first = 0.0, None, None
        for data in batches:
            (loss, out), g = jax.value_and_grad(with_outputs, has_aux=True)(params, data)
            g = jax.tree_util.tree_map(lambda t: t.astype(wide()), g)
            first = out if first is None else first
            total = total + loss
            grads = g if grads is None else jax.tree_util.tree_map(jnp.add, grads, g)
        m = float(len(batches))
        mean = {k: (t / m).astype(params[k].dtype) for k, t in grads.items()}
        if constrain and TRAINING["zero"] >= 2:
            mean = {k: jax.lax.with_sharding_constraint(t, sharding(gdims[k]))
                    for k, t in mean.items()}
        return (total / m, mean, first) if outputs else (total / m, mean)
    return step


def optimizer(lr):
    """AdamW (optax): betas 0.9 and 0.95, weight decay 0.1 on the matrices
    (the weights drawn from a normal distribution; not on norms' scales,
    shifts and biases, a language model's two-dimensional q, k and v biases
    included, nor on an imported layer's point-wise operands), as Llama's
    pre-training."""
    return optax.adamw(lr, b1=0.9, b2=0.95, eps=1e-8, weight_decay=0.1,
                       mask=lambda p: {k: v.ndim >= 2 and PARAMS[k][2] == "normal"
                                       for k, v in p.items()})


def opt_dims():
    """The optimizer state's shardings: as the weights', split further over
    the free axes under ZeRO-1 and above."""
    z = TRAINING["zero"] >= 1
    return {k: (zero_dims(d, PARAMS[k][0]) if z else d) for k, d in param_dims().items()}


def _constrain_like_params(tree, dims):
    def is_params(x):
        return isinstance(x, dict) and set(x) == set(PARAMS)
    return jax.tree_util.tree_map(
        lambda t: {k: jax.lax.with_sharding_constraint(v, sharding(dims[k]))
                   for k, v in t.items()} if is_params(t) else t,
        tree, is_leaf=is_params)


def opt_init(params, lr, constrain):
    """The optimizer's state: with a master copy (the plan's 12 bytes under
    2-byte weights), the float32 weights and AdamW's moments of them; else
    the moments of the weights."""
    opt = optimizer(lr)
    if PREC.master:
        master = {k: v.astype(jnp.float32) for k, v in params.items()}
        state = {"master": master, "adam": opt.init(master)}
    else:
        state = {"adam": opt.init(params)}
    return _constrain_like_params(state, opt_dims()) if constrain else state


def update(params, grads, state, lr, constrain):
    opt = optimizer(lr)
    if PREC.master:
        master = state["master"]
        g = {k: v.astype(jnp.float32) for k, v in grads.items()}
        upd, adam = opt.update(g, state["adam"], master)
        master = optax.apply_updates(master, upd)
        new = {k: v.astype(params[k].dtype) for k, v in master.items()}
        state = {"master": master, "adam": adam}
    else:
        upd, adam = opt.update(grads, state["adam"], params)
        new = optax.apply_updates(params, upd)
        state = {"adam": adam}
    if constrain:
        state = _constrain_like_params(state, opt_dims())
        new = {k: jax.lax.with_sharding_constraint(v, sharding(param_dims()[k]))
               for k, v in new.items()}
    return new, state


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


def batches_of(seed, step=0):
    return [make_inputs(seed + 100003 * step, m) for m in range(PLAN["microbatches"])]


def train_function(constrain, lr):
    """One training step: the micro-batches' gradients, then AdamW."""
    step = step_function(constrain)

    def train(params, state, batches):
        loss, grads = step(params, batches)
        params, state = update(params, grads, state, lr, constrain)
        return loss, params, state
    return train


def tokens_per_batch():
    n = 0
    for x in VARIANT["inputs"]:
        if x["kind"] == "ids" and not x["name"].endswith("/labels") and x["name"] != "positions":
            n = max(n, int(np.prod(x["shape"])))
    return n * PLAN["microbatches"]


def train(steps, constrain, dtype=None, quiet=False):
    """`steps` training steps from the seed's weights; the loss of each."""
    global PREC
    if dtype is not None:
        PREC = Precision(dtype, dtype, False)
    else:
        PREC = plan_precision()
    p_shard = {k: sharding(s) for k, s in param_specs().items()} if constrain else None
    i_shard = ([{k: sharding(s) for k, s in input_specs().items()}
                for _ in range(PLAN["microbatches"])] if constrain else None)
    params = make_params(ARGS.seed, PREC.param, p_shard)
    one = jax.devices()[0]
    if constrain:
        state = jax.jit(lambda p: opt_init(p, ARGS.lr, True))(params)
        fn = jax.jit(train_function(True, ARGS.lr), donate_argnums=(0, 1))
    else:
        with jax.default_device(one):
            state = jax.jit(lambda p: opt_init(p, ARGS.lr, False))(params)
        fn = jax.jit(train_function(False, ARGS.lr), donate_argnums=(0, 1))
    losses = []
    tokens = tokens_per_batch()
    for i in range(steps):
        host = batches_of(ARGS.seed, i)
        batches = jax.device_put(host, i_shard if constrain else one)
        start = time.perf_counter()
        loss, params, state = fn(params, state, batches)
        loss = float(loss)
        seconds = time.perf_counter() - start
        losses.append(loss)
        if not quiet:
            rate = ("%.0f tokens/s" % (tokens / seconds)) if tokens else ""
            print("step %d  loss %.6f  %.3f s  %s%s" % (i + 1, loss, seconds, rate,
                                                       "  (compiles)" if i == 0 else ""),
                  flush=True)
    return losses


def train_steps():
    steps = ARGS.steps if ARGS.steps is not None else 1
    prec = plan_precision()
    print("%s on %d devices (mesh %s): %d step(s), AdamW lr %g, weights %s, activations %s%s, "
          "ZeRO-%d" % (PLAN["graph"], PLAN["devices"], AXIS_SIZE, steps, ARGS.lr,
                       jnp.dtype(prec.param).name, jnp.dtype(prec.act).name,
                       ", float32 master weights" if prec.master else "", TRAINING["zero"]))
    for where, how in approximations():
        print("approximated: %s: %s" % (where, how))
    losses = train(steps, True)
    if losses:
        print("loss %.6f after %d step(s)" % (losses[-1], len(losses)))
    peaks = []
    for d in MESH.devices.flat:
        stats = d.memory_stats() if hasattr(d, "memory_stats") else None
        if stats and "peak_bytes_in_use" in stats:
            peaks.append(stats["peak_bytes_in_use"])
    if peaks:
        print("peak memory per device %.3f GiB (largest of %d)" % (max(peaks) / 2**30,
                                                                 len(peaks)))


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


def relative_error(a, b, floor=0.0):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), floor, 1e-30))


def compare_steps(dtype):
    """Loss and gradients of the sharded and the unsharded step in `dtype`:
    (relative error of the loss, of each gradient), and the sharded step's
    compiled program, loss, gradients, arguments."""
    global PREC
    PREC = Precision(dtype, dtype, False)
    batches = [{k: (v.astype(dtype) if v.dtype.kind == "f" else v) for k, v in b.items()}
               for b in batches_of(ARGS.seed)]
    fn, p_shard, i_shard = sharded_step(outputs=True)
    params = make_params(ARGS.seed, dtype, p_shard)
    # The step on one device, without any sharding: the reference, from the
    # same weights (moved to the first device: the values are the same as
    # make_params(seed, dtype) there, and their functions compile once).
    one = jax.devices()[0]
    ref_loss, ref_grads = jax.jit(step_function(False))(
        jax.device_put(params, one), jax.device_put(batches, one))
    placed = jax.device_put(batches, i_shard)
    compiled = fn.lower(params, placed).compile()
    loss, grads, _ = compiled(params, placed)
    # A gradient is compared relative to its own largest value, but at least
    # a thousandth of the step's largest: a gradient that is zero in exact
    # arithmetic (a key's bias: the softmax ignores a constant added to a
    # row of scores) is rounding alone, as large relative to itself as not.
    scale = max((float(np.max(np.abs(np.asarray(g)))) for g in ref_grads.values()),
                default=0.0)
    errors = {name: relative_error(grads[name], ref_grads[name], 1e-3 * scale)
              for name in ref_grads}
    return (relative_error(loss, ref_loss), errors, compiled,
            (float(loss), float(ref_loss), grads, params, placed, p_shard, i_shard))


def compare_training(steps):
    """`steps` training steps sharded and unsharded in float32 from the same
    weights and batches: the losses of both and the largest relative
    difference of a step's loss."""
    sharded = train(steps, True, jnp.float32, quiet=True)
    alone = train(steps, False, jnp.float32, quiet=True)
    diffs = [abs(a - b) / max(abs(b), 1e-30) for a, b in zip(sharded, alone)]
    return sharded, alone, diffs


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
    # The optimizer's step on the sharded gradients (AdamW, its state as planned).
    state = jax.jit(lambda p: opt_init(p, ARGS.lr, True))(params)
    new, state = jax.jit(lambda p, g, s: update(p, g, s, ARGS.lr, True))(params, grads, state)
    jax.block_until_ready(new)
    report["approximations"] = ["%s: %s" % a for a in approximations()]
    if ARGS.steps:
        sharded, alone, diffs = compare_training(ARGS.steps)
        report["training"] = {"steps": ARGS.steps, "sharded": sharded, "unsharded": alone,
                              "largest_error": max(diffs, default=0.0),
                              "data": ARGS.data, "lr": ARGS.lr}
        if not max(diffs, default=0.0) <= ARGS.tolerance:
            step = max(range(len(diffs)), key=lambda i: diffs[i])
            report["mismatches"].append(
                "training: step %d's loss differs by %.3g (sharded %.8g, unsharded %.8g)"
                % (step + 1, diffs[step], sharded[step], alone[step]))

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
    for line in report["approximations"]:
        print("  approximated " + line)
    if "training" in report:
        t = report["training"]
        print("  training  %d AdamW steps (lr %g) sharded and unsharded, largest relative "
              "difference of a step's loss %.2g" % (t["steps"], t["lr"], t["largest_error"]))
        for i, (a, b) in enumerate(zip(t["sharded"], t["unsharded"])):
            print("    step %3d  loss %.6f  unsharded %.6f" % (i + 1, a, b))
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
        train_steps()
