#!/usr/bin/env python3
"""Unit tests of the static yardstick's readers and model (CTest bench.unit): hand-made SASS,
a hand-made targets table, tilec metadata. No CUDA tools and no Triton needed."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from yardstick import model, sass, targets  # noqa: E402
import static  # noqa: E402

# A kernel with a prologue, an outer loop (0x0040..0x0110, e.g. a conv's filter taps) around an
# inner k-step loop (0x0060..0x00d0), an epilogue, and the trap self-branch after EXIT.
SASS = """
	code for sm_90
		Function : k
	.headerflags	@"EF_CUDA_SM90 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)"
        /*0000*/                   LDC R1, c[0x0][0x28] ;                  /* 0x00000a00ff017b82 */
                                                                           /* 0x000fe40000000800 */
        /*0010*/                   S2R R0, SR_TID.X ;                      /* 0x0000000000007919 */
        /*0020*/                   IMAD.MOV.U32 R2, RZ, RZ, RZ ;           /* 0x0000000000007919 */
        /*0030*/                   MOV R3, 0x4 ;                           /* 0x0000000000007919 */
        /*0040*/                   IADD3 R4, R4, 0x1, RZ ;                 /* 0x0000000000007919 */
        /*0050*/                   LEA R5, R4, R6, 0x2 ;                   /* 0x0000000000007919 */
        /*0060*/                   LDGSTS.E.BYPASS.LTC128B.128 [R7], desc[UR4][R8.64] ;  /* 0x0 */
        /*0070*/                   LDSM.16.M88.4 R12, [R9] ;               /* 0x0000000000007919 */
        /*0080*/                   LDS.64 R16, [R9+0x100] ;                /* 0x0000000000007919 */
        /*0090*/                   HMMA.16816.F32.BF16 R20, R12, R16, R20 ; /* 0x000000000000791 */
        /*00a0*/                   HMMA.16816.F32.BF16 R24, R12, R18, R24 ; /* 0x000000000000791 */
        /*00b0*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;           /* 0x0000000000007919 */
        /*00c0*/                   ISETP.GE.AND P0, PT, R2, R3, PT ;       /* 0x0000000000007919 */
        /*00d0*/              @!P0 BRA 0x60 ;                              /* 0x0000000000007919 */
        /*00e0*/                   IADD3 R2, R2, 0x1, RZ ;                 /* 0x0000000000007919 */
        /*00f0*/                   STS.128 [R10], R20 ;                    /* 0x0000000000007919 */
        /*0100*/                   ISETP.NE.AND P1, PT, R2, 0x9, PT ;      /* 0x0000000000007919 */
        /*0110*/               @P1 BRA 0x40 ;                              /* 0x0000000000007919 */
        /*0120*/                   STG.E.128 desc[UR4][R14.64], R20 ;      /* 0x0000000000007919 */
        /*0130*/                   EXIT ;                                  /* 0x0000000000007919 */
        /*0140*/                   BRA 0x140;                              /* 0x0000000000007919 */
        /*0150*/                   NOP;                                    /* 0x0000000000007919 */
"""

# The same loop in nvdisasm's label form, with a wgmma body split in k16 slices: the HGMMA loop
# (.L_x_1) runs half a k-step per iteration inside the k-step loop (.L_x_0).
SASS_LABELS = """
		Function : w
        /*0000*/                   MOV R1, c[0x0][0x28] ;
.L_x_0:
        /*0010*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;
        /*0020*/                   IADD3 R2, R2, 0x1, RZ ;
.L_x_1:
        /*0030*/                   WARPGROUP.ARRIVE ;
        /*0040*/                   HGMMA.64x128x16.F32.BF16 R88, R152, gdesc[UR16], R88 ;
        /*0050*/                   WARPGROUP.DEPBAR.LE gsb0, 0x0 ;
        /*0060*/               @P4 BRA `(.L_x_1) ;
        /*0070*/              @!P5 BRA `(.L_x_0) ;
        /*0080*/                   EXIT ;
"""


class SassTest(unittest.TestCase):
    def test_parse_and_classify(self):
        f = sass.parse(SASS)
        self.assertEqual(list(f), ["k"])
        ins = f["k"]
        self.assertEqual(len(ins), 22)
        self.assertEqual(ins[0].op, "LDC")
        self.assertEqual(ins[13].pred, "@!P0")
        self.assertEqual(ins[13].target, 0x60)
        self.assertEqual([sass.classify(i) for i in ins[6:12]],
                         ["ldgsts", "ldsm", "lds", "mma", "mma", "bar"])
        self.assertEqual(sass.macs(ins[9]), 16 * 8 * 16)
        for op, cls in (("LOP3.LUT", "addr"), ("SHF.R.U32.HI", "addr"), ("STL.64", "local"),
                        ("LDL", "local"), ("F2FP.BF16.F32.PACK_AB", "fp"), ("ULDC.64", "addr"),
                        ("WARPGROUP.DEPBAR.LE", "sync"), ("FFMA.FTZ", "ffma"), ("XYZ", "other")):
            self.assertEqual(sass.classify(sass.Instr(0, "", op, "")), cls, op)
        self.assertEqual(sass.smem_wavefronts(ins[7]), 4)   # LDSM .x4: 512 bytes
        self.assertEqual(sass.smem_wavefronts(ins[8]), 2)   # LDS.64: 256 bytes
        self.assertEqual(sass.smem_wavefronts(ins[6]), 4)   # LDGSTS .128 writes 512 bytes
        self.assertEqual(sass.smem_wavefronts(sass.Instr(0, "", "STL.64", "")), 2)  # L1 path

    def test_loops(self):
        loops = sass.find_loops(sass.parse(SASS)["k"])
        self.assertEqual([(lp.start, lp.end) for lp in loops], [(0x40, 0x110), (0x60, 0xD0)])
        self.assertTrue(loops[0].contains(loops[1]))

    def test_kstep_mix_weights_outer_loop(self):
        ins = sass.parse(SASS)["k"]
        # one k-step = the two HMMAs (4096 MACs per warp); the inner loop runs 4 times per
        # outer iteration, the outer loop 9 times (source trips innermost first)
        mix = sass.kstep_mix(ins, 4096, trips=[4, 9])
        self.assertEqual(mix.unroll, 1)
        self.assertEqual(mix.loops, 2)
        self.assertAlmostEqual(mix.macs, 4096)
        self.assertAlmostEqual(mix.counts["mma"], 2)
        self.assertAlmostEqual(mix.counts["ldsm"], 1)
        self.assertAlmostEqual(mix.counts["bar"], 1)
        # inner body: 8 instructions; outer-only: IADD3, LEA, IADD3, STS, ISETP, BRA = 6 / 4
        self.assertAlmostEqual(mix.total, 8 + 6 / 4.0)
        self.assertAlmostEqual(mix.counts["sts"], 0.25)
        self.assertAlmostEqual(mix.smem_wavefronts, 4 + 4 + 2 + 4 * 0.25)
        self.assertAlmostEqual(mix.smem_read_bytes, 512 + 256)

    def test_kstep_mix_unrolled(self):
        # if one k-step were 2048 MACs, the body holds 2 k-steps: everything counts half, and the
        # unroll absorbs a source loop of 2 (the outer loop then runs 4/... per k-step)
        mix = sass.kstep_mix(sass.parse(SASS)["k"], 2048, trips=[2, 4, 9])
        self.assertEqual(mix.unroll, 2)
        self.assertAlmostEqual(mix.counts["mma"], 1)
        self.assertAlmostEqual(mix.total, 8 / 2.0 + 6 / 8.0)

    def test_labels_and_sub_kstep_loop(self):
        ins = sass.parse(SASS_LABELS)["w"]
        self.assertEqual(ins[6].target, 0x30)
        self.assertEqual(ins[7].target, 0x10)
        # a k-step of 64x128x32 per warpgroup = 2 HGMMA k16 slices: the inner loop runs twice
        mix = sass.kstep_mix(ins, 64 * 128 * 32 / 4.0)
        self.assertAlmostEqual(mix.counts["hgmma"], 2)
        self.assertAlmostEqual(mix.wait0, 2)
        self.assertAlmostEqual(mix.counts["bar"], 1)
        self.assertAlmostEqual(mix.total, 4 * 2 + 3)
        # A comes from registers: only B (128 x 16 bf16) is read from shared memory, per warp / 4
        self.assertAlmostEqual(mix.smem_read_bytes, 2 * 128 * 16 * 2 / 4.0)

    def test_no_loop(self):
        self.assertIsNone(sass.kstep_mix(sass.parse(SASS_LABELS.replace("BRA", "NOP"))["w"], 1))


DEF = """
/* comment TARGET(x, .a = 1) */
#define TARGET(id, ...)
TARGET(t1, .cc = 80, .name = "a, b", .ok = true,
       .regs_per_sm = 65536, .smem_per_sm = 167936, .threads_per_sm = 2048, .ctas_per_sm = 32,
       .reg_alloc_unit = 256, .smem_reserved_per_cta = 1024, .subpartitions = 4,
       .smem_bytes_per_clk = 128, .smem_banks = 32, .ffma_per_clk = 64,
       .mma_sync_macs_per_clk = 1024, .wgmma_macs_per_clk = 0, .bar_latency_clk = 20,
       .wgmma_latency_clk = 0)
GPU(g, .sms = 108, .boost_ghz = 1.41, .peak = 3.12e14)
"""


class TargetsModelTest(unittest.TestCase):
    def test_parse(self):
        rows = targets.parse(DEF.replace('"a, b"', '"ab"'))
        t = rows["TARGET"]["t1"]
        self.assertEqual(t["cc"], 80)
        self.assertEqual(t["name"], "ab")
        self.assertIs(t["ok"], True)
        self.assertEqual(rows["GPU"]["g"]["peak"], 3.12e14)
        self.assertEqual(list(rows["TARGET"]), ["t1"])

    def test_real_table(self):
        rows = targets.load()
        for name in ("sm_80", "sm_90", "sm_90a"):
            t = rows["TARGET"][name]
            for f in ("regs_per_sm", "smem_per_sm", "mma_sync_macs_per_clk", "bar_latency_clk",
                      "reg_alloc_unit", "smem_reserved_per_cta", "wgmma_latency_clk"):
                self.assertIn(f, t)
        self.assertGreater(rows["TARGET"]["sm_90a"]["wgmma_macs_per_clk"], 0)

    def test_occupancy(self):
        t = targets.parse(DEF.replace('"a, b"', '"ab"'))["TARGET"]["t1"]
        # 240 regs x 32 lanes = 7680 per warp (a multiple of 256) x 4 warps = 30720: 2 CTAs
        self.assertEqual(model.occupancy(t, 240, 56832, 128), (2, "regs"))
        # 168 regs: 5376 per warp x 4 = 21504 -> 3 by registers; 48 KB + 1 KB -> 3 by shared
        self.assertEqual(model.occupancy(t, 168, 49152, 128)[0], 3)
        # 100 KB of shared memory: 1 CTA
        self.assertEqual(model.occupancy(t, 32, 100 * 1024, 128), (1, "smem"))

    def test_cycles(self):
        t = targets.parse(DEF.replace('"a, b"', '"ab"'))["TARGET"]["t1"]
        mix = sass.kstep_mix(sass.parse(SASS)["k"], 4096, trips=[4, 9])
        cpm, lim, terms = model.cycles(t, mix, 4, 2)
        # tensor: 4096 MACs x 4 warps / 1024 per clk = 16 per CTA, 32 for 2 CTAs
        self.assertAlmostEqual(terms["tensor"], 32)
        # smem: 11 wavefronts x 4 warps = 44 per CTA, 88 for 2 CTAs
        self.assertAlmostEqual(terms["smem"], 88)
        # issue: 9.5 instructions x ceil(8 warps / 4 sub-partitions)
        self.assertAlmostEqual(terms["issue"], 9.5 * 2)
        # one CTA's chain: its smem 44 + 1 barrier x 20
        self.assertAlmostEqual(terms["latency"], 44 + 20)
        self.assertEqual(lim, "smem")
        self.assertAlmostEqual(cpm, 88 / (2 * 4 * 4096.0))


META = """// tilec-metadata 1
// kernel k variant_of=k target=nvptx mcpu=sm_90 num_warps=4 block=128 smem=100 smem_dynamic=0
// param 0 x view f32 rank=2 facts=- dims=M,N
// param 1 n scalar i32 facts=- dims=-
// kernel k__acdi_d variant_of=k target=nvptx mcpu=sm_90 num_warps=4 block=128 smem=200 smem_dynamic=0
// param 0 x view f32 rank=2 facts=align16,contig,div16,i32 dims=M,N
// param 1 n scalar i32 facts=div16 dims=-
// end
.version 8.0
"""


class MetaTest(unittest.TestCase):
    def test_variants(self):
        meta = static.parse_meta(META)
        self.assertEqual(sorted(meta), ["k", "k__acdi_d"])
        self.assertEqual(meta["k__acdi_d"]["smem"], 200)
        self.assertEqual(meta["k__acdi_d"]["params"][0][2], ["align16", "contig", "div16", "i32"])
        ok = dict(x=([64, 32], [32, 1]), n=64)
        self.assertEqual(static.pick_variant(meta, ok), "k__acdi_d")
        # a permuted (non-contiguous) view, or n not a multiple of 16: the generic variant
        self.assertEqual(static.pick_variant(meta, dict(x=([64, 32], [1, 64]), n=64)), "k")
        self.assertEqual(static.pick_variant(meta, dict(x=([64, 32], [32, 1]), n=65)), "k")
        self.assertEqual(static.pick_variant(meta, dict(x=([64, 3], [3, 1]), n=64)), "k")


if __name__ == "__main__":
    unittest.main()
