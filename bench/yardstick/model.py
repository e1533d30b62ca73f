"""Occupancy and the cycle model of bench/README.md ("Cycle model"). MODELLED figures, not measured.

All parameters come from support/targets.def (yardstick.targets): the TARGET row's resource limits
and throughputs. Units: clocks of one SM; a k-step is one source `dot` step of one CTA.
"""
import math


def occupancy(t, regs, smem, threads):
    """CTAs per SM and the limiting resource ('regs', 'smem', 'threads', 'ctas').
    regs: registers per thread (ptxas); smem: shared bytes per CTA; threads: per CTA. Registers are
    allocated per warp in units of .reg_alloc_unit; each CTA also holds .smem_reserved_per_cta."""
    warps = math.ceil(threads / 32)
    unit = t["reg_alloc_unit"]
    per_warp = math.ceil(max(regs, 1) * 32 / unit) * unit
    lim = {
        "regs": t["regs_per_sm"] // (per_warp * warps),
        "smem": t["smem_per_sm"] // (smem + t["smem_reserved_per_cta"]),
        "threads": t["threads_per_sm"] // threads,
        "ctas": t["ctas_per_sm"],
    }
    n = min(lim.values())
    return n, min(lim, key=lambda k: lim[k])


def cycles(t, mix, warps, ctas):
    """Modelled clocks per MAC of one SM running `ctas` CTAs of `warps` warps, each a k-step with
    the per-warp `mix` (yardstick.sass.Mix). Returns (clocks per MAC, limiter, terms) where terms
    are the clocks per SM round (every resident CTA one k-step):
      tensor  MACs / the engine's MACs per clock (HGMMA: wgmma rate; HMMA: mma.sync rate;
              FFMA: 32 MACs per warp instruction at .ffma_per_clk lanes per clock)
      smem    wavefronts (128-byte bank cycles) x 128 / .smem_bytes_per_clk
      issue   instructions of the busiest sub-partition (one issue slot per clock each)
      latency one CTA's own chain: its slowest resource + the latency its barriers and
              `wgmma.wait_group 0` expose (.bar_latency_clk, .wgmma_latency_clk); other CTAs
              on the SM hide it, the CTA itself cannot."""
    if ctas < 1 or mix is None or mix.macs <= 0:
        return None, "-", {}
    c = mix.counts
    tensor_cta = 0.0
    if c["hgmma"] and t["wgmma_macs_per_clk"]:
        tensor_cta += mix.class_macs.get("hgmma", 0.0) * warps / t["wgmma_macs_per_clk"]
    if c["mma"] and t["mma_sync_macs_per_clk"]:
        tensor_cta += mix.class_macs.get("mma", 0.0) * warps / t["mma_sync_macs_per_clk"]
    if c["ffma"] and t["ffma_per_clk"]:
        tensor_cta += c["ffma"] * 32 * warps / t["ffma_per_clk"]
    bank_bytes = 4 * t["smem_banks"]
    smem_cta = mix.smem_wavefronts * warps * bank_bytes / t["smem_bytes_per_clk"]
    sub = t["subpartitions"]
    issue_cta = mix.total * math.ceil(warps / sub)
    issue_sm = mix.total * math.ceil(ctas * warps / sub)
    lat = c["bar"] * t["bar_latency_clk"] + mix.wait0 * t["wgmma_latency_clk"]
    terms = {
        "tensor": tensor_cta * ctas,
        "smem": smem_cta * ctas,
        "issue": issue_sm,
        "latency": max(tensor_cta, smem_cta, issue_cta) + lat,
    }
    limiter = max(terms, key=lambda k: terms[k])
    return terms[limiter] / (ctas * warps * mix.macs), limiter, terms

