#!/usr/bin/env python3
"""Writes one ONNX TensorProto (a test_data_set's input_K.pb or output_K.pb) to stdout, for the lit tests that
run a model written by onnx_model.py (empty.test):

usage: onnx_tensor.py NAME TYPE D0,D1,... VALUES

TYPE is float or int64; VALUES is a comma-separated list in row-major order (inf, -inf and nan allowed for
float), or '-' for none (a tensor with a dim of 0), or 'iota' (0, 1, 2, ...: as many as the dims hold)."""
import math
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from onnx_model import field  # noqa: E402 (one protobuf encoder for the writers here)

DT = {"float": (1, "<f"), "int64": (7, "<q")}


def main(argv):
    if len(argv) != 5:
        raise SystemExit(__doc__)
    name, dtype, dims, values = argv[1:]
    code, fmt = DT[dtype]
    shape = [int(d) for d in dims.split(",")]
    n = math.prod(shape)
    if values == "-":
        vals = []
    elif values == "iota":
        vals = list(range(n))
    else:
        vals = [float(v) if dtype == "float" else int(v) for v in values.split(",")]
    if len(vals) != n:
        raise SystemExit("%s: %d values for dims %s (%d elements)" % (name, len(vals), dims, n))
    raw = b"".join(struct.pack(fmt, v) for v in vals)
    t = b"".join(field(1, d) for d in shape) + field(2, code) + field(8, name) + field(9, raw)
    sys.stdout.buffer.write(t)


if __name__ == "__main__":
    main(sys.argv)
