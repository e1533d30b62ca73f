#!/usr/bin/env python3
"""Writes a small ONNX model to stdout with a protobuf encoder of its own (no onnx package needed):

usage: bool_model.py OPSET 'in NAME TYPE D0,D1,...' ... 'node OP IN,IN,... OUT' ... 'out NAME TYPE D0,...' ...

TYPE is float, float16, bool, int64...; a dim is a number or a name (symbolic). The nodes are written in the
order given (the importer's locations are model.onnx:N:1 for node N)."""
import sys

DT = {"float": 1, "uint8": 2, "int8": 3, "int32": 6, "int64": 7, "bool": 9, "float16": 10, "double": 11}


def varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def field(num, payload):
    if isinstance(payload, int):
        return varint(num << 3) + varint(payload)
    if isinstance(payload, str):
        payload = payload.encode()
    return varint(num << 3 | 2) + varint(len(payload)) + payload


def value_info(name, dtype, dims):
    shape = b"".join(field(1, field(1, int(d)) if d.isdigit() else field(2, d)) for d in dims.split(","))
    tensor = field(1, DT[dtype]) + field(2, shape)
    return field(1, name) + field(2, field(1, tensor))


def main(argv):
    opset, items = int(argv[1]), argv[2:]
    graph = b""
    for it in items:
        kind, rest = it.split(" ", 1)
        if kind == "node":
            op, ins, out = rest.split(" ")
            graph += field(1, b"".join(field(1, i) for i in ins.split(",")) + field(2, out) + field(4, op))
    graph += field(2, "g")
    for it in items:
        kind, rest = it.split(" ", 1)
        if kind in ("in", "out"):
            name, dtype, dims = rest.split(" ")
            graph += field(11 if kind == "in" else 12, value_info(name, dtype, dims))
    model = field(1, 8) + field(8, field(2, opset)) + field(7, graph)
    sys.stdout.buffer.write(model)


main(sys.argv)
