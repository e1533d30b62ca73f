#!/usr/bin/env python3
"""Writes an ONNX test case directory for one reduction over axes with gaps (reduce_gaps.test): model.onnx (by
onnx_model.py, opset 13, axes as an attribute but for ReduceSum's input), test_data_set_0/input_0.pb (random
float32 in [0.5, 1.5): positive, so every kind is well-conditioned) and output_0.pb, the float64 reference
computed here rounded to float32. The seed is TILEC_SEED's, else random; it is printed (TILEC_SEED=N replays).

usage: reduce_case.py DIR OP D0,D1,... AXIS,AXIS,... KEEPDIMS"""
import math
import os
import random
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from onnx_model import field  # noqa: E402 (one protobuf encoder for the writers here)

here = os.path.dirname(os.path.abspath(__file__))


def tensor(name, dims, vals):
    """A float32 TensorProto: dims (1), data_type 1 (2), name (8), raw_data (9)."""
    t = b"".join(field(1, d) for d in dims) + field(2, 1) + field(8, name)
    return t + field(9, b"".join(struct.pack("<f", v) for v in vals))


KINDS = {
    "ReduceSum": (0.0, lambda a, v: a + v, lambda a, n: a),
    "ReduceMean": (0.0, lambda a, v: a + v, lambda a, n: a / n),
    "ReduceMax": (-math.inf, max, lambda a, n: a),
    "ReduceMin": (math.inf, min, lambda a, n: a),
    "ReduceProd": (1.0, lambda a, v: a * v, lambda a, n: a),
    "ReduceL1": (0.0, lambda a, v: a + abs(v), lambda a, n: a),
    "ReduceL2": (0.0, lambda a, v: a + v * v, lambda a, n: math.sqrt(a)),
    "ReduceSumSquare": (0.0, lambda a, v: a + v * v, lambda a, n: a),
    "ReduceLogSum": (0.0, lambda a, v: a + v, lambda a, n: math.log(a)),
    "ReduceLogSumExp": (0.0, lambda a, v: a + math.exp(v), lambda a, n: math.log(a)),
}


def main(argv):
    out, op, dims, axes, keep = argv[1], argv[2], [int(d) for d in argv[3].split(",")], argv[4], int(argv[5])
    seed = int(os.environ.get("TILEC_SEED", random.randrange(1 << 32)))
    print("seed %d (TILEC_SEED=%d replays it)" % (seed, seed))
    rng = random.Random(seed)
    r = len(dims)
    ax = sorted({int(a) % r for a in axes.split(",")})
    odims = [1 if i in ax else d for i, d in enumerate(dims)] if keep else [d for i, d in enumerate(dims) if i not in ax]
    n = math.prod(dims)
    x = [struct.unpack("<f", struct.pack("<f", 0.5 + rng.random()))[0] for _ in range(n)]
    init, comb, fin = KINDS[op]
    acc, count = {}, math.prod(dims[i] for i in ax)
    for flat in range(n):
        idx, rem = [], flat
        for d in reversed(dims):
            idx.append(rem % d)
            rem //= d
        idx.reverse()
        key = tuple(0 if i in ax else idx[i] for i in range(r))
        acc[key] = comb(acc.get(key, init), x[flat])
    ref = [fin(acc[k], count) for k in sorted(acc)]
    os.makedirs(os.path.join(out, "test_data_set_0"), exist_ok=True)
    if op == "ReduceSum":  # axes is an input from opset 13
        args = ["const axes_c %d %s" % (len(ax), ",".join(str(a) for a in ax)), "node Cast axes_c axes i:to=7",
                "node %s x,axes y i:keepdims=%d" % (op, keep)]
    else:
        args = ["node %s x y is:axes=%s i:keepdims=%d" % (op, axes, keep)]
    sh = lambda ds: ",".join(str(d) for d in ds) if ds else "1"
    model = subprocess.run([sys.executable, os.path.join(here, "onnx_model.py"), "13", "in x float " + sh(dims)] + args +
                           ["out y float " + sh(odims)], check=True, capture_output=True).stdout
    with open(os.path.join(out, "model.onnx"), "wb") as f:
        f.write(model)
    with open(os.path.join(out, "test_data_set_0", "input_0.pb"), "wb") as f:
        f.write(tensor("x", dims, x))
    with open(os.path.join(out, "test_data_set_0", "output_0.pb"), "wb") as f:
        f.write(tensor("y", odims, ref))


main(sys.argv)
