"""Data the audits run on: shipped assets, scenarios, the sample store, user uploads.

=================  ==========================================================
assets             where ``assets/`` is; YAML reading
scenarios          prompts, typed perturbations, simulated ground truth
store              the SQLite sample and embedding store (resume, reuse)
uploads            user files: samples (CSV/JSONL) and RUT target responses
eval_logs          promptfoo, lm-eval, Inspect AI and JSONL logs -> per-prompt arms
=================  ==========================================================
"""
