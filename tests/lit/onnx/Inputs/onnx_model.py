#!/usr/bin/env python3
"""Writes a small ONNX model to stdout with a protobuf encoder of its own (no onnx package needed), for the
lit tests that need a model no committed file has (bool_ops.test, layer_norm.test):

usage: onnx_model.py OPSET 'in NAME TYPE D0,D1,...' ... 'const NAME D0,... V0,V1,...' ...
                     'node OP IN,IN,... OUT[,OUT...] [i:NAME=INT] [f:NAME=FLOAT] [is:NAME=INT,INT,...]' ...
                     'out NAME TYPE D0,...' ...

TYPE is float, float16, bool, int32, int64...; a dim is a number or a name (symbolic); a const is a float
tensor (an initializer); an input name "" (two commas) is an omitted optional input. The nodes are written in
the order given (the importer's locations are model.onnx:N:1 for node N)."""
import struct
import sys

DT = {"float": 1, "uint8": 2, "int8": 3, "int32": 6, "int64": 7, "bool": 9, "float16": 10, "double": 11}


def varint(v):
    v &= (1 << 64) - 1  # negative int64: two's complement, as protobuf writes it
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


def fixed32(num, f):
    return varint(num << 3 | 5) + struct.pack("<f", f)


def value_info(name, dtype, dims):
    shape = b"".join(field(1, field(1, int(d)) if d.isdigit() else field(2, d)) for d in dims.split(","))
    tensor = field(1, DT[dtype]) + field(2, shape)
    return field(1, name) + field(2, field(1, tensor))


def attribute(spec):
    kind, rest = spec.split(":", 1)
    name, val = rest.split("=", 1)
    if kind == "i":
        return field(1, name) + field(3, int(val)) + field(20, 2)
    if kind == "f":
        return field(1, name) + fixed32(2, float(val)) + field(20, 1)
    if kind == "is":
        return field(1, name) + b"".join(field(8, int(v)) for v in val.split(",")) + field(20, 7)
    raise SystemExit("unknown attribute kind: " + spec)


def main(argv):
    opset, items = int(argv[1]), argv[2:]
    graph = b""
    for it in items:
        kind, rest = it.split(" ", 1)
        if kind == "node":
            parts = rest.split(" ")
            op, ins, outs = parts[0], parts[1], parts[2]
            node = b"".join(field(1, i) for i in ins.split(",")) + b"".join(field(2, o) for o in outs.split(","))
            node += field(4, op) + b"".join(field(5, attribute(a)) for a in parts[3:])
            graph += field(1, node)
    graph += field(2, "g")
    for it in items:
        kind, rest = it.split(" ", 1)
        if kind == "const":
            name, dims, vals = rest.split(" ")
            t = b"".join(field(1, int(d)) for d in dims.split(",")) + field(2, 1)
            t += field(4, b"".join(struct.pack("<f", float(v)) for v in vals.split(","))) + field(8, name)
            graph += field(5, t)
    for it in items:
        kind, rest = it.split(" ", 1)
        if kind in ("in", "out"):
            name, dtype, dims = rest.split(" ")
            graph += field(11 if kind == "in" else 12, value_info(name, dtype, dims))
    model = field(1, 8) + field(8, field(2, opset)) + field(7, graph)
    sys.stdout.buffer.write(model)


if __name__ == "__main__":  # the other writers here import varint and field
    main(sys.argv)
