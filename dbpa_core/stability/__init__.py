"""The optimal-transport stability criterion (Liu, Li, Cui & Blanchet): how large a shift does it take to break a model?

=================  ==========================================================
criterion          R(β, r) by its one-dimensional dual; curves; most
                   sensitive distribution; eq. (1)'s transport cost (+inf
                   where the judge rejects a rewrite)
tasks              the two tasks of §3, safe to ship: QA with known answers,
                   secret keeping (the jailbreak analogue); their items
grader             the 0/1 losses: a QA grader that reads numbers and
                   aliases; a leak detector for a secret and its encodings
judge              does a rewrite keep the meaning? embedding similarity
                   (calibrated) or an LLM through any OpenAI-compatible API
search             sample perturbation (§2.4): an assistant LLM proposes
                   rewrites, the judge filters, the target answers, iterate
runs               recorded searches → loss/cost matrices, Table 1's figures
rewrites, data     the first version's rule-based rewrites and their
                   recorded answers (the Stability page until it moves to runs)
=================  ==========================================================
"""
