#!/usr/bin/python3
"""ONNX fixtures of the importer's tests (tests/onnx/README.md).

    /usr/bin/python3 tests/onnx/make_fixtures.py              # tests/data/onnx/*.onnx + manifest.json
    /usr/bin/python3 tests/onnx/make_fixtures.py --vgg16 PATH  # VGG-16 with weights (~550 MB), not committed

Needs Debian's python3-torch, python3-torchvision and python3-onnx (run it with
/usr/bin/python3: another python3 on PATH may lack them).

Every model is exported in eval mode with static shapes, opset 13, its data
input named "input". The committed ones are exported without weights
(export_params=False): the weights then arrive as graph inputs. Before
exporting, every parameter and buffer is filled with distinct random values:
fresh weights repeat values (zero biases, unit norm scales, the cloned layers
of nn.TransformerEncoder), and the exporter would alias the repeats to one
graph input through Identity nodes, so counting distinct weights would
undercount.

The manifest gives each fixture's expected parameter count: PyTorch's
sum(p.numel()) less what the eval-mode export folds away (a BatchNorm after a
bias-free Conv becomes the Conv's bias: its 2c parameters become c). The
script checks that number against the exported file itself (the distinct
floating-point graph inputs and initializers other than "input") and stops
when they differ. Its output is deterministic: a second run writes the same
bytes.
"""

import argparse
import hashlib
import json
import os
import re
import sys
import warnings

import onnx
import torch
import torchvision

OPSET = 13
HERE = os.path.dirname(os.path.abspath(__file__))
OUT_DIR = os.path.join(HERE, "..", "data", "onnx")


class TinyCnn(torch.nn.Module):
    """Two Conv+BatchNorm+ReLU blocks and a classifier: small enough to commit with weights."""

    def __init__(self):
        super().__init__()
        self.features = torch.nn.Sequential(
            torch.nn.Conv2d(3, 8, 3, padding=1, bias=False),
            torch.nn.BatchNorm2d(8),
            torch.nn.ReLU(),
            torch.nn.MaxPool2d(2),
            torch.nn.Conv2d(8, 16, 3, padding=1, bias=False),
            torch.nn.BatchNorm2d(16),
            torch.nn.ReLU(),
            torch.nn.AdaptiveAvgPool2d(1),
        )
        self.classifier = torch.nn.Linear(16, 10)

    def forward(self, x):
        return self.classifier(torch.flatten(self.features(x), 1))


class TinyMlp(torch.nn.Module):
    """Two Linear layers; exported with a dynamic batch dimension ("batch")."""

    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(32, 64)
        self.fc2 = torch.nn.Linear(64, 10)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def gpt_stack():
    layer = torch.nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=256,
                                             batch_first=True)
    # enable_nested_tensor=False: the nested-tensor fast path is not exportable.
    return torch.nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)


def densenet_bn_channels(model):
    """DenseNet-121's BatchNorms: (folded channels, running-statistics elements left in the file).

    Each dense layer is BN-ReLU-Conv1x1-BN-ReLU-Conv3x3: its second BatchNorm
    (norm2) follows the bias-free 1x1 Conv and folds into it, as does the
    stem's norm0 after conv0. The others (each layer's norm1, the
    transitions' norm and norm5) follow a concatenation or a dense block and
    stay BatchNormalization nodes, whose running mean and variance the export
    (without weights) leaves as graph inputs: they are in the file but are not
    parameters.
    """
    folded = kept = 0
    for name, m in model.named_modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            if name == "features.norm0" or name.endswith(".norm2"):
                folded += m.num_features
            else:
                kept += m.num_features
    return folded, 2 * kept


# name -> (constructor, input shape, export_params, dynamic_axes, what it is)
FIXTURES = {
    "resnet50": (lambda: torchvision.models.resnet50(weights=None), [1, 3, 224, 224], False, None,
                 "torchvision ResNet-50"),
    "inception_v3": (lambda: torchvision.models.inception_v3(
        weights=None, aux_logits=False, init_weights=False), [1, 3, 299, 299], False, None,
                     "torchvision Inception-v3 without the auxiliary classifier"),
    "mobilenet_v2": (lambda: torchvision.models.mobilenet_v2(weights=None), [1, 3, 224, 224],
                     False, None, "torchvision MobileNet-v2"),
    "vit_b_16": (lambda: torchvision.models.vit_b_16(weights=None), [1, 3, 224, 224], False,
                 None, "torchvision ViT-B/16"),
    "gpt_stack": (gpt_stack, [2, 16, 64], False, None,
                  "nn.TransformerEncoder of 2 TransformerEncoderLayer(d_model=64, nhead=4, "
                  "dim_feedforward=256, batch_first=True)"),
    "tiny_cnn": (TinyCnn, [1, 3, 32, 32], True, None,
                 "two Conv+BatchNorm+ReLU blocks and a Linear, with its weights"),
    "tiny_mlp_dynamic": (TinyMlp, [4, 32], False, {"input": {0: "batch"}, "output": {0: "batch"}},
                         "two Linear layers, dynamic batch dimension 'batch'"),
    "densenet121": (lambda: torchvision.models.densenet121(weights=None), [1, 3, 224, 224], False,
                    None, "torchvision DenseNet-121: dense blocks whose every layer reads the "
                    "concatenation of all earlier ones (the bounded search's test)"),
}

# Fixtures whose BatchNorms do not all follow a bias-free Conv: their own rule
# (folded channels, running-statistics elements the file holds beside the
# parameters).
BN_RULES = {"densenet121": densenet_bn_channels}


def distinct_values(model, seed):
    """Fills every floating-point parameter and buffer with distinct random values."""
    torch.manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.uniform_(-1.0, 1.0)
        for name, b in model.named_buffers():
            if not b.is_floating_point():
                continue  # num_batches_tracked
            # running_var must stay positive; the other buffers take any value.
            b.uniform_(0.5, 1.5) if name.endswith("running_var") else b.uniform_(-1.0, 1.0)


def folded_bn_channels(model):
    """Channels of the BatchNorms that the eval-mode export folds into the Conv before them."""
    folded = 0
    modules = list(model.modules())
    for i, m in enumerate(modules):
        if isinstance(m, torch.nn.BatchNorm2d):
            prev = modules[i - 1] if i > 0 else None
            # torchvision's blocks (and TinyCnn) declare each Conv just before its BatchNorm
            # and apply them in that order; a BatchNorm elsewhere would not fold.
            if not (isinstance(prev, torch.nn.Conv2d) and prev.bias is None
                    and prev.out_channels == m.num_features):
                raise SystemExit(f"BatchNorm {i} does not follow a bias-free Conv: "
                                 "the folding rule of the manifest does not apply")
            folded += m.num_features
    return folded


def onnx_parameters(path):
    """Elements of the distinct floating-point graph inputs and initializers but 'input'."""
    model = onnx.load(path, load_external_data=False)
    floats = {onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE, onnx.TensorProto.FLOAT16,
              onnx.TensorProto.BFLOAT16}
    sizes = {}
    for t in model.graph.initializer:
        if t.data_type in floats:
            n = 1
            for d in t.dims:
                n *= d
            sizes[t.name] = n
    for i in model.graph.input:
        tensor = i.type.tensor_type
        if i.name == "input" or i.name in sizes or tensor.elem_type not in floats:
            continue
        n = 1
        for d in tensor.shape.dim:
            n *= d.dim_value
        sizes[i.name] = n
    return sum(sizes.values()), len(sizes)


def export(model, shape, path, export_params, dynamic_axes):
    model.eval()
    torch.onnx.export(model, torch.randn(*shape), path, export_params=export_params,
                      opset_version=OPSET, do_constant_folding=True, input_names=["input"],
                      output_names=["output"], dynamic_axes=dynamic_axes)


def make_fixtures(names, out_dir=None):
    """Exports the fixtures to tests/data/onnx, or all with their weights to `out_dir`."""
    with_weights = out_dir is not None
    out_dir = out_dir or OUT_DIR
    os.makedirs(out_dir, exist_ok=True)
    manifest_path = os.path.join(out_dir, "manifest.json")
    entries = {}
    if os.path.exists(manifest_path):
        with open(manifest_path) as f:
            entries = {e["name"]: e for e in json.load(f)["fixtures"]}
    for seed, (name, (make, shape, export_params, dynamic_axes, about)) in enumerate(
            FIXTURES.items()):
        if names and name not in names:
            continue
        model = make()
        distinct_values(model, seed)
        torch_count = sum(p.numel() for p in model.parameters())
        if name in BN_RULES:
            folded, statistics = BN_RULES[name](model)
        else:
            folded, statistics = folded_bn_channels(model), 0
        expected = torch_count - folded
        export_params = export_params or with_weights
        path = os.path.join(out_dir, name + ".onnx")
        torch.manual_seed(seed)  # the example input
        export(model, shape, path, export_params, dynamic_axes)
        found, tensors = onnx_parameters(path)
        with open(path, "rb") as f:
            data = f.read()
        print(f"{name:18s} torch {torch_count:>11,d}  folded BatchNorm channels {folded:>7,d}  "
              f"expected {expected:>11,d}  in the file {found:>11,d} ({tensors} tensors)  "
              f"{len(data) / 1024:7.1f} KiB")
        if found != expected + statistics:
            raise SystemExit(f"{name}: the file holds {found} parameters and statistics, "
                             f"expected {expected} + {statistics}")
        entry = {
            "name": name,
            "file": name + ".onnx",
            "about": about,
            "input_shape": shape,
            "opset": OPSET,
            "export_params": export_params,
            "torch_parameters": torch_count,
            "folded_bn_channels": folded,
            "expected_parameters": expected,
            "weight_tensors": tensors,
            "bytes": len(data),
            "sha256": hashlib.sha256(data).hexdigest(),
        }
        if statistics:
            entry["running_statistics"] = statistics
        if dynamic_axes:
            entry["dynamic_dims"] = sorted({d for axes in dynamic_axes.values()
                                            for d in axes.values()})
        entries[name] = entry
    manifest = {
        "about": "ONNX fixtures made by tests/onnx/make_fixtures.py (tests/onnx/README.md). "
                 "expected_parameters = torch_parameters - folded_bn_channels: what the "
                 "importer must report.",
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "onnx": onnx.__version__,
        "fixtures": [entries[n] for n in FIXTURES if n in entries],
    }
    text = json.dumps(manifest, indent=2)
    # Lists of numbers on one line: [1, 3, 224, 224].
    text = re.sub(r"\[\s+([-\d,\s]+?)\s+\]",
                  lambda m: "[" + ", ".join(m.group(1).split()).replace(",,", ",") + "]", text)
    with open(manifest_path, "w") as f:
        f.write(text + "\n")


def make_vgg16(path):
    """VGG-16 with its weights (~550 MB), for tests/onnx/bench_large.sh."""
    model = torchvision.models.vgg16(weights=None)
    distinct_values(model, 0)
    export(model, [1, 3, 224, 224], path, True, None)
    count = sum(p.numel() for p in model.parameters())
    found, _ = onnx_parameters(path)
    print(f"vgg16: {os.path.getsize(path):,d} bytes, torch {count:,d} parameters, "
          f"in the file {found:,d}")
    if found != count:
        raise SystemExit(f"vgg16: the file holds {found} parameters, expected {count}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("names", nargs="*", help="only these fixtures (default: all)")
    parser.add_argument("--vgg16", metavar="PATH",
                        help="export VGG-16 with weights to PATH instead")
    parser.add_argument("--with-weights", metavar="DIR",
                        help="export the fixtures with their weights (export_params=True) and "
                             "their manifest to DIR instead (not committed: CI makes them)")
    args = parser.parse_args()
    unknown = [n for n in args.names if n not in FIXTURES]
    if unknown:
        parser.error(f"unknown fixture {', '.join(unknown)}; known: {', '.join(FIXTURES)}")
    torch.set_num_threads(min(2, torch.get_num_threads()))
    # The tracer warns about ViT's shape asserts, which static shapes make constant.
    warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)
    if args.vgg16:
        make_vgg16(args.vgg16)
    else:
        make_fixtures(args.names, args.with_weights)
    return 0


if __name__ == "__main__":
    sys.exit(main())
