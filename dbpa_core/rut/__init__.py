"""The rank-based uniformity test (RUT): is this API serving the claimed model?

=================  ==========================================================
uniformity         the test: randomized ranks, Cramér–von Mises / KS, power
scoring            the reference scorer: a response's tokens under the
                   claimed model (log-rank, log-likelihood, entropy, …)
collect            drawing and scoring reference and target responses
data               the recorded scores shipped in ``assets/``
=================  ==========================================================
"""
