// DBPA Explorer: tiled matrix products for llama.cpp's x86 CPU backend that keep its numbers bit for bit.
//
// Added to llama.cpp at install by scripts/llama_cpp/patch.py, which wires the
// kernels into llamafile's llamafile_sgemm (ggml-cpu/llamafile/sgemm.cpp).
// DBPA Explorer is MIT-licensed, as llama.cpp is.
//
// Why.  Stock llama.cpp multiplies Q4_1 weights (the packaged SmolLM2's
// format) by a forward step's tokens with one call of ggml_vec_dot_q4_1_q8_1
// per (weight row, token): each call unpacks the row's 4-bit blocks and
// converts its scales again, and one accumulator makes every block wait for
// the last, so a step of 16 sequences costs nearly 16 one-token steps.  Here
// a tile of weight rows x tokens is computed together: each weight block is
// unpacked once per tile and each activation block read once per tile.
//
// Numbers.  Every output element is computed with exactly the operations of
// llama.cpp's own kernel for its format, in the same order:
//   Q4_1 x Q8_1 (ggml_vec_dot_q4_1_q8_1, arch/x86/quants.c, AVX2 branch):
//     for each block b:  summs = fma(m_x, s_y, summs)
//                        acc   = fma(d_x * d_y, float(isum(x_b * y_b)), acc)   (8 lanes)
//     result = hsum_float_8(acc) + summs
//   Q8_0 x Q8_0 (llamafile's tinyBLAS_Q0_AVX, which equals ggml_vec_dot_q8_0_q8_0):
//     for each block b:  acc = fma(d_x * d_y, float(isum(x_b * y_b)), acc)   (8 lanes)
//     result = hsum_float_8(acc)
// where isum, the sum of each lane's four byte products, is exact integer
// arithmetic however it is computed (maddubs + madd, or the VNNI instruction
// dpbusd; for Q8_0's signed weights dpbusd takes them offset by 128 and the
// offset's 128 * sum(y) is subtracted back, exactly), and every float
// operation is one IEEE rounding, lane by lane.  So results equal the stock
// kernels' bit for bit, whatever the tile, the instruction set or the thread
// count (tests/test_engine.py checks it on the packaged model).
//
// Kernels.  Level 2 (where the CPU has AVX-512 VNNI, checked at run time):
// Q4_1 and Q8_0, two tokens per 512-bit register.  Level 1 (the build's own
// AVX2): Q4_1; Q8_0 stays with tinyBLAS, already a tiled kernel.  For
// comparisons, DBPA_GEMM=0 in the environment keeps llama.cpp's own kernels and
// DBPA_GEMM=avx2 keeps to level 1; dbpa_gemm() tells the level in use.
#pragma once

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__) && defined(__GNUC__)
#define DBPA_GEMM 1
#include <immintrin.h>
#include <stdlib.h>
#include <string.h>

namespace dbpa {

#define DBPA_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")))

// 0: llama.cpp's own kernels (DBPA_GEMM=0), 1: AVX2 (Q4_1), 2: AVX-512 VNNI (Q4_1 and Q8_0).
inline int gemm_level() {
    static const int level = [] {
        const char * value = getenv("DBPA_GEMM");
        if (value != nullptr && strcmp(value, "0") == 0) {
            return 0;
        }
        __builtin_cpu_init();
        const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                            __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
                            __builtin_cpu_supports("avx512vnni");
        return (value != nullptr && strcmp(value, "avx2") == 0) || !avx512 ? 1 : 2;
    }();
    return level;
}

// hsum_float_8 of arch/x86/quants.c (and tinyBLAS's hsum of a __m256), operation for operation.
static inline float hsum_float_8(const __m256 x) {
    __m128 res = _mm256_extractf128_ps(x, 1);
    res = _mm_add_ps(res, _mm256_castps256_ps128(x));
    res = _mm_add_ps(res, _mm_movehl_ps(res, res));
    res = _mm_add_ss(res, _mm_movehdup_ps(res));
    return _mm_cvtss_f32(res);
}

static inline float half(const void * block, int index) {
    ggml_fp16_t h;
    memcpy(&h, (const char *) block + index * sizeof(ggml_fp16_t), sizeof h);
    return GGML_CPU_FP16_TO_FP32(h);
}

// The two formats: the weights as unsigned bytes for u8 x s8 dot products, and what else a block holds.
struct Q4_1_Format {
    using TA = block_q4_1;
    using TB = block_q8_1;
    static constexpr bool has_min = true;   // x = d * q + m: the m * s term, summed apart (summs)
    static constexpr bool offset = false;   // q in [0, 15]: unsigned as it is
    // bytes_from_nibbles_32 of arch/x86/quants.c.
    static inline __m256i weights(const TA * block) {
        const __m128i packed = _mm_loadu_si128((const __m128i *) block->qs);
        return _mm256_and_si256(_mm256_set1_epi8(0xF), _mm256_insertf128_si256(
            _mm256_castsi128_si256(packed), _mm_srli_epi16(packed, 4), 1));
    }
};

struct Q8_0_Format {
    using TA = block_q8_0;
    using TB = block_q8_0;
    static constexpr bool has_min = false;
    static constexpr bool offset = true;    // q in [-127, 127]: q + 128 as unsigned, 128 * sum(y) taken back
    static inline __m256i weights(const TA * block) {
        return _mm256_xor_si256(_mm256_loadu_si256((const __m256i *) block->qs), _mm256_set1_epi8((char) 0x80));
    }
};

template <class F>
class Gemm {
  public:
    using TA = typename F::TA;
    using TB = typename F::TB;

    // C[j * ldc + i] = dot(row i of A, row j of B); A: m rows of k blocks (stride lda blocks), B: n rows of k
    // blocks (stride ldb blocks).  Thread ith of nth computes its share of the tiles.
    Gemm(int64_t k, const TA * A, int64_t lda, const TB * B, int64_t ldb, float * C, int64_t ldc, int ith, int nth)
        : A(A), B(B), C(C), k(k), lda(lda), ldb(ldb), ldc(ldc), ith(ith), nth(nth) {}

    void matmul(int64_t m, int64_t n) {
        if constexpr (F::has_min) {  // Q4_1: AVX2 where AVX-512 VNNI is missing or DBPA_GEMM=avx2
            if (gemm_level() != 2) {
                mnpack_avx2(0, m, 0, n);
                return;
            }
        }
        mnpack_avx512(0, m, 0, n);
    }

  private:
    // This thread's tiles [start, end) of ``tiles``.
    void share(int64_t tiles, int64_t & start, int64_t & end) const {
        const int64_t duty = (tiles + nth - 1) / nth;
        start = duty * ith;
        end = MIN(start + duty, tiles);
    }

    // The tiles of the m0..m x n0..n corner whose shape is mc x nc, then the rest (as llamafile's mnpack).
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
        mnpack_avx2(m0 + (m - m0) / mc * mc, m, n0, n0 + (n - n0) / nc * nc);
        mnpack_avx2(m0, m, n0 + (n - n0) / nc * nc, n);
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
            case 0x41: mc = 4; nc = 1; column_avx512<4>(m0, m, n0, n); break;
            case 0x31: mc = 3; nc = 1; column_avx512<3>(m0, m, n0, n); break;
            case 0x21: mc = 2; nc = 1; column_avx512<2>(m0, m, n0, n); break;
            case 0x11: mc = 1; nc = 1; column_avx512<1>(m0, m, n0, n); break;
            default: return;
        }
        mnpack_avx512(m0 + (m - m0) / mc * mc, m, n0, n0 + (n - n0) / nc * nc);
        mnpack_avx512(m0, m, n0 + (n - n0) / nc * nc, n);
    }

    // AVX2 (Q4_1): RM rows x RN columns, one 256-bit accumulator per element.
    template <int RM, int RN>
    NOINLINE void gemm_avx2(int64_t m0, int64_t m, int64_t n0, int64_t n) {
        static_assert(F::has_min && RM <= 4, "AVX2: Q4_1 only (tinyBLAS keeps Q8_0); rows: the lanes of a __m128");
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
                    const TA * a = A + lda * (ii + i) + l;
                    qx[i] = F::weights(a);
                    dxs[i] = half(a, 0);
                    mxs[i] = half(a, 1);
                }
                const __m128 dx = _mm_load_ps(dxs);
                const __m128 mx = _mm_load_ps(mxs);
                for (int j = 0; j < RN; ++j) {
                    const TB * b = B + ldb * (jj + j) + l;
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
                    C[ldc * (jj + j) + ii + i] = hsum_float_8(acc[j][i]) + s[i];
                }
            }
        }
    }

    // AVX-512 VNNI: RM rows x RN columns (RN even); lanes 0-7 of a register hold column j's accumulator,
    // lanes 8-15 column j + 1's.
    template <int RM, int RN>
    DBPA_AVX512 NOINLINE void gemm_avx512(int64_t m0, int64_t m, int64_t n0, int64_t n) {
        static_assert(RM <= 4 && RN % 2 == 0, "a tile's rows are the lanes of one __m128; columns go in pairs");
        const int64_t xtiles = (n - n0) / RN;
        int64_t start, end;
        share((m - m0) / RM * xtiles, start, end);
        [[maybe_unused]] const __m512i ones = _mm512_set1_epi8(1);
        for (int64_t job = start; job < end; ++job) {
            const int64_t ii = m0 + job / xtiles * RM;
            const int64_t jj = n0 + job % xtiles * RN;
            __m512 acc[RN / 2][RM];
            __m128 summs[RN];  // Q4_1: lane i for row ii + i
            for (int j = 0; j < RN; ++j) {
                summs[j] = _mm_setzero_ps();
            }
            for (int j = 0; j < RN / 2; ++j) {
                for (int i = 0; i < RM; ++i) {
                    acc[j][i] = _mm512_setzero_ps();
                }
            }
            for (int64_t l = 0; l < k; ++l) {
                __m512i ux[RM];
                __m512 dx[RM];
                alignas(16) float mxs[4] = {0, 0, 0, 0};
                for (int i = 0; i < RM; ++i) {
                    const TA * a = A + lda * (ii + i) + l;
                    ux[i] = _mm512_broadcast_i64x4(F::weights(a));
                    dx[i] = _mm512_set1_ps(half(a, 0));
                    if constexpr (F::has_min) {
                        mxs[i] = half(a, 1);
                    }
                }
                const __m128 mx = _mm_load_ps(mxs);
                for (int j = 0; j < RN / 2; ++j) {
                    const TB * b0 = B + ldb * (jj + 2 * j) + l;
                    const TB * b1 = b0 + ldb;
                    const __m512i qy = _mm512_inserti64x4(
                        _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *) b0->qs)),
                        _mm256_loadu_si256((const __m256i *) b1->qs), 1);
                    __m512i base = _mm512_setzero_si512();
                    if constexpr (F::offset) {  // -128 * (each lane's sum of its four y bytes)
                        base = _mm512_sub_epi32(base, _mm512_slli_epi32(_mm512_dpbusd_epi32(base, ones, qy), 7));
                    }
                    if constexpr (F::has_min) {
                        summs[2 * j] = _mm_fmadd_ps(mx, _mm_set1_ps(half(b0, 1)), summs[2 * j]);
                        summs[2 * j + 1] = _mm_fmadd_ps(mx, _mm_set1_ps(half(b1, 1)), summs[2 * j + 1]);
                    }
                    const __m512 dy = _mm512_insertf32x8(_mm512_set1_ps(half(b0, 0)), _mm256_set1_ps(half(b1, 0)), 1);
                    for (int i = 0; i < RM; ++i) {
                        const __m512 xy = _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(base, ux[i], qy));
                        acc[j][i] = _mm512_fmadd_ps(_mm512_mul_ps(dx[i], dy), xy, acc[j][i]);
                    }
                }
            }
            for (int j = 0; j < RN / 2; ++j) {
                alignas(16) float s0[4], s1[4];
                _mm_store_ps(s0, summs[2 * j]);
                _mm_store_ps(s1, summs[2 * j + 1]);
                for (int i = 0; i < RM; ++i) {
                    const float low = hsum_float_8(_mm512_castps512_ps256(acc[j][i]));
                    const float high = hsum_float_8(_mm512_extractf32x8_ps(acc[j][i], 1));
                    if constexpr (F::has_min) {
                        C[ldc * (jj + 2 * j) + ii + i] = low + s0[i];
                        C[ldc * (jj + 2 * j + 1) + ii + i] = high + s1[i];
                    } else {
                        C[ldc * (jj + 2 * j) + ii + i] = low;
                        C[ldc * (jj + 2 * j + 1) + ii + i] = high;
                    }
                }
            }
        }
    }

    // AVX-512 VNNI, one column left: RM rows, one 256-bit accumulator per row.
    template <int RM>
    DBPA_AVX512 NOINLINE void column_avx512(int64_t m0, int64_t m, int64_t n0, int64_t n) {
        static_assert(RM <= 4, "a tile's rows are the lanes of one __m128");
        const int64_t xtiles = n - n0;
        int64_t start, end;
        share((m - m0) / RM * xtiles, start, end);
        [[maybe_unused]] const __m256i ones = _mm256_set1_epi8(1);
        for (int64_t job = start; job < end; ++job) {
            const int64_t ii = m0 + job / xtiles * RM;
            const int64_t jj = n0 + job % xtiles;
            __m256 acc[RM];
            __m128 summs = _mm_setzero_ps();  // Q4_1: lane i for row ii + i
            for (int i = 0; i < RM; ++i) {
                acc[i] = _mm256_setzero_ps();
            }
            for (int64_t l = 0; l < k; ++l) {
                const TB * b = B + ldb * jj + l;
                const __m256i qy = _mm256_loadu_si256((const __m256i *) b->qs);
                __m256i base = _mm256_setzero_si256();
                if constexpr (F::offset) {
                    base = _mm256_sub_epi32(base, _mm256_slli_epi32(_mm256_dpbusd_epi32(base, ones, qy), 7));
                }
                const float dy = half(b, 0);
                alignas(16) float mxs[4] = {0, 0, 0, 0};
                for (int i = 0; i < RM; ++i) {
                    const TA * a = A + lda * (ii + i) + l;
                    if constexpr (F::has_min) {
                        mxs[i] = half(a, 1);
                    }
                    const __m256 xy = _mm256_cvtepi32_ps(_mm256_dpbusd_epi32(base, F::weights(a), qy));
                    acc[i] = _mm256_fmadd_ps(_mm256_set1_ps(half(a, 0) * dy), xy, acc[i]);
                }
                if constexpr (F::has_min) {
                    summs = _mm_fmadd_ps(_mm_load_ps(mxs), _mm_set1_ps(half(b, 1)), summs);
                }
            }
            alignas(16) float s[4];
            _mm_store_ps(s, summs);
            for (int i = 0; i < RM; ++i) {
                if constexpr (F::has_min) {
                    C[ldc * jj + ii + i] = hsum_float_8(acc[i]) + s[i];
                } else {
                    C[ldc * jj + ii + i] = hsum_float_8(acc[i]);
                }
            }
        }
    }

    const TA * const A;
    const TB * const B;
    float * const C;
    const int64_t k, lda, ldb, ldc;
    const int ith, nth;
};

// llamafile_sgemm's cases: true when the product was computed here.
inline bool q4_1_gemm(int64_t m, int64_t n, int64_t k, const void * A, int64_t lda, const void * B, int64_t ldb,
                      void * C, int64_t ldc, int Btype, int ith, int nth) {
    if (Btype != GGML_TYPE_Q8_1 || gemm_level() == 0) {
        return false;
    }
    Gemm<Q4_1_Format>{k, (const block_q4_1 *) A, lda, (const block_q8_1 *) B, ldb, (float *) C, ldc, ith, nth}
        .matmul(m, n);
    return true;
}

inline bool q8_0_gemm(int64_t m, int64_t n, int64_t k, const void * A, int64_t lda, const void * B, int64_t ldb,
                      void * C, int64_t ldc, int Btype, int ith, int nth) {
    if (Btype != GGML_TYPE_Q8_0 || gemm_level() != 2) {
        return false;  // level 1: tinyBLAS, already tiled
    }
    Gemm<Q8_0_Format>{k, (const block_q8_0 *) A, lda, (const block_q8_0 *) B, ldb, (float *) C, ldc, ith, nth}
        .matmul(m, n);
    return true;
}

}  // namespace dbpa

// The level in use: 0 llama.cpp's own kernels, 1 AVX2 (Q4_1), 2 AVX-512 VNNI (Q4_1 and Q8_0); read with ctypes
// by dbpa_core.samplers.engine.gemm_kernel.
extern "C" __attribute__((visibility("default"))) int dbpa_gemm(void);
extern "C" int dbpa_gemm(void) {
    return dbpa::gemm_level();
}

#endif
