# Expected run times of the slowest tests, in seconds (the ASan pass of a CI run on 2 cores;
# docs/testing.md). CTest starts tests in descending COST; without this, a fresh build directory
# (no Testing/Temporary/CTestCostData.txt yet: every CI run) starts them in definition order and
# onnx.suite, defined late, starts near the end. After one run CTest's own measurements take over.
set(TILEC_TEST_COSTS
    onnx.suite=187 lit.onnx=143 unit.test_dot_mma=92 lit.smem=85 lit.std=82 unit.test_tile_configs_emu=74
    lit.fuse=54 unit.test_fusion_row=50 lit.limits=38 unit.test_std_ops=35 unit.test_dot_wgmma=33
    unit.test_fusion=28 lit.zoo=25 unit.test_fusion_table=25 lit.examples=24 unit.test_fusion_prologue=22
    unit.test_dot_fma=21)

# Sets the COST of test NAME (defined in the calling directory) when the table has a row for it.
function(tilec_test_cost name)
  foreach(row ${TILEC_TEST_COSTS})
    if(row MATCHES "^${name}=([0-9]+)$")
      set_tests_properties(${name} PROPERTIES COST ${CMAKE_MATCH_1})
    endif()
  endforeach()
endfunction()
