"""The rank-based uniformity test (RUT): is this API serving the claimed model?

=================  ==========================================================
uniformity         the test: randomized ranks, Cramér–von Mises / KS, and a
                   lower confidence bound on the share of substituted answers
mmd                the baseline: Gao et al.'s Hamming-kernel MMD on tokens
                   or, as the paper describes it, characters
scoring            the reference scorer: a response's tokens under the
                   claimed model (log-rank, log-likelihood, entropy, …)
collect            drawing and scoring reference and target responses (live)
data               the first recorded audit (16 prompts) shipped in ``assets/``
experiment         the paper's §5 protocol, substitutes and prompts; recording
pools              the recorded answer pools of the paper's experiments
power              power vs the substituted share q (RUT, MMD, KS), score
                   selection (Fig 2), one audit drawn from the pools
=================  ==========================================================
"""
