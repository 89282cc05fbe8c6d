"""The DBPA test itself, steps 2–5 of the method (Rauba, Wei & van der Schaar, ICML 2025, §3).

=================  ==========================================================
module             step
=================  ==========================================================
similarity         2. s(y, y′): cosine, −L1, −L2, BLEU, ROUGE-L; P0 and P1
discrepancy        3. ω(P0, P1): JSD (default), JS distance, W1, KS, energy,
                   MMD, centroid
permutation        4. Algorithm 1: the permutation null and p-value
                   (``_kernels``: its compiled inner loops)
resolution         4. the p-value's floor (1/(B + 1)) and the warning when
                   it is above the level; no compiled kernel imported
decision           4. the decision rule (fixed-k or sequential)
corrections        5. family-wise error: Bonferroni, Holm, Benjamini–Hochberg
power              5. §3.2's sample-size rule (a z-test's) and simulated power
planning           5. sample-size planning from a pilot, by simulating DBPA
roc                TPR/FPR over α for controls vs targets (Figs 1–2)
cvm                the RUT's Cramér–von Mises null law (critical values)
explain            what changed: themes tested by re-splitting the labels (BH),
                   representative outputs (MMD witness)
=================  ==========================================================

Nothing here samples, embeds, stores or draws: inputs are arrays, outputs are
frozen result dataclasses.
"""
