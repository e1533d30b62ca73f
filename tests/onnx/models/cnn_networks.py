"""Whole networks as PyTorch exports them, for gen_models.py (needs python3-torch, python3-torchvision).

torchvision's ResNet-18, ResNet-50 and MobileNetV2 with torchvision's exact topology (the same layers,
blocks, residual connections, strides, kernel sizes, paddings and ops, hence the same ONNX graph and the
same kernel counts) but narrower: full-width weights are 45, 100 and 14 MB, too large to commit. ONLY
channel widths differ from torchvision's models (the classifier's output width, num_classes, included):

- resnet18_w8: ResNet(BasicBlock, [2, 2, 2, 2]) with every width divided by 8: stem 8, stages 8, 16,
  32, 64, fc 64 -> 125 (torchvision: 64; 64, 128, 256, 512; fc 512 -> 1000). A subclass replicates
  torchvision's ResNet.__init__ with the widths divided (its defaults: groups 1, width_per_group 64, no
  dilation; forward, _make_layer, BasicBlock and Bottleneck are torchvision's).
- resnet50_w16: ResNet(Bottleneck, [3, 4, 6, 3]) the same way, every width divided by 16: stem 4, stage
  widths 4, 8, 16, 32 (block outputs x4: 16, 32, 64, 128), fc 128 -> 62 (torchvision: 64; 64..512
  (256..2048); fc 2048 -> 1000). Divided by 16, not 8, to keep its files near 0.5 MB.
- mobilenet_v2_w8: torchvision's MobileNetV2(width_mult=1/8, round_nearest=1, num_classes=125): stem 4,
  stages 2, 3, 4, 8, 12, 20, 40 (torchvision: 32; 16, 24, 32, 64, 96, 160, 320), with expansion 6; the
  last 1x1 conv's width 1280, which torchvision keeps below width_mult 1, divided by 8 too (160, its
  Conv2dNormActivation and the classifier's Linear replaced by narrower ones, torchvision-initialised).
  round_nearest=1, not torchvision's default 8: rounding up to multiples of 8 would make the first block
  8 -> 8 and so give it a residual connection that the full-width network (32 -> 16) does not have.

network_cases() checks this: it exports the full-width torchvision model too and asserts that both ONNX
graphs have the same nodes (op types and attributes but a Conv's group count, and whether it is 1) wired
the same way. Each narrow model gets random weights (torchvision's own initialisation) and BatchNorm
statistics and affine parameters randomised to O(1) (cnn_blocks.randomise_bn), is put in eval mode and
exported at opset 13 with a 1x3x64x64 input into cnn_<name>/: model.onnx and one data set (input_0.pb,
PyTorch's float32 output_0.pb, float64 reference_0.pb from model.double()). The export keeps the
BatchNormalization nodes (training=TrainingMode.PRESERVE on the eval-mode model; by default
torch.onnx.export folds them into the convs itself), so tilec's own BatchNorm folding is what runs.

Kernel launches per run are structural (the same graph at any width), so the limits on the full-width
networks at 64x64 input (ResNet-18 <= 22, ResNet-50 <= 55, MobileNetV2 <= 53) apply to these: they are
rows of launch_limits.txt, which tests/onnx/CMakeLists.txt passes to `tilec-onnx run --max-launches`.
The full-width networks, exported the same way, are for checking that (never committed):

    /usr/bin/python3 tests/onnx/models/cnn_networks.py --full-width /tmp/full
    build/bin/tilec /tmp/full/resnet50/model.onnx --emit=plan | grep -c ^launch      # 55
"""
import io
import os

import numpy as np

OPSET = 13
SHAPE = [1, 3, 64, 64]


def resnet(block_name, layers, div, num_classes):
    """torchvision's ResNet(block, layers) with every channel width divided by div; only __init__ is
    replicated (torchvision 0.14's, with its defaults: groups 1, width_per_group 64, no dilation)."""
    import torch.nn as nn
    from torchvision.models import resnet as tv

    block = getattr(tv, block_name)

    class NarrowResNet(tv.ResNet):
        def __init__(self):
            nn.Module.__init__(self)
            self._norm_layer = nn.BatchNorm2d
            self.inplanes = 64 // div
            self.dilation = 1
            self.groups = 1
            self.base_width = 64
            self.conv1 = nn.Conv2d(3, self.inplanes, kernel_size=7, stride=2, padding=3, bias=False)
            self.bn1 = nn.BatchNorm2d(self.inplanes)
            self.relu = nn.ReLU(inplace=True)
            self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
            self.layer1 = self._make_layer(block, 64 // div, layers[0])
            self.layer2 = self._make_layer(block, 128 // div, layers[1], stride=2)
            self.layer3 = self._make_layer(block, 256 // div, layers[2], stride=2)
            self.layer4 = self._make_layer(block, 512 // div, layers[3], stride=2)
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(512 // div * block.expansion, num_classes)
            for m in self.modules():
                if isinstance(m, nn.Conv2d):
                    nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

    return NarrowResNet()


def mobilenet_v2(div):
    import torch.nn as nn
    from torchvision.models import mobilenetv2 as tv
    from torchvision.ops.misc import Conv2dNormActivation

    model = tv.MobileNetV2(num_classes=1000 // div, width_mult=1.0 / div, round_nearest=1)
    last_in = model.features[-1][0].in_channels
    model.last_channel = 1280 // div
    model.features[-1] = Conv2dNormActivation(last_in, model.last_channel, kernel_size=1,
                                              norm_layer=nn.BatchNorm2d, activation_layer=nn.ReLU6)
    model.classifier[1] = nn.Linear(model.last_channel, 1000 // div)
    # torchvision's initialisation of the replaced modules
    nn.init.kaiming_normal_(model.features[-1][0].weight, mode="fan_out")
    nn.init.normal_(model.classifier[1].weight, 0, 0.01)
    nn.init.zeros_(model.classifier[1].bias)
    return model


# (name, the narrow model, torchvision's full-width model)
NETWORKS = (("resnet18_w8", lambda: resnet("BasicBlock", [2, 2, 2, 2], 8, 1000 // 8), "resnet18"),
            ("resnet50_w16", lambda: resnet("Bottleneck", [3, 4, 6, 3], 16, 1000 // 16), "resnet50"),
            ("mobilenet_v2_w8", lambda: mobilenet_v2(8), "mobilenet_v2"))


def export(model, x):
    import onnx
    import torch
    f = io.BytesIO()
    torch.onnx.export(model, torch.from_numpy(x), f, opset_version=OPSET, input_names=["x"],
                      output_names=["y"], training=torch.onnx.TrainingMode.PRESERVE)
    return onnx.load_from_string(f.getvalue())


def topology(m):
    """The graph without its widths: per node, its op type, its attributes (a Conv's group only as
    group == 1) and where each input comes from (a node's index, the graph input, or a weight)."""
    from onnx import helper
    producer = {o: i for i, n in enumerate(m.graph.node) for o in n.output}
    graph_inputs = {i.name for i in m.graph.input}
    sig = []
    for n in m.graph.node:
        attrs = []
        for a in n.attribute:
            v = helper.get_attribute_value(a)
            if a.name == "group":
                v = v == 1
            elif hasattr(v, "SerializeToString"):
                v = v.SerializeToString()
            attrs.append((a.name, repr(v)))
        srcs = tuple(producer.get(i, "x" if i in graph_inputs else "weight") for i in n.input)
        sig.append((n.op_type, tuple(sorted(attrs)), srcs))
    return sig


def network_cases(out, save_case, seed):
    import torch
    import torchvision
    from cnn_blocks import randomise_bn
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    for name, make, full in NETWORKS:
        model = make()
        randomise_bn(model, rng)
        model.eval()
        x = rng.standard_normal(SHAPE).astype(np.float32)
        with torch.no_grad():
            y32 = model(torch.from_numpy(x)).numpy()
            y64 = model.double()(torch.from_numpy(x.astype(np.float64))).numpy()
        model.float()
        err = np.abs(y32.astype(np.float64) - y64).max()
        params = sum(p.numel() for p in model.parameters())
        print("%s: %d parameters, output %s, |y| max %.3g, std %.3g, float32 max err %.3g" %
              (name, params, list(y32.shape), np.abs(y64).max(), y64.std(), err))
        assert y64.std() > 1e-2 * np.abs(y64).max(), "%s: a constant output" % name
        m = export(model, x)
        wide = getattr(torchvision.models, full)()
        randomise_bn(wide, np.random.default_rng(0))  # else the exporter shares equal BatchNorm weights
        wide.eval()
        a, b = topology(m), topology(export(wide, x))
        assert a == b, "%s: not torchvision's %s: %d vs %d nodes, first difference at node %s" % (
            name, full, len(a), len(b), next((i for i, (p, q) in enumerate(zip(a, b)) if p != q), min(len(a), len(b))))
        print("%s: the same %d ONNX nodes, wired the same way, as torchvision's %s" % (name, len(a), full))
        m.producer_name = "pytorch %s via gen_models.py" % torch.__version__
        save_case(os.path.join(out, "cnn_%s" % name), m, [([x], [y32], [y64])])


def full_width(out):
    """Exports torchvision's full-width networks the same way (randomised BatchNorm, opset 13, 64x64, with
    one data set) into out/<name>/, for checks at full width (kernel counts, ptxas spills); never committed
    (45, 100 and 14 MB)."""
    import torch
    import torchvision
    from cnn_blocks import randomise_bn
    from gen_models import save_case
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    for _, _, full in NETWORKS:
        model = getattr(torchvision.models, full)()
        randomise_bn(model, rng)
        model.eval()
        x = rng.standard_normal(SHAPE).astype(np.float32)
        with torch.no_grad():
            y32 = model(torch.from_numpy(x)).numpy()
            y64 = model.double()(torch.from_numpy(x.astype(np.float64))).numpy()
        model.float()
        save_case(os.path.join(out, full), export(model, x), [([x], [y32], [y64])])
        print("%s: %s" % (full, os.path.join(out, full)))


if __name__ == "__main__":
    import sys
    if len(sys.argv) != 3 or sys.argv[1] != "--full-width":
        sys.exit("usage: cnn_networks.py --full-width DIR  (the full-width networks, for checks; gen_models.py "
                 "makes the committed models)")
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    full_width(sys.argv[2])
