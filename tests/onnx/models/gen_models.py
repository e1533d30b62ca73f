#!/usr/bin/python3
"""Generates the small ONNX cases of tests/onnx/models (committed; CI needs neither this script's
dependencies nor PyTorch). Needs python3-onnx, python3-numpy and python3-torch (Debian's):

    /usr/bin/python3 tests/onnx/models/gen_models.py tests/onnx/models

Each case is a directory as in ONNX's backend test data: model.onnx and test_data_set_N/
{input,output}_K.pb, plus reference_K.pb (float64) where a case has a float64 reference.

- clamp_{int,float}_{fold,nofold}: torch.clamp(x, 0, 6) and torch.clamp(x, 0., 6.) exported by
  torch.onnx.export at opset 13 (needs python3-torch): with constant folding off the bounds are
  Constant nodes (int64 for integer bounds, float64 for Python floats) cast to float32 by Cast nodes;
  with folding on they are float32 Constant nodes.
- clamp_float64_inexact: Clip with float64 bounds 0.1 and 6 cast to float32 (0.1 rounds: a remark).
- fold_shapes: a Reshape whose shape is Shape -> Gather -> Concat with a ConstantOfShape, and a
  ReduceSum whose axes come from Range: all folded by the importer.
- fair_verdict: Conv+BatchNormalization+Relu twice, then a Conv with bias, random weights and
  randomised BatchNorm statistics; output_0.pb is a float32 evaluation (im2col + float32 matmul, as
  a framework computes it), reference_0.pb the same network in float64. tilec's float32 noise must
  pass the reference policy (docs/onnx.md).
- fair_verdict_planted: the same network and the same data sets, but the last Conv's bias in
  model.onnx is off by 4x the limit's basis (max(expected float32 error, floor) of compare.h), with a
  random sign per channel: a planted error of 4x float32 noise that the policy must FAIL.
- inputs/: input files that do not match fair_verdict's input (float64 data, a wrong shape).
- cnn_*_op13, cnn_*_op17: blocks of CNN families (MobileNetV3, EfficientNet, U-Net...) exported by PyTorch,
  with float32 outputs and float64 references (cnn_blocks.py; needs python3-torchvision).
- cnn_resnet18_w8, cnn_resnet50_w16, cnn_mobilenet_v2_w8: torchvision's ResNet-18, ResNet-50 and
  MobileNetV2 with their exact topology but narrower channels (widths only: cnn_networks.py says which),
  64x64 input, BatchNorm nodes kept, float32 outputs and float64 references; their fused kernel launches
  are bounded by launch_limits.txt (ResNet-18 <= 22, ResNet-50 <= 55, MobileNetV2 <= 53).
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SEED = 22
OPSET = 13
FLOOR_ULPS = 4.0  # CMP_FLOOR_ULPS (tools/tilec-onnx/compare.h)


def save_case(path, model, sets):
    """sets: list of (inputs, outputs, references or None)."""
    os.makedirs(path, exist_ok=True)
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(path, "model.onnx"))
    for s, (ins, outs, refs) in enumerate(sets):
        d = os.path.join(path, "test_data_set_%d" % s)
        os.makedirs(d, exist_ok=True)
        for kind, arrs in (("input", ins), ("output", outs), ("reference", refs or [])):
            for k, a in enumerate(arrs):
                t = numpy_helper.from_array(a, "")
                with open(os.path.join(d, "%s_%d.pb" % (kind, k)), "wb") as f:
                    f.write(t.SerializeToString())


def make_model(nodes, inputs, outputs, inits=()):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="gen_models.py")
    m.ir_version = 7
    return m


def f32_info(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def clamp_cases(out, rng):
    """torch.clamp(x, 0, 6) and torch.clamp(x, 0., 6.) exported by torch.onnx.export (opset 13), with
    constant folding off (Constant int64/float64 -> Cast -> Clip) and on (float32 Constants -> Clip)."""
    import io
    import torch

    class Clamp(torch.nn.Module):
        def __init__(self, lo, hi):
            super().__init__()
            self.lo, self.hi = lo, hi

        def forward(self, x):
            return torch.clamp(x, self.lo, self.hi)

    shape = [2, 3, 4, 4]
    xs = [rng.uniform(-3, 9, size=shape).astype(np.float32) for _ in range(2)]
    for kind, lo, hi in (("int", 0, 6), ("float", 0.0, 6.0)):
        for fold in (False, True):
            f = io.BytesIO()
            torch.onnx.export(Clamp(lo, hi), torch.from_numpy(xs[0]), f, opset_version=OPSET,
                              do_constant_folding=fold, input_names=["x"], output_names=["y"])
            model = onnx.load_from_string(f.getvalue())
            model.producer_name = "pytorch %s via gen_models.py" % torch.__version__
            sets = [([x], [Clamp(lo, hi)(torch.from_numpy(x)).numpy()], None) for x in xs]
            save_case(os.path.join(out, "clamp_%s_%s" % (kind, "fold" if fold else "nofold")), model, sets)


def cast_inexact_case(out, rng):
    """Clip with float64 bounds 0.1 and 6 cast to float32: 0.1 is not a float32 (a remark), 6 is."""
    shape = [2, 3, 4, 4]
    f64 = lambda v: numpy_helper.from_array(np.array(v, np.float64))
    nodes = [
        helper.make_node("Constant", [], ["lo_c"], value=f64(0.1)),
        helper.make_node("Cast", ["lo_c"], ["lo"], to=TensorProto.FLOAT),
        helper.make_node("Constant", [], ["hi_c"], value=f64(6.0)),
        helper.make_node("Cast", ["hi_c"], ["hi"], to=TensorProto.FLOAT),
        helper.make_node("Clip", ["x", "lo", "hi"], ["y"]),
    ]
    x = rng.uniform(-3, 9, size=shape).astype(np.float32)
    y = np.clip(x, np.float32(0.1), np.float32(6)).astype(np.float32)
    save_case(os.path.join(out, "clamp_float64_inexact"),
              make_model(nodes, [f32_info("x", shape)], [f32_info("y", shape)]), [([x], [y], None)])


def fold_shapes_case(out, rng):
    shape = [2, 3, 4, 4]
    i64 = lambda v: numpy_helper.from_array(np.array(v, np.int64))
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Constant", [], ["first2"], value=i64([0, 1])),
        helper.make_node("Gather", ["s", "first2"], ["nc"], axis=0),
        helper.make_node("Constant", [], ["one"], value=i64([1])),
        helper.make_node("ConstantOfShape", ["one"], ["minus1"], value=i64([-1])),
        helper.make_node("Concat", ["nc", "minus1"], ["shape"], axis=0),
        helper.make_node("Reshape", ["x", "shape"], ["flat"]),
        helper.make_node("Constant", [], ["r0"], value=i64(2)),
        helper.make_node("Constant", [], ["r1"], value=i64(3)),
        helper.make_node("Constant", [], ["r2"], value=i64(1)),
        helper.make_node("Range", ["r0", "r1", "r2"], ["axes"]),
        helper.make_node("ReduceSum", ["flat", "axes"], ["y"], keepdims=0),
    ]
    x = rng.uniform(-1, 1, size=shape).astype(np.float32)
    y = x.reshape(2, 3, 16).astype(np.float64).sum(axis=2)
    save_case(os.path.join(out, "fold_shapes"),
              make_model(nodes, [f32_info("x", shape)], [f32_info("y", [2, 3])]),
              [([x], [y.astype(np.float32)], [y])])


def conv(x, w, b, dtype):
    """NCHW conv, 3x3, pad 1, stride 1, as im2col + matmul in dtype."""
    n, c, h, wd = x.shape
    k = w.shape[0]
    xp = np.pad(x.astype(dtype), ((0, 0), (0, 0), (1, 1), (1, 1)))
    cols = np.empty((n, c * 9, h * wd), dtype)
    for ci in range(c):
        for dy in range(3):
            for dx in range(3):
                cols[:, ci * 9 + dy * 3 + dx, :] = xp[:, ci, dy:dy + h, dx:dx + wd].reshape(n, h * wd)
    y = np.matmul(w.astype(dtype).reshape(k, c * 9), cols)
    if b is not None:
        y = y + b.astype(dtype)[:, None]
    return y.reshape(n, k, h, wd)


def bn(x, g, be, m, v, eps, dtype):
    s = (g.astype(dtype) / np.sqrt(v.astype(dtype) + dtype(eps)))[None, :, None, None]
    return (x - m.astype(dtype)[None, :, None, None]) * s + be.astype(dtype)[None, :, None, None]


def fair_cases(out, rng):
    chans = [3, 8, 8, 4]
    shape = [1, 3, 8, 8]
    eps = 1e-5
    params, nodes, inits = [], [], []
    cur = "x"
    for layer in range(3):
        ci, co = chans[layer], chans[layer + 1]
        w = (rng.standard_normal((co, ci, 3, 3)) / np.sqrt(ci * 9)).astype(np.float32)
        last = layer == 2
        b = rng.uniform(-0.5, 0.5, co).astype(np.float32) if last else None
        inits.append(numpy_helper.from_array(w, "w%d" % layer))
        conv_in = [cur, "w%d" % layer] + (["b%d" % layer] if last else [])
        nodes.append(helper.make_node("Conv", conv_in, ["c%d" % layer], kernel_shape=[3, 3], pads=[1, 1, 1, 1]))
        p = {"w": w, "b": b}
        if not last:
            g = rng.uniform(0.5, 1.5, co).astype(np.float32)
            be = rng.uniform(-0.5, 0.5, co).astype(np.float32)
            m = rng.uniform(-0.5, 0.5, co).astype(np.float32)
            v = rng.uniform(0.2, 2.0, co).astype(np.float32)
            for nm, a in (("g", g), ("be", be), ("m", m), ("v", v)):
                inits.append(numpy_helper.from_array(a, "%s%d" % (nm, layer)))
            nodes.append(helper.make_node("BatchNormalization", ["c%d" % layer] + ["%s%d" % (nm, layer) for nm in
                                                                                   ("g", "be", "m", "v")],
                                          ["n%d" % layer], epsilon=eps))
            nodes.append(helper.make_node("Relu", ["n%d" % layer], ["r%d" % layer]))
            cur = "r%d" % layer
            p.update(g=g, be=be, m=m, v=v)
        params.append(p)

    def run(x, dtype):
        h = x
        for layer, p in enumerate(params):
            h = conv(h, p["w"], p["b"], dtype)
            if p["b"] is None:
                h = np.maximum(bn(h, p["g"], p["be"], p["m"], p["v"], eps, dtype), dtype(0))
        return h

    sets, basis = [], 0.0
    for s in range(2):
        x = rng.standard_normal(shape).astype(np.float32)
        y32, y64 = run(x, np.float32), run(x, np.float64)
        err = np.abs(y32.astype(np.float64) - y64).max()
        mag = np.abs(y64).max()
        ulp = 2.0 ** (np.floor(np.log2(mag)) - 23)
        basis = max(basis, err, FLOOR_ULPS * ulp)
        print("fair_verdict data set %d: float32 max err %.3g (%.2f ulps of max |y| %.3g)" % (s, err, err / ulp, mag))
        sets.append(([x], [y32.astype(np.float32)], [y64]))
    out_info = [f32_info("y", [1, chans[-1], 8, 8])]
    nodes[-1].output[0] = "y"
    b_good = params[-1]["b"]
    for name, b in (("fair_verdict", b_good),
                    ("fair_verdict_planted", b_good + (4 * basis * rng.choice([-1.0, 1.0], b_good.shape)))):
        b32 = np.asarray(b, np.float32)
        model = make_model(nodes, [f32_info("x", shape)], out_info, inits + [numpy_helper.from_array(b32, "b2")])
        save_case(os.path.join(out, name), model, sets)
    print("fair_verdict_planted: bias off by 4 x %.3g" % basis)
    d = os.path.join(out, "inputs")
    os.makedirs(d, exist_ok=True)
    for fname, a in (("x_float64.pb", sets[0][0][0].astype(np.float64)),
                     ("x_shape_1x3x4x4.pb", sets[0][0][0][:, :, :4, :4].copy())):
        with open(os.path.join(d, fname), "wb") as f:
            f.write(numpy_helper.from_array(a, "").SerializeToString())


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    print("seed %d" % SEED)
    rng = np.random.default_rng(SEED)
    clamp_cases(out, rng)
    fold_shapes_case(out, rng)
    cast_inexact_case(out, rng)
    fair_cases(out, rng)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from cnn_blocks import cnn_cases
    cnn_cases(out, save_case, SEED + 1)
    from cnn_networks import network_cases
    network_cases(out, save_case, SEED + 2)


if __name__ == "__main__":
    main()
