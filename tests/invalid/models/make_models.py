"""Writes the invalid ONNX models of tests/invalid/models/ (see cases.json).

Run with Debian's python3-onnx: /usr/bin/python3 tests/invalid/models/make_models.py
Each model is small and built with onnx.helper, so the files are the same on
every run.
"""
import os
import struct

import onnx
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))


def value(name, dims, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, dims)


def save(name, nodes, inputs, outputs, opset=13, initializers=(), domain_opsets=()):
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=list(initializers))
    opsets = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, v) for d, v in domain_opsets]
    model = helper.make_model(graph, producer_name="pase-tests", opset_imports=opsets)
    model.ir_version = 7
    with open(os.path.join(HERE, name + ".onnx"), "wb") as f:
        f.write(model.SerializeToString())
    return model


def small_cnn():
    w = helper.make_tensor("w", TensorProto.FLOAT, [4, 3, 3, 3], [0.5] * 108)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["y"], name="relu")]
    return nodes, [value("x", [2, 3, 8, 8])], [value("y", [2, 4, 8, 8])], [w]


def main():
    with open(os.path.join(HERE, "not_onnx.onnx"), "wb") as f:
        f.write(b"This is a text file, not an ONNX model.\n")
    # Files of other kinds renamed .onnx, which the content detection names
    # (core/src/model/onnx/onnx_sniff.cpp): an image, torch.save's ZIP (the
    # local header of its first record, archive/data.pkl) and its older
    # pickle, a safetensors header, another ZIP archive.
    zip_header = lambda name: (b"PK\x03\x04" + struct.pack("<HHHHHIIIHH", 0, 0, 0, 0, 0, 0, 0, 0, len(name), 0)
                               + name)
    others = {
        "png_image": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x02\x00\x00\x00\x90wS\xde",
        "torch_checkpoint": zip_header(b"archive/data.pkl") + b"\x80\x02}q\x00.",
        "torch_legacy": b"\x80\x02\x8a\x0al\xfc\x9cF\xf9 j\xa8P\x19.",
        "weights_safetensors": struct.pack("<Q", 19) + b'{"__metadata__":{}}',
        "zip_archive": zip_header(b"notes.txt"),
    }
    for name, data in others.items():
        with open(os.path.join(HERE, name + ".onnx"), "wb") as f:
            f.write(data)

    nodes, inputs, outputs, inits = small_cnn()
    model = save("truncated", nodes, inputs, outputs, initializers=inits)
    data = model.SerializeToString()
    with open(os.path.join(HERE, "truncated.onnx"), "wb") as f:
        f.write(data[: len(data) * 2 // 3])

    save("unsupported_op",
         [helper.make_node("TopK", ["x", "k"], ["v", "i"], name="/head/TopK")],
         [value("x", [2, 10]), value("k", [1], TensorProto.INT64)], [value("v", [2, 3])])

    save("opset_too_old", [helper.make_node("Relu", ["x"], ["y"], name="relu")],
         [value("x", [2, 4])], [value("y", [2, 4])], opset=9)

    save("missing_dim", [helper.make_node("Relu", ["x"], ["y"], name="relu")],
         [value("x", ["batch", 4])], [value("y", ["batch", 4])])

    save("shape_not_inferable",
         [helper.make_node("Reshape", ["x", "target"], ["y"], name="/reshape/Reshape")],
         [value("x", [2, 4]), value("target", [2], TensorProto.INT64)], [value("y", [4, 2])])

    save("uneven_slice",
         [helper.make_node("Slice", ["x", "starts", "ends", "axes"], ["y"], name="/slice/Slice")],
         [value("x", [2, 10])], [value("y", [2, 3])],
         initializers=[helper.make_tensor("starts", TensorProto.INT64, [1], [0]),
                       helper.make_tensor("ends", TensorProto.INT64, [1], [3]),
                       helper.make_tensor("axes", TensorProto.INT64, [1], [1])])

    w = helper.make_tensor("w", TensorProto.FLOAT, [4, 3, 3, 3], [0.5] * 108)
    save("dilated_conv",
         [helper.make_node("Conv", ["x", "w"], ["y"], name="/conv/Conv", dilations=[2, 2])],
         [value("x", [2, 3, 16, 16])], [value("y", [2, 4, 12, 12])], initializers=[w])

    save("no_layers", [helper.make_node("Shape", ["x"], ["y"], name="shape")],
         [value("x", [2, 4])], [value("y", [2], TensorProto.INT64)])

    save("custom_domain",
         [helper.make_node("FusedThing", ["x"], ["y"], name="fused", domain="com.example")],
         [value("x", [2, 4])], [value("y", [2, 4])], domain_opsets=[("com.example", 1)])


if __name__ == "__main__":
    main()
