// DBPA Explorer: a Q4_1 x Q8_1 matrix product for x86 that keeps the vector-dot numbers bit for bit.
//
// Added to llama.cpp's CPU backend at install by scripts/llama_cpp/patch.py
// (DBPA Explorer, MIT; https://github.com/ggml-org/llama.cpp is MIT as well).
//
// llama.cpp multiplies Q4_1 weights (the packaged SmolLM2's format) by an
// activation matrix with one call of ggml_vec_dot_q4_1_q8_1 per (weight row,
// activation column): each call unpacks the row's 4-bit blocks and converts
// its scales again, and one accumulator makes every block wait for the last,
// so a forward step of 16 sequences costs nearly 16 one-sequence steps.
// llama.cpp's tiled GEMM kernels (llamafile's tinyBLAS, the repacked
// layouts) cover other formats, not Q4_1.  Here a tile of weight rows x
// activation columns is computed together: each weight block is unpacked
// once per tile and each activation block read once per tile.
//
// Every output element is computed with exactly the operations of
// ggml_vec_dot_q4_1_q8_1 (arch/x86/quants.c, AVX2 branch), in the same order:
//   for each block b:  summs = fma(m_x, s_y, summs)
//                      acc   = fma(d_x * d_y, float(isum(x_b * y_b)), acc)   (8 lanes)
//   result = hsum_float_8(acc) + summs
// where isum (maddubs + madd, or the VNNI instruction dpbusd) is exact integer
// arithmetic and every float operation is one IEEE rounding, lane by lane; so
// results equal the one-column path bit for bit, whatever the tile, the
// instruction set or the thread count.  Two kernels: AVX-512 VNNI (two
// columns per 512-bit register, chosen at run time where the CPU has it) and
// AVX2 (the build's own instruction set).  For comparisons, DBPA_Q4_1_GEMM=0
// in the environment falls back to llama.cpp's vector-dot path and
// DBPA_Q4_1_GEMM=avx2 keeps to the AVX2 kernel; dbpa_q4_1_gemm() tells which
// kernel runs.
#pragma once

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__) && defined(__GNUC__)
#define DBPA_Q4_1_GEMM 1
#include <immintrin.h>
#include <stdlib.h>
#include <string.h>

namespace dbpa {

#define DBPA_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")))

// 0: off (DBPA_Q4_1_GEMM=0), 1: AVX2, 2: AVX-512 VNNI.
inline int q4_1_gemm_kernel() {
    static const int kernel = [] {
        const char * value = getenv("DBPA_Q4_1_GEMM");
        if (value != nullptr && strcmp(value, "0") == 0) {
            return 0;
        }
        __builtin_cpu_init();
        const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                            __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
                            __builtin_cpu_supports("avx512vnni");
        return (value != nullptr && strcmp(value, "avx2") == 0) || !avx512 ? 1 : 2;
    }();
    return kernel;
}

// hsum_float_8 of arch/x86/quants.c, operation for operation.
static inline float q4_1_hsum_float_8(const __m256 x) {
    __m128 res = _mm256_extractf128_ps(x, 1);
    res = _mm_add_ps(res, _mm256_castps256_ps128(x));
    res = _mm_add_ps(res, _mm_movehl_ps(res, res));
    res = _mm_add_ss(res, _mm_movehdup_ps(res));
    return _mm_cvtss_f32(res);
}

class Q4_1_Q8_1_Gemm {
  public:
    // C[j * ldc + i] = dot(row i of A, row j of B); A: m rows of k Q4_1 blocks (stride lda blocks),
    // B: n rows of k Q8_1 blocks (stride ldb blocks).  Thread ith of nth computes its share of the tiles.
    Q4_1_Q8_1_Gemm(int64_t k, const block_q4_1 * A, int64_t lda, const block_q8_1 * B, int64_t ldb,
                   float * C, int64_t ldc, int ith, int nth)
        : A(A), B(B), C(C), k(k), lda(lda), ldb(ldb), ldc(ldc), ith(ith), nth(nth) {}

    void matmul(int64_t m, int64_t n) {
        if (q4_1_gemm_kernel() == 2) {
            mnpack_avx512(0, m, 0, n);
        } else {
            mnpack_avx2(0, m, 0, n);
        }
    }

  private:
    static inline float half(const void * block, int index) {
        ggml_fp16_t h;
        memcpy(&h, (const char *) block + index * sizeof(ggml_fp16_t), sizeof h);
        return GGML_CPU_FP16_TO_FP32(h);
    }

    // The 32 4-bit weights of a block as bytes (bytes_from_nibbles_32 of arch/x86/quants.c).
    static inline __m256i unpack(const block_q4_1 * block) {
        const __m128i packed = _mm_loadu_si128((const __m128i *) block->qs);
        return _mm256_and_si256(_mm256_set1_epi8(0xF), _mm256_insertf128_si256(
            _mm256_castsi128_si256(packed), _mm_srli_epi16(packed, 4), 1));
    }

    // The tiles of the m0..m x n0..n corner whose shape is RM x RN, then the rest (as llamafile's mnpack).
    void mnpack_avx2(int64_t m0, int64_t m, int64_t n0, int64_t n) {
        int64_t mc, nc;
        switch ((MIN(m - m0, 4) << 4) | MIN(n - n0, 2)) {
            case 0x42: mc = 4; nc = 2; gemm_avx2<4, 2>(m0, m, n0, n); break;
            case 0x41: mc = 4; nc = 1; gemm_avx2<4, 1>(m0, m, n0, n); break;
            case 0x32: mc = 3; nc = 2; gemm_avx2<3, 2>(m0, m, n0, n); break;
            case 0x31: mc = 3; nc = 1; gemm_avx2<3, 1>(m0, m, n0, n); break;
            case 0x22: mc = 2; nc = 2; gemm_avx2<2, 2>(m0, m, n0, n); break;
            case 0x21: mc = 2; nc = 1; gemm_avx2<2, 1>(m0, m, n0, n); break;
            case 0x12: mc = 1; nc = 2; gemm_avx2<1, 2>(m0, m, n0, n); break;
            case 0x11: mc = 1; nc = 1; gemm_avx2<1, 1>(m0, m, n0, n); break;
            default: return;
        }
        const int64_t mp = m0 + (m - m0) / mc * mc;
        const int64_t np = n0 + (n - n0) / nc * nc;
        mnpack_avx2(mp, m, n0, np);
        mnpack_avx2(m0, m, np, n);
    }

    DBPA_AVX512 void mnpack_avx512(int64_t m0, int64_t m, int64_t n0, int64_t n) {
        int64_t mc, nc;
        switch ((MIN(m - m0, 4) << 4) | MIN(n - n0, 4)) {
            case 0x44: mc = 4; nc = 4; gemm_avx512<4, 4>(m0, m, n0, n); break;
            case 0x34: mc = 3; nc = 4; gemm_avx512<3, 4>(m0, m, n0, n); break;
            case 0x24: mc = 2; nc = 4; gemm_avx512<2, 4>(m0, m, n0, n); break;
            case 0x14: mc = 1; nc = 4; gemm_avx512<1, 4>(m0, m, n0, n); break;
            case 0x43: case 0x42: mc = 4; nc = 2; gemm_avx512<4, 2>(m0, m, n0, n); break;
            case 0x33: case 0x32: mc = 3; nc = 2; gemm_avx512<3, 2>(m0, m, n0, n); break;
            case 0x23: case 0x22: mc = 2; nc = 2; gemm_avx512<2, 2>(m0, m, n0, n); break;
            case 0x13: case 0x12: mc = 1; nc = 2; gemm_avx512<1, 2>(m0, m, n0, n); break;
            case 0x41: case 0x31: case 0x21: case 0x11:  // one column left: the AVX2 tiles
                mnpack_avx2(m0, m, n0, n);
                return;
            default: return;
        }
        const int64_t mp = m0 + (m - m0) / mc * mc;
        const int64_t np = n0 + (n - n0) / nc * nc;
        mnpack_avx512(mp, m, n0, np);
        mnpack_avx512(m0, m, np, n);
    }

    // This thread's tiles of the RM x RN tiling of rows m0..m, columns n0..n: [start, end).
    void share(int64_t tiles, int64_t & start, int64_t & end) const {
        const int64_t duty = (tiles + nth - 1) / nth;
        start = duty * ith;
        end = MIN(start + duty, tiles);
    }

    template <int RM, int RN>
    NOINLINE void gemm_avx2(int64_t m0, int64_t m, int64_t n0, int64_t n) {
        static_assert(RM <= 4, "a tile's rows are the lanes of one __m128");
        const int64_t xtiles = (n - n0) / RN;
        int64_t start, end;
        share((m - m0) / RM * xtiles, start, end);
        const __m256i ones = _mm256_set1_epi16(1);
        for (int64_t job = start; job < end; ++job) {
            const int64_t ii = m0 + job / xtiles * RM;
            const int64_t jj = n0 + job % xtiles * RN;
            __m256 acc[RN][RM];
            __m128 summs[RN];  // lane i: row ii + i
            for (int j = 0; j < RN; ++j) {
                summs[j] = _mm_setzero_ps();
                for (int i = 0; i < RM; ++i) {
                    acc[j][i] = _mm256_setzero_ps();
                }
            }
            for (int64_t l = 0; l < k; ++l) {
                __m256i qx[RM];
                alignas(16) float dxs[4] = {0, 0, 0, 0}, mxs[4] = {0, 0, 0, 0};
                for (int i = 0; i < RM; ++i) {
                    const block_q4_1 * a = A + lda * (ii + i) + l;
                    qx[i] = unpack(a);
                    dxs[i] = half(a, 0);
                    mxs[i] = half(a, 1);
                }
                const __m128 dx = _mm_load_ps(dxs);
                const __m128 mx = _mm_load_ps(mxs);
                for (int j = 0; j < RN; ++j) {
                    const block_q8_1 * b = B + ldb * (jj + j) + l;
                    const __m256i qy = _mm256_loadu_si256((const __m256i *) b->qs);
                    summs[j] = _mm_fmadd_ps(mx, _mm_set1_ps(half(b, 1)), summs[j]);
                    // d_x * d_y for the tile's rows, each broadcast to the 8 lanes of its accumulator.
                    __m256 scales = _mm256_castps128_ps256(_mm_mul_ps(dx, _mm_set1_ps(half(b, 0))));
                    scales = _mm256_permute2f128_ps(scales, scales, 0);
                    for (int i = 0; i < RM; ++i) {
                        const __m256 xy = _mm256_cvtepi32_ps(_mm256_madd_epi16(ones, _mm256_maddubs_epi16(qx[i], qy)));
                        acc[j][i] = _mm256_fmadd_ps(_mm256_shuffle_ps(scales, scales, i * 0x55), xy, acc[j][i]);
                    }
                }
            }
            for (int j = 0; j < RN; ++j) {
                alignas(16) float s[4];
                _mm_store_ps(s, summs[j]);
                for (int i = 0; i < RM; ++i) {
                    C[ldc * (jj + j) + ii + i] = q4_1_hsum_float_8(acc[j][i]) + s[i];
                }
            }
        }
    }

    // Two columns per 512-bit register: lanes 0-7 hold column j's accumulator, lanes 8-15 column j + 1's.
    template <int RM, int RN>
    DBPA_AVX512 NOINLINE void gemm_avx512(int64_t m0, int64_t m, int64_t n0, int64_t n) {
        static_assert(RM <= 4 && RN % 2 == 0, "a tile's rows are the lanes of one __m128; columns go in pairs");
        const int64_t xtiles = (n - n0) / RN;
        int64_t start, end;
        share((m - m0) / RM * xtiles, start, end);
        for (int64_t job = start; job < end; ++job) {
            const int64_t ii = m0 + job / xtiles * RM;
            const int64_t jj = n0 + job % xtiles * RN;
            __m512 acc[RN / 2][RM];
            __m128 summs[RN];  // lane i: row ii + i
            for (int j = 0; j < RN; ++j) {
                summs[j] = _mm_setzero_ps();
            }
            for (int j = 0; j < RN / 2; ++j) {
                for (int i = 0; i < RM; ++i) {
                    acc[j][i] = _mm512_setzero_ps();
                }
            }
            for (int64_t l = 0; l < k; ++l) {
                __m512i qx[RM];
                __m512 dx[RM];
                alignas(16) float mxs[4] = {0, 0, 0, 0};
                for (int i = 0; i < RM; ++i) {
                    const block_q4_1 * a = A + lda * (ii + i) + l;
                    qx[i] = _mm512_broadcast_i64x4(unpack(a));
                    dx[i] = _mm512_set1_ps(half(a, 0));
                    mxs[i] = half(a, 1);
                }
                const __m128 mx = _mm_load_ps(mxs);
                for (int j = 0; j < RN / 2; ++j) {
                    const block_q8_1 * b0 = B + ldb * (jj + 2 * j) + l;
                    const block_q8_1 * b1 = b0 + ldb;
                    const __m512i qy = _mm512_inserti64x4(
                        _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *) b0->qs)),
                        _mm256_loadu_si256((const __m256i *) b1->qs), 1);
                    summs[2 * j] = _mm_fmadd_ps(mx, _mm_set1_ps(half(b0, 1)), summs[2 * j]);
                    summs[2 * j + 1] = _mm_fmadd_ps(mx, _mm_set1_ps(half(b1, 1)), summs[2 * j + 1]);
                    const __m512 dy = _mm512_insertf32x8(_mm512_set1_ps(half(b0, 0)), _mm256_set1_ps(half(b1, 0)), 1);
                    for (int i = 0; i < RM; ++i) {
                        const __m512 xy = _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(_mm512_setzero_si512(), qx[i], qy));
                        acc[j][i] = _mm512_fmadd_ps(_mm512_mul_ps(dx[i], dy), xy, acc[j][i]);
                    }
                }
            }
            for (int j = 0; j < RN / 2; ++j) {
                alignas(16) float s0[4], s1[4];
                _mm_store_ps(s0, summs[2 * j]);
                _mm_store_ps(s1, summs[2 * j + 1]);
                for (int i = 0; i < RM; ++i) {
                    C[ldc * (jj + 2 * j) + ii + i] = q4_1_hsum_float_8(_mm512_castps512_ps256(acc[j][i])) + s0[i];
                    C[ldc * (jj + 2 * j + 1) + ii + i] = q4_1_hsum_float_8(_mm512_extractf32x8_ps(acc[j][i], 1)) + s1[i];
                }
            }
        }
    }

    const block_q4_1 * const A;
    const block_q8_1 * const B;
    float * const C;
    const int64_t k, lda, ldb, ldc;
    const int ith, nth;
};

}  // namespace dbpa

// Which kernel multiplies Q4_1 weights: 0 llama.cpp's vector dot, 1 AVX2, 2 AVX-512 VNNI (read with ctypes by
// dbpa_core.samplers.engine.q4_1_kernel).
extern "C" __attribute__((visibility("default"))) int dbpa_q4_1_gemm(void);
extern "C" int dbpa_q4_1_gemm(void) {
    return dbpa::q4_1_gemm_kernel();
}

#endif
