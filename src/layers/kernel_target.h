#pragma once

// Multi-versioning for biaslab's CPU kernels (src/layers/*_kernel.cpp). On x86-64 GCC a
// function marked BIASLAB_TARGET_CLONES is compiled twice, for x86-64-v3 (AVX2, FMA) and for
// the baseline, and the loader picks one per machine (ifunc). Elsewhere it is a plain
// function. The kernel files are also compiled with -fopenmp, without which
// at::parallel_for is a serial loop (CMakeLists.txt).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define BIASLAB_TARGET_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define BIASLAB_TARGET_CLONES
#endif
