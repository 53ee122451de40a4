# The CPU kernel sets this build compiles: one lig_kernel_set() entry per ISA folder, grouped by
# architecture (included from the top CMakeLists.txt). An entry compiles its folder's
# micro-kernels with its flags and its configuration (<dir>-config.c) without them, so that the
# configuration's feature test runs on any CPU; it appends its set to the table that
# kernel_sets.c selects from (generated: lig_kernel_set_table.h) and to LIG_KERNEL_SETS, the sets
# the test suite runs under. Entry order is the table's: portable first, widest last (automatic
# selection takes the last set the CPU supports).
#
#   lig_kernel_set(NAME <LIG_ISA name> DIR <dir> ARCH <x86_64|aarch64|any> FLAGS <compile flags...>
#                  FILES <op_tile basenames...> [SET_IN_TABLE ON|OFF] [IF <variable>...])
#
# FILES are <dir>/<basename>__<dir>.c; SET_IN_TABLE OFF is a folder that only provides families
# to other sets (NAME then unused); IF names variables that must all be true (a compiler probe,
# an option). Sets: LIG_KERNEL_SOURCES, LIG_KERNEL_SETS, LIG_CPU_FEATURES_SOURCE,
# LIG_KERNEL_GENERATED_DIR (the include directory of the table), and on aarch64
# LIG_QEMU_BASELINE_CPU and LIG_KERNEL_SET_BASELINE (the emulated run of detection).
set(LIG_KERNELS_DIR ${CMAKE_CURRENT_LIST_DIR})
set(LIG_KERNEL_SOURCES ${LIG_KERNELS_DIR}/kernel_sets.c ${LIG_KERNELS_DIR}/gemm_drivers.c)
set(LIG_KERNEL_SETS)
set(LIG_KERNEL_SET_TABLE "")

# The architecture the kernels are compiled for, and the detection of its CPU features.
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
  set(LIG_TARGET_ARCH x86_64)
  set(_lig_cpu_features x86)
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64|ARM64)$")
  set(LIG_TARGET_ARCH aarch64)
  set(_lig_cpu_features arm)
else()
  set(LIG_TARGET_ARCH other)
  set(_lig_cpu_features none)
endif()
get_filename_component(LIG_CPU_FEATURES_SOURCE ${LIG_KERNELS_DIR}/../runtime/cpu_features_${_lig_cpu_features}.c ABSOLUTE)

# The architecture whose SIMD entries are compiled: none when its sets are switched off.
set(LIG_SIMD_ARCH ${LIG_TARGET_ARCH})
if((LIG_TARGET_ARCH STREQUAL "x86_64" AND NOT LIG_ENABLE_X86_SIMD) OR
   (LIG_TARGET_ARCH STREQUAL "aarch64" AND NOT LIG_ENABLE_ARM_SIMD))
  set(LIG_SIMD_ARCH none)
endif()

function(lig_kernel_set)
  cmake_parse_arguments(K "" "NAME;DIR;ARCH;SET_IN_TABLE" "FLAGS;FILES;IF" ${ARGN})
  if(K_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "lig_kernel_set(${K_DIR}): unknown arguments ${K_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT K_DIR OR NOT K_ARCH OR NOT K_FILES)
    message(FATAL_ERROR "lig_kernel_set: DIR, ARCH and FILES are required (got DIR '${K_DIR}', ARCH '${K_ARCH}')")
  endif()
  if(NOT DEFINED K_SET_IN_TABLE)
    set(K_SET_IN_TABLE ON)
  endif()
  if(K_SET_IN_TABLE AND NOT K_NAME)
    message(FATAL_ERROR "lig_kernel_set(${K_DIR}): NAME (the LIG_ISA value) is required for a set in the table")
  endif()
  if(NOT K_ARCH STREQUAL "any" AND NOT K_ARCH STREQUAL LIG_SIMD_ARCH)
    return()
  endif()
  foreach(condition IN LISTS K_IF)
    if(NOT ${condition})
      return()
    endif()
  endforeach()
  set(files)
  foreach(base IN LISTS K_FILES)
    list(APPEND files ${LIG_KERNELS_DIR}/${K_DIR}/${base}__${K_DIR}.c)
  endforeach()
  if(K_FLAGS)
    set_source_files_properties(${files} PROPERTIES COMPILE_OPTIONS "${K_FLAGS}")
  endif()
  set(LIG_KERNEL_SOURCES ${LIG_KERNEL_SOURCES} ${files} ${LIG_KERNELS_DIR}/${K_DIR}/${K_DIR}-config.c PARENT_SCOPE)
  if(K_SET_IN_TABLE)
    set(LIG_KERNEL_SETS ${LIG_KERNEL_SETS} ${K_NAME} PARENT_SCOPE)
    set(LIG_KERNEL_SET_TABLE "${LIG_KERNEL_SET_TABLE}LIG_KERNEL_SET(${K_DIR})\n" PARENT_SCOPE)
  endif()
endfunction()

# ---- every architecture ----------------------------------------------------------------------
# The portable set, first in the table: the reference every other set is tested against.
lig_kernel_set(NAME scalar DIR scalar ARCH any
  FILES bf16_engine convert f32_gemm_4x4 fwd_scores grad_gate quant_scores i8_gemm_4x4 fp8_convert)

# ---- x86_64 (LIG_ENABLE_X86_SIMD) ------------------------------------------------------------
if(LIG_SIMD_ARCH STREQUAL "x86_64")
  # avxvnni (VEX vpdpbusd ymm) needs -mavxvnni and _mm256_dpbusd_avx_epi32: GCC 11, clang 12 or
  # later. An older compiler builds the other sets; the set is then absent (LIG_ISA names it unknown).
  include(CheckCSourceCompiles)
  set(CMAKE_REQUIRED_FLAGS "-mavx2 -mfma -mavxvnni")
  check_c_source_compiles("#include <immintrin.h>
__m256i lig_probe(__m256i a, __m256i b, __m256i c);
__m256i lig_probe(__m256i a, __m256i b, __m256i c) { return _mm256_dpbusd_avx_epi32(a, b, c); }
int main(void) { return 0; }" LIG_COMPILER_HAS_AVXVNNI)
  unset(CMAKE_REQUIRED_FLAGS)
  if(NOT LIG_COMPILER_HAS_AVXVNNI)
    message(STATUS "lig: the compiler lacks -mavxvnni (_mm256_dpbusd_avx_epi32): the avxvnni kernel set is not built")
  endif()
endif()
lig_kernel_set(NAME avx2 DIR avx2 ARCH x86_64 FLAGS -mavx2 -mfma -mf16c
  FILES convert f32_gemm_6x16 f32_gemm_12x8 fwd_scores quant_scores grad_gate i8_gemm_6x16 fp8_convert
  mxfp4_dots_6x8 mxfp4_decode)
lig_kernel_set(NAME avxvnni DIR avxvnni ARCH x86_64 FLAGS -mavx2 -mfma -mavxvnni
  FILES i8_gemm_6x16 IF LIG_COMPILER_HAS_AVXVNNI)
lig_kernel_set(NAME avx512 DIR avx512 ARCH x86_64 FLAGS -mavx512f -mavx512bw -mavx512dq -mavx512vl -mfma -mf16c
  FILES convert f32_gemm_12x32 f32_gemm_24x16 fwd_scores quant_scores grad_gate i8_gemm_12x32 fp8_convert)
# the int8 family of avx512bf16 and amx-bf16, no set of its own
lig_kernel_set(DIR avx512vnni ARCH x86_64 FLAGS -mavx512f -mavx512bw -mavx512dq -mavx512vl -mavx512vnni
  FILES i8_gemm_12x32 mxfp4_dots_12x16 SET_IN_TABLE OFF)
lig_kernel_set(NAME avx512bf16 DIR avx512bf16 ARCH x86_64
  FLAGS -mavx512f -mavx512bw -mavx512dq -mavx512vl -mfma -mf16c -mavx512bf16 -mavx512vbmi -mgfni
  FILES bf16_gate bf16_gemm_12x32 bf16_dq_operand bf16_pack_pairs)
lig_kernel_set(NAME amx-bf16 DIR amx ARCH x86_64 FLAGS -mamx-tile -mamx-bf16 FILES bf16_gemm_32x32 IF LIG_AMX)

# ---- aarch64 (LIG_ENABLE_ARM_SIMD) -----------------------------------------------------------
# Portable to widest. -ffp-contract=off: FMLA is spelt out where a kernel fuses; elsewhere a
# product and a sum stay two roundings, as in the scalar reference.
lig_kernel_set(NAME neon DIR neon ARCH aarch64 FLAGS -march=armv8-a -ffp-contract=off
  FILES f32_gemm_8x12 f32_gemm_12x8 grad_gate fwd_scores quant_scores convert i8_gemm_8x8 fp8_convert)
lig_kernel_set(NAME neon-dotprod DIR neondot ARCH aarch64 FLAGS -march=armv8.2-a+dotprod -ffp-contract=off
  FILES i8_gemm_8x8)
lig_kernel_set(NAME neon-i8mm DIR neoni8mm ARCH aarch64 FLAGS -march=armv8.2-a+dotprod+i8mm -ffp-contract=off
  FILES i8_gemm_8x8)
lig_kernel_set(NAME neon-bf16 DIR neonbf16 ARCH aarch64 FLAGS -march=armv8.2-a+dotprod+i8mm+bf16 -ffp-contract=off
  FILES bf16_gemm_8x8 bf16_pack_pairs bf16_gate bf16_dq_operand)

# What automatic selection must pick on a CPU model with none of the optional features (ARMv8.0,
# qemu's cortex-a57): the cross build's ctest runs the suite there once (lig-tests-detect-*), and
# every set with QEMU_CPU=max (tests/CMakeLists.txt).
if(LIG_TARGET_ARCH STREQUAL "aarch64")
  set(LIG_QEMU_BASELINE_CPU cortex-a57)
  if("neon" IN_LIST LIG_KERNEL_SETS)
    set(LIG_KERNEL_SET_BASELINE neon)
  else()
    set(LIG_KERNEL_SET_BASELINE scalar)
  endif()
endif()

# The table kernel_sets.c includes, rewritten only when it changes (no rebuild per configure).
set(LIG_KERNEL_GENERATED_DIR ${CMAKE_CURRENT_BINARY_DIR}/generated)
file(WRITE ${LIG_KERNEL_GENERATED_DIR}/lig_kernel_set_table.h.in
  "/* Generated by CMake (src/backends/cpu/kernels/kernel_sets.cmake): the kernel sets of this build,\n"
  " * portable first, widest last. An X-macro list, included once per use: no include guard. */\n"
  "${LIG_KERNEL_SET_TABLE}")
configure_file(${LIG_KERNEL_GENERATED_DIR}/lig_kernel_set_table.h.in ${LIG_KERNEL_GENERATED_DIR}/lig_kernel_set_table.h
  COPYONLY)
message(STATUS "lig: kernel sets ${LIG_KERNEL_SETS} (${LIG_TARGET_ARCH})")
