"""Compiled inner loops of the permutation engine (Algorithm 1 of Rauba, Wei & van der Schaar, ICML 2025).

Each resample is one row of ``perms`` (unsigned integers): the first ``k0``
entries index the pseudo-original arm, the rest the pseudo-perturbed arm.  The kernels only
*re-index* matrices computed once on the pooled outputs (paper, Algorithm 1:
never re-embed, never recompute similarities per permutation).

Every resample is reduced by one thread in a fixed order, so the result for a
row depends only on that row: never on the batch size or the thread count.
Each kernel is compiled twice, serial and parallel: for small batches the
cost of waking the thread pool (milliseconds when the other core is busy)
exceeds the work, so :func:`pick` chooses by the amount of work.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange


def pair_histograms(perms, k0, codes, n_codes):  # pragma: no cover - compiled
    """Histograms of P0 (pairs i<j within arm 0) and P1 (pairs across arms).

    ``codes[i, j]`` is the bin (or the rank of the unique value) of the
    similarity of outputs i and j.
    """
    n_resamples, n = perms.shape
    h0 = np.zeros((n_resamples, n_codes), dtype=np.int64)
    h1 = np.zeros((n_resamples, n_codes), dtype=np.int64)
    for b in prange(n_resamples):
        order = perms[b]
        for ii in range(k0):
            row = codes[order[ii]]
            for jj in range(ii + 1, k0):
                h0[b, row[order[jj]]] += 1
            for jj in range(k0, n):
                h1[b, row[order[jj]]] += 1
    return h0, h1


def pair_histograms_by_rows(perms, k0, codes, row_counts):  # pragma: no cover - compiled
    """As :func:`pair_histograms`, for few cells, gathering only P0.

    ``row_counts[i, c]`` counts the outputs j ≠ i whose similarity to i falls
    in cell c.  Summed over the arm-0 rows it counts every within pair twice
    and every across pair once, so h1 = Σ_{i∈A} row_counts[i] − 2 h0: the
    k0·k1 across-arm gathers become k0·n_codes additions.

    With few cells, consecutive increments often hit the same cell and each
    waits for the previous store; four interleaved partial histograms break
    that dependency chain (about 2× faster on this workload).
    """
    n_resamples, n = perms.shape
    n_codes = row_counts.shape[1]
    h0 = np.zeros((n_resamples, n_codes), dtype=np.int64)
    h1 = np.zeros((n_resamples, n_codes), dtype=np.int64)
    for b in prange(n_resamples):
        order = perms[b]
        partial = np.zeros((4, n_codes), dtype=np.int64)
        row_total = np.zeros(n_codes, dtype=np.int64)
        for ii in range(k0):
            i = order[ii]
            row = codes[i]
            jj = ii + 1
            while jj + 3 < k0:
                partial[0, row[order[jj]]] += 1
                partial[1, row[order[jj + 1]]] += 1
                partial[2, row[order[jj + 2]]] += 1
                partial[3, row[order[jj + 3]]] += 1
                jj += 4
            while jj < k0:
                partial[0, row[order[jj]]] += 1
                jj += 1
            for c in range(n_codes):
                row_total[c] += row_counts[i, c]
        for c in range(n_codes):
            within = partial[0, c] + partial[1, c] + partial[2, c] + partial[3, c]
            h0[b, c] = within
            h1[b, c] = row_total[c] - 2 * within
    return h0, h1


def block_sums(perms, k0, matrix, row_sums, total):  # pragma: no cover - compiled
    """Sums of ``matrix`` over the blocks (A, A), (A, B) and (B, B) of each split.

    Only the k0² entries of (A, A) are gathered; the other two blocks follow
    from the row sums: S_AB = Σ_{i∈A} r_i − S_AA and S_BB = total − S_AA − 2 S_AB.
    """
    n_resamples, n = perms.shape
    out = np.empty((n_resamples, 3), dtype=np.float64)
    for b in prange(n_resamples):
        order = perms[b]
        s_aa = 0.0
        s_a = 0.0
        for ii in range(k0):
            i = order[ii]
            s_a += row_sums[i]
            row = matrix[i]
            for jj in range(k0):
                s_aa += row[order[jj]]
        s_ab = s_a - s_aa
        out[b, 0] = s_aa
        out[b, 1] = s_ab
        out[b, 2] = total - s_aa - 2.0 * s_ab
    return out


# Resamples per buffer in `cdf_gaps`: each chunk reuses one pair of histograms,
# and a fixed count keeps the work split independent of the thread count.
_CDF_CHUNKS = 64


def cdf_gaps(perms, k0, codes, widths, integral, row_counts):  # pragma: no cover - compiled
    """ω of the empirical CDFs of P0 and P1 on an exact support, fused.

    For each resample, fills the histograms of P0 and P1 over the cells
    (the sorted unique similarities), then sweeps them once: with
    ``integral`` it returns Σ_c |F0 − F1|(c)·widths[c] (Wasserstein-1),
    otherwise max_c |F0 − F1|(c) (Kolmogorov–Smirnov).  The sweep also
    clears the cells, so a chunk of resamples reuses one buffer instead of
    materialising (batch × cells) histograms.

    ``row_counts`` as in :func:`pair_histograms_by_rows` replaces the k0·k1
    across-arm gathers by k0·cells additions when there are fewer cells than
    perturbed outputs; pass an array with no rows to gather directly.
    """
    n_resamples, n = perms.shape
    n_codes = widths.shape[0] + 1
    n_within = k0 * (k0 - 1) // 2
    n_across = k0 * (n - k0)
    by_rows = row_counts.shape[0] > 0
    # F0 − F1 at cell c is Σ_{c' ≤ c} (h0·n_across − h1·n_within) / (n_within·n_across):
    # one array of signed integer weights holds both histograms, the sweep is
    # a running sum without divisions, and the KS maximum is exact.  With row
    # counts, h1 = Σ_{i∈A} row_counts[i] − 2·h0 folds into the within weight.
    within_weight = n_across + 2 * n_within if by_rows else n_across
    out = np.empty(n_resamples, dtype=np.float64)
    n_chunks = min(n_resamples, _CDF_CHUNKS)
    for chunk in prange(n_chunks):
        weighted = np.zeros(n_codes, dtype=np.int64)
        for b in range(chunk * n_resamples // n_chunks, (chunk + 1) * n_resamples // n_chunks):
            order = perms[b]
            for ii in range(k0):
                i = order[ii]
                row = codes[i]
                for jj in range(ii + 1, k0):
                    weighted[row[order[jj]]] += within_weight
                if by_rows:
                    for c in range(n_codes):
                        weighted[c] -= row_counts[i, c] * n_within
                else:
                    for jj in range(k0, n):
                        weighted[row[order[jj]]] -= n_within
            running = 0
            widest = 0
            total = 0.0
            for c in range(n_codes):
                running += weighted[c]
                weighted[c] = 0
                gap = abs(running)
                if integral:
                    if c < n_codes - 1:
                        total += gap * widths[c]
                elif gap > widest:
                    widest = gap
            out[b] = (total if integral else widest) / (n_within * n_across)
    return out


def shuffled_prefixes(uniforms, n):  # pragma: no cover - compiled
    """Rows of range(n) whose first m entries are a uniformly random m-subset.

    Partial Fisher–Yates: step i swaps position i with a position drawn from
    [i, n) by ``uniforms[b, i]``, so row b depends only on row b of
    ``uniforms`` (shape (size, m)), whatever the batch.  ⌊u·(n − i)⌋ with a
    53-bit uniform u is off the exact discrete uniform by less than n / 2⁵³
    per draw (total variation), far below any Monte Carlo error.
    """
    size, m = uniforms.shape
    out = np.empty((size, n), dtype=np.uint32)
    for b in range(size):
        row = out[b]
        for i in range(n):
            row[i] = i
        for i in range(m):
            j = i + np.uint32(uniforms[b, i] * (n - i))
            if j >= n:  # u·(n − i) can round up to n − i when u = 1 − 2⁻⁵³
                j = n - 1
            held = row[i]
            row[i] = row[j]
            row[j] = held
    return out


# Below this many inner-loop steps per call, the serial kernel is faster.
PARALLEL_MIN_WORK = 2_000_000

_KERNELS = (pair_histograms, pair_histograms_by_rows, cdf_gaps, block_sums)
_SERIAL = {f.__name__: njit(cache=True, nogil=True)(f) for f in _KERNELS}
_PARALLEL = {f.__name__: njit(parallel=True, cache=True, nogil=True)(f) for f in _KERNELS}


shuffled_prefixes = njit(cache=True, nogil=True)(shuffled_prefixes)


def pick(name: str, work: int):
    """The compiled kernel ``name``, parallel when ``work`` (inner steps) is large."""
    return (_PARALLEL if work >= PARALLEL_MIN_WORK else _SERIAL)[name]
