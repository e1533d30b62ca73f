# tilec_add_kernels: .tile kernels compiled ahead of time and embedded in a CMake target
# (docs/install.md, "Ahead of time in your own project" in README.md).
#
#   tilec_add_kernels(TARGET <target> SOURCES a.tile [b.tile ...] ARCHS sm_80 [sm_90 sm_90a ...]
#                     [DEFINES NAME=VALUE ...] [OPTIONS <tilec options> ...])
#
# At build time, for each source: tilec --emit=ptx per architecture, ptxas -arch=ARCH of each into a
# cubin, PTX of the newest listed architecture for the driver's JIT on newer GPUs (an arch-specific
# sm_90a contributes sm_90 PTX: the JIT of sm_90a PTX runs on sm_90a only), and tilec --target=host
# --emit=so for the emulator. tilec-embed writes them into <stem>.tile.c (compiled into the target)
# and a header <stem>.tile.h (on the target's include path) declaring
#   TlrtStatus tilec_load_<stem>(TlrtContext *ctx, TlrtModule **out);
# which loads the image that suits the device (tlrt_module_load_embedded). The target links
# tilec::tilert. Editing a .tile source rebuilds its images and the targets that embed it, nothing else.
#
# Without ptxas (TILEC_PTXAS not found), or with TILEC_PTX_ONLY=ON, every architecture is embedded as
# PTX instead of a cubin: the program still runs on each of them, after a JIT at load time.
include_guard(GLOBAL)

option(TILEC_PTX_ONLY "tilec_add_kernels: embed PTX only, no ptxas cubins" OFF)
find_program(TILEC_PTXAS ptxas HINTS ENV CUDA_HOME ENV CUDA_PATH /usr/local/cuda PATH_SUFFIXES bin
             DOC "ptxas for tilec_add_kernels' cubins (optional: PTX only without it)")
if(TILEC_PTX_ONLY)
  message(STATUS "tilec: TILEC_PTX_ONLY=ON: kernels are embedded as PTX only (JIT-compiled when loaded)")
elseif(NOT TILEC_PTXAS)
  message(STATUS "tilec: ptxas not found (set TILEC_PTXAS or CUDA_HOME): kernels are embedded as PTX only "
                 "(JIT-compiled by the CUDA driver when loaded) plus host code for the emulator")
endif()

function(tilec_add_kernels)
  cmake_parse_arguments(PARSE_ARGV 0 TK "" "TARGET" "SOURCES;ARCHS;DEFINES;OPTIONS")
  if(TK_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "tilec_add_kernels: unexpected arguments: ${TK_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT TK_TARGET OR NOT TARGET ${TK_TARGET})
    message(FATAL_ERROR "tilec_add_kernels: TARGET must name an existing target (got '${TK_TARGET}')")
  endif()
  if(NOT TK_SOURCES OR NOT TK_ARCHS)
    message(FATAL_ERROR "tilec_add_kernels(TARGET ${TK_TARGET}): SOURCES and ARCHS are required")
  endif()
  if(NOT CMAKE_C_COMPILER_LOADED)
    message(FATAL_ERROR "tilec_add_kernels: the embedded kernels are C source: enable C in the project "
                        "(project(... LANGUAGES C CXX))")
  endif()
  if(NOT TARGET tilec::compiler OR NOT TARGET tilec::embed)
    message(FATAL_ERROR "tilec_add_kernels: this tilec installation has no compiler (a runtime-only build)")
  endif()

  # The architectures as tilec --mcpu names them; the newest one's plain (not arch-specific) form
  # gets PTX for the JIT. tilec itself rejects a name it does not know, at build time.
  set(newest 0)
  foreach(arch IN LISTS TK_ARCHS)
    if(NOT arch MATCHES "^sm_([0-9]+)a?$")
      message(FATAL_ERROR "tilec_add_kernels(TARGET ${TK_TARGET}): bad architecture '${arch}' (sm_80, sm_90a ...)")
    endif()
    if(CMAKE_MATCH_1 GREATER newest)
      set(newest ${CMAKE_MATCH_1})
    endif()
  endforeach()
  set(jit_arch sm_${newest})
  set(cubins ON)
  if(TILEC_PTX_ONLY OR NOT TILEC_PTXAS)
    set(cubins OFF)
  endif()

  set(flags)
  foreach(d IN LISTS TK_DEFINES)
    list(APPEND flags -D ${d})
  endforeach()
  list(APPEND flags ${TK_OPTIONS})

  set(dir ${CMAKE_CURRENT_BINARY_DIR}/tilec_kernels/${TK_TARGET})
  file(MAKE_DIRECTORY ${dir}/include)
  set(tilec_exe $<TARGET_FILE:tilec::compiler>)
  set(embed_exe $<TARGET_FILE:tilec::embed>)
  set(seen)
  foreach(src IN LISTS TK_SOURCES)
    get_filename_component(abs ${src} ABSOLUTE BASE_DIR ${CMAKE_CURRENT_SOURCE_DIR})
    get_filename_component(fname ${src} NAME)
    get_filename_component(stem ${src} NAME_WE)
    string(MAKE_C_IDENTIFIER ${stem} sym)
    if(sym IN_LIST seen)
      message(FATAL_ERROR "tilec_add_kernels(TARGET ${TK_TARGET}): two sources named ${stem}")
    endif()
    list(APPEND seen ${sym})

    set(ptx_archs ${TK_ARCHS})
    if(cubins)
      set(ptx_archs ${TK_ARCHS} ${jit_arch})
    else()
      list(APPEND ptx_archs ${jit_arch})
    endif()
    list(REMOVE_DUPLICATES ptx_archs)
    set(images)
    set(embed_args)
    foreach(arch IN LISTS ptx_archs)
      set(ptx ${dir}/${stem}.${arch}.ptx)
      add_custom_command(OUTPUT ${ptx}
        COMMAND ${tilec_exe} ${abs} --emit=ptx --mcpu=${arch} ${flags} -o ${ptx}
        DEPENDS ${abs} ${tilec_exe}
        COMMENT "tilec ${fname} -> PTX ${arch}" VERBATIM)
      list(APPEND images ${ptx})
      if(NOT cubins)
        list(APPEND embed_args --ptx ${arch} ${ptx})
      endif()
    endforeach()
    if(cubins)
      foreach(arch IN LISTS TK_ARCHS)
        set(ptx ${dir}/${stem}.${arch}.ptx)
        set(cubin ${dir}/${stem}.${arch}.cubin)
        add_custom_command(OUTPUT ${cubin}
          COMMAND ${TILEC_PTXAS} -arch=${arch} ${ptx} -o ${cubin}
          DEPENDS ${ptx}
          COMMENT "ptxas ${fname} -> cubin ${arch}" VERBATIM)
        list(APPEND images ${cubin})
        list(APPEND embed_args --cubin ${arch} ${cubin} ${ptx})
      endforeach()
      list(APPEND embed_args --ptx ${jit_arch} ${dir}/${stem}.${jit_arch}.ptx)
    endif()
    set(so ${dir}/${stem}.so)
    add_custom_command(OUTPUT ${so}
      COMMAND ${tilec_exe} ${abs} --target=host --emit=so ${flags} -o ${so}
      DEPENDS ${abs} ${tilec_exe}
      COMMENT "tilec ${fname} -> host code" VERBATIM)
    list(APPEND images ${so})
    list(APPEND embed_args --host ${so})

    set(c ${dir}/${fname}.c)
    set(h ${dir}/include/${fname}.h)
    add_custom_command(OUTPUT ${c} ${h}
      COMMAND ${embed_exe} -o ${c} -H ${h} --symbol ${sym} --name ${fname} ${embed_args}
      DEPENDS ${images} ${embed_exe}
      COMMENT "tilec-embed ${fname}" VERBATIM)
    target_sources(${TK_TARGET} PRIVATE ${c} ${h})
  endforeach()
  target_include_directories(${TK_TARGET} PRIVATE ${dir}/include)
  target_link_libraries(${TK_TARGET} PRIVATE tilec::tilert)
endfunction()
