"""Blocks of the CNN families people deploy, for gen_models.py (needs python3-torch, python3-torchvision).

Each block keeps its family's real channel counts at a small spatial size (32x32 input) so it runs in
the emulator in seconds; BatchNorm statistics (and affine parameters) are randomised so no BN is the
identity. Every block is exported at opsets 13 and 17 into cnn_<block>_op<N>/ with one data set:
input_0.pb, PyTorch's float32 output (output_0.pb) and the same model in float64 (reference_0.pb,
model.double()), the runner's reference policy (docs/onnx.md).

- silu_gelu: x * sigmoid(x) and nn.GELU() written out (Div/Erf/Add/Mul/Mul) after 1x1 convs: the
  importer recognises both as one op each.
- mobilenet_v3_small: torchvision's mobilenet_v3_small().features[:5] (stem 16 hardswish; inverted
  residuals 16 (SE, stride 2), 24 (stride 2), 24, 40 (5x5 depthwise, SE, hardswish)).
- efficientnet_b0: torchvision's efficientnet_b0().features[:4] (stem 32 SiLU; MBConv 16, 24 (stride-2
  depthwise), 40 (5x5, stride 2); squeeze-and-excitation with SiLU and sigmoid).
- densenet121: a dense block of DenseNet-121's shape (64 input channels, growth 32, bottleneck 128; 3
  layers of BN -> ReLU -> 1x1 conv -> BN -> ReLU -> 3x3 conv, each concatenating all earlier features)
  and a transition (BN -> ReLU -> 1x1 conv 160 -> 80 -> 2x2 average pooling), 16x16 input.
- convnext_tiny: torchvision's CNBlock(96) (ConvNeXt-Tiny's first stage): 7x7 depthwise conv, LayerNorm
  over channels in NHWC (Permute), Linear 96 -> 384 -> GELU -> Linear 384 -> 96, layer scale (randomised
  to O(1): its default 1e-6 would hide the branch), Permute back, residual; 8x8 input. The output minus
  the input (the branch) is checked to be O(1) by gen_models.py.
- inception_a: torchvision's InceptionA(64, pool_features=32): four parallel branches (1x1; 1x1 -> 5x5;
  1x1 -> 3x3 -> 3x3; 3x3 average pooling with padding -> 1x1) concatenated, 8x8 input.
- unet_decoder: a U-Net stage with an FPN top-down path, 16x16 input: encoder conv-BN-ReLU 16 -> 32 (the
  skip) and a stride-2 conv-BN-ReLU 32 -> 64; decoder ConvTranspose2d(64, 32, 3, stride 2, padding 1,
  output_padding 1), concat with the skip, two conv-BN-ReLU 64 -> 32 -> 32; a 1x1 lateral of the bottleneck
  upsampled by nearest (scale 2) added to it, then a 1x1 head 32 -> 8 and a bilinear upsampling
  (align_corners=False) to 32x32.
"""
import io
import os

import numpy as np

OPSETS = (13, 17)


def randomise_bn(model, rng):
    import torch
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            c = m.num_features
            with torch.no_grad():
                m.running_mean.copy_(torch.from_numpy(rng.uniform(-0.5, 0.5, c).astype(np.float32)))
                m.running_var.copy_(torch.from_numpy(rng.uniform(0.5, 2.0, c).astype(np.float32)))
                m.weight.copy_(torch.from_numpy(rng.uniform(0.5, 1.5, c).astype(np.float32)))
                m.bias.copy_(torch.from_numpy(rng.uniform(-0.5, 0.5, c).astype(np.float32)))


class SiluGelu:
    @staticmethod
    def make():
        import torch

        class M(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.c1 = torch.nn.Conv2d(16, 24, 1)
                self.c2 = torch.nn.Conv2d(24, 16, 1)
                self.gelu = torch.nn.GELU()

            def forward(self, x):
                h = self.c1(x)
                h = h * torch.sigmoid(h)
                return self.gelu(self.c2(h))
        return M(), [1, 16, 8, 8]


def mobilenet_v3_small():
    import torchvision
    return torchvision.models.mobilenet_v3_small().features[:5], [1, 3, 32, 32]


def efficientnet_b0():
    import torchvision
    return torchvision.models.efficientnet_b0().features[:4], [1, 3, 32, 32]


def densenet():
    import torch
    from torchvision.models import densenet as dn
    return torch.nn.Sequential(dn._DenseBlock(num_layers=3, num_input_features=64, bn_size=4, growth_rate=32,
                                              drop_rate=0), dn._Transition(160, 80)), [1, 64, 16, 16]


def convnext(rng):
    import torch
    from torchvision.models import convnext as cn
    block = cn.CNBlock(96, layer_scale=1e-6, stochastic_depth_prob=0.0)
    with torch.no_grad():  # the default 1e-6 would hide the whole branch behind the residual
        block.layer_scale.copy_(torch.from_numpy(rng.uniform(0.5, 1.5, block.layer_scale.shape).astype(np.float32)))
    return block, [1, 96, 8, 8]


def inception():
    from torchvision.models import inception as inc
    return inc.InceptionA(64, pool_features=32), [1, 64, 8, 8]


def unet_decoder():
    import torch
    nn = torch.nn
    F = torch.nn.functional

    def cbr(cin, cout, stride=1):
        return nn.Sequential(nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False), nn.BatchNorm2d(cout),
                             nn.ReLU())

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = cbr(16, 32)
            self.down = cbr(32, 64, stride=2)
            self.up = nn.ConvTranspose2d(64, 32, 3, stride=2, padding=1, output_padding=1)
            self.dec = nn.Sequential(cbr(64, 32), cbr(32, 32))
            self.lateral = nn.Conv2d(64, 32, 1)
            self.head = nn.Conv2d(32, 8, 1)

        def forward(self, x):
            s = self.enc(x)
            b = self.down(s)
            d = self.dec(torch.cat([self.up(b), s], 1))
            f = d + F.interpolate(self.lateral(b), scale_factor=2, mode="nearest")
            return F.interpolate(self.head(f), scale_factor=2, mode="bilinear", align_corners=False)
    return M(), [1, 16, 16, 16]


BLOCKS = (("silu_gelu", SiluGelu.make), ("mobilenet_v3_small", mobilenet_v3_small),
          ("efficientnet_b0", efficientnet_b0), ("densenet121", densenet), ("inception_a", inception),
          ("convnext_tiny", convnext), ("unet_decoder", unet_decoder))


def cnn_cases(out, save_case, seed):
    import onnx
    import torch
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    for name, make in BLOCKS:
        model, shape = make(rng) if make is convnext else make()
        randomise_bn(model, rng)
        model.eval()
        x = rng.standard_normal(shape).astype(np.float32)
        with torch.no_grad():
            y32 = model(torch.from_numpy(x)).numpy()
            y64 = model.double()(torch.from_numpy(x.astype(np.float64))).numpy()
        model.float()
        err = np.abs(y32.astype(np.float64) - y64).max()
        print("%s: output %s, |y| max %.3g, std %.3g, float32 max err %.3g" %
              (name, list(y32.shape), np.abs(y64).max(), y64.std(), err))
        assert y64.std() > 1e-2, "%s: a constant output" % name
        if name == "convnext_tiny":
            branch = (y64 - x.astype(np.float64)).std()
            print("convnext_tiny: residual branch std %.3g" % branch)
            assert branch > 0.1, "the residual branch is negligible"
        for opset in OPSETS:
            f = io.BytesIO()
            torch.onnx.export(model, torch.from_numpy(x), f, opset_version=opset, input_names=["x"],
                              output_names=["y"])
            m = onnx.load_from_string(f.getvalue())
            m.producer_name = "pytorch %s via gen_models.py" % torch.__version__
            save_case(os.path.join(out, "cnn_%s_op%d" % (name, opset)), m, [([x], [y32], [y64])])
