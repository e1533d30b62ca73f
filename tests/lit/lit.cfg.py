# lit configuration for tilec's compiler tests. Each suite directory (lexer, parser, sema, ir,
# passes, diag, cli ...) is run by CTest as one test; all share this config.
import os
import lit.formats

config.name = "tilec"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".tile", ".tir", ".test"]
config.excludes = ["Inputs", "lit.cfg.py", "lit.site.cfg.py.in"]
config.test_source_root = os.path.dirname(__file__)

site = lit_config.params.get("tilec_site_config")
if not site:
    lit_config.fatal("run through CTest (needs --param tilec_site_config=...)")
lit_config.load_config(config, site)
# Test outputs (%t files) go to the build tree, never into the sources.
config.test_exec_root = os.path.join(config.tilec_build_dir, "tests", "lit")

config.substitutions.append(("%expect-exit", "sh " + os.path.join(os.path.dirname(__file__), "Inputs", "expect-exit.sh")))
# %tilec-onnx before %tilec (lit substitutes in list order).
config.substitutions.append(("%tilec-onnx", os.path.join(config.tilec_bin_dir, "tilec-onnx")))
config.substitutions.append(("%onnx-models", os.path.join(config.tilec_src_dir, "tests", "onnx", "models")))
config.substitutions.append(("%tilec-embed", os.path.join(config.tilec_bin_dir, "tilec-embed")))
config.substitutions.append(("%tilec_include", os.path.join(config.tilec_src_dir, "include")))
config.substitutions.append(("%tilec", os.path.join(config.tilec_bin_dir, "tilec")))
config.substitutions.append(("%FileCheck", config.filecheck))
config.substitutions.append(("FileCheck", config.filecheck))
config.substitutions.append(("%not", config.llvm_not))
config.substitutions.append(("%examples", os.path.join(config.tilec_src_dir, "examples")))
config.substitutions.append(("%srcroot", config.tilec_src_dir))
config.substitutions.append(("%python", config.python))
# Every IR the compiler prints in a test is re-parsed and re-printed by tilec itself, which fails
# when the two texts differ (the round-trip rule), after the frontend and after every pass.
config.environment["TILEC_CHECK_ROUNDTRIP"] = "1"
# FileCheck and `not` come from LLVM 19's bin directory.
config.environment["PATH"] = os.path.dirname(config.filecheck) + os.pathsep + os.environ.get("PATH", "")
for var in ("ASAN_OPTIONS", "UBSAN_OPTIONS"):
    if var in os.environ:
        config.environment[var] = os.environ[var]
# ptxas checks: tests say `REQUIRES: ptxas` and lit reports them UNSUPPORTED (skipped, with the
# reason in the summary) on machines without the CUDA toolkit.
ptxas = getattr(config, "ptxas", "")
if ptxas and os.path.exists(ptxas):
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", ptxas))
else:
    lit_config.note("ptxas not found: PTX acceptance tests are skipped (install the CUDA toolkit)")
# NVPTX math (exp, log, tanh, erf, rsqrt) links libdevice: tests that emit it say
# `REQUIRES: libdevice` and are skipped where the CUDA toolkit is absent.
libdevice = os.environ.get("TILEC_LIBDEVICE") or getattr(config, "libdevice", "")
if libdevice and os.path.exists(libdevice):
    config.available_features.add("libdevice")
else:
    lit_config.note("libdevice not found: NVPTX math tests are skipped (install the CUDA toolkit)")
for var in ("TILEC_LIBDEVICE",):
    if var in os.environ:
        config.environment[var] = os.environ[var]
