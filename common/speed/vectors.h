// vectors.h - what the vector kernels of lessons 13, 14 and 16 are written
// with: where there are any, how a function is compiled for AVX2 or AVX-512,
// and lesson 13's registers as C types.
//
// The kernels exist where the compiler is GCC or Clang on x86-64, and then
// HAVE_VECTOR_KERNELS is defined; elsewhere only the scalar twins are built.
// The Makefile's flags are the project's (-std=c11, no -mavx2): each vector
// function carries a target attribute instead, so the binary still runs on
// any x86-64 and the lesson asks the CPU at run time which of them it may
// call (speed/cpu.h).
//
// The types are GCC's vector extension: a v8f is 8 floats in one 32-byte
// register, and `a + b`, `a * s`, `a < b` work on every lane (a comparison
// gives all ones, -1, in the lanes where it holds, 0 elsewhere). An operation
// C has no operator for (a fused multiply-add, the x86 max) is an intrinsic
// in a helper below. A cast between vector types of one size keeps the bits.
#ifndef SPEED_VECTORS_H
#define SPEED_VECTORS_H

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define HAVE_VECTOR_KERNELS 1
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

// The instruction sets a function may use. The avx512 kernels may use AVX2's
// and FMA's too (cpu_runs lets them run only where the CPU has all three).
#define AVX2_CODE __attribute__((target("avx2,fma")))
#define AVX512_CODE __attribute__((target("avx512f,avx2,fma")))
// Small helpers are copied into each caller, so a vector stays in its register.
#define ALWAYS_INLINE __attribute__((always_inline)) static inline

typedef float v8f __attribute__((vector_size(32)));      // 8 floats: one AVX2 register
typedef int32_t v8i __attribute__((vector_size(32)));    // the same 32 bytes as 8 int32
typedef uint32_t v8u __attribute__((vector_size(32)));   // ... or 8 uint32 (which wrap)
typedef float v16f __attribute__((vector_size(64)));     // 16 floats: one AVX-512 register
typedef int32_t v16i __attribute__((vector_size(64)));

AVX2_CODE ALWAYS_INLINE v8f load8(const float *p) {
    v8f v;
    memcpy(&v, p, sizeof v);   // one unaligned load
    return v;
}

AVX2_CODE ALWAYS_INLINE void store8(float *p, v8f v) {
    memcpy(p, &v, sizeof v);
}

AVX2_CODE ALWAYS_INLINE v8f splat8(float x) {   // x in every lane
    return (v8f){x, x, x, x, x, x, x, x};
}

AVX2_CODE ALWAYS_INLINE v8f fma8(v8f a, v8f b, v8f c) {   // fmaf(a, b, c) on each lane
    return _mm256_fmadd_ps(a, b, c);
}

// The x86 max on each lane: b unless a is larger (so b where either is NaN).
AVX2_CODE ALWAYS_INLINE v8f max8(v8f a, v8f b) {
    return _mm256_max_ps(a, b);
}

AVX512_CODE ALWAYS_INLINE v16f load16(const float *p) {
    v16f v;
    memcpy(&v, p, sizeof v);
    return v;
}

AVX512_CODE ALWAYS_INLINE void store16(float *p, v16f v) {
    memcpy(p, &v, sizeof v);
}

AVX512_CODE ALWAYS_INLINE v16f splat16(float x) {
    return _mm512_set1_ps(x);
}

AVX512_CODE ALWAYS_INLINE v16f fma16(v16f a, v16f b, v16f c) {
    return _mm512_fmadd_ps(a, b, c);
}

AVX512_CODE ALWAYS_INLINE v16f max16(v16f a, v16f b) {
    return _mm512_max_ps(a, b);
}
#endif

#endif
