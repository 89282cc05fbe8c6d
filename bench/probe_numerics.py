"""How far apart llama.cpp's own ways of computing the same logits are, for the packaged SmolLM2 (Q4_1).

    python bench/probe_numerics.py [--threads 2]

Not a timing: a measurement that explains why scoring a whole completion in
one forward step (the path before batching, ``reference_token_statistics``)
cannot equal the per-token path "within float tolerance" (issue 24), and so
why the scorer reads a completion one token per step, as generation does
(then it equals the per-token path bit for bit).  One sentence of 20 tokens is evaluated through
``llama_cpp.Llama`` (``logits_all=True``) in several ways, and the logits of
every position are compared with those of one reference way: the whole
sentence in one forward step with an F32 KV cache.  Printed per way: the
largest and the mean |Δ logit| over the vocabulary and the 20 positions, and
whether it equals the default whole-sentence step bit for bit.

- "whole, F16 KV": the default whole-sentence step (the path before
  batching; a prompt's evaluation);
- "token by token, F16 KV": one token per step (what generation, the scorer
  and the per-token path do);
- "token by token, F32 KV": the same with an F32 KV cache;
- "whole, n_ubatch = 1": the whole sentence in one call, which llama.cpp
  splits into one-token micro-batches;
- "whole / token by token, flash attention": both with ``flash_attn``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from dbpa_core.samplers.local import smollm2_path  # noqa: E402

TEXT = b"The quick brown fox jumps over the lazy dog and then runs into the forest to find some food."


def logits(*, one_at_a_time: bool, threads: int, **settings) -> np.ndarray:
    from llama_cpp import Llama

    llama = Llama(model_path=str(smollm2_path()), n_ctx=512, logits_all=True, verbose=False, seed=0,
                  n_threads=threads, n_threads_batch=threads, **settings)
    try:
        tokens = llama.tokenize(TEXT, add_bos=False)
        if one_at_a_time:
            for token in tokens:
                llama.eval([token])
        else:
            llama.eval(tokens)
        return np.array(llama.scores[: len(tokens)], dtype=np.float64)
    finally:
        llama.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=2)
    threads = parser.parse_args().threads
    f32 = {"type_k": 0, "type_v": 0}  # GGML_TYPE_F32
    reference = logits(one_at_a_time=False, threads=threads, **f32)
    default = logits(one_at_a_time=False, threads=threads)
    ways = {
        "whole, F16 KV (scoring)": default,
        "token by token, F16 KV (generation, per-token path)": logits(one_at_a_time=True, threads=threads),
        "token by token, F32 KV": logits(one_at_a_time=True, threads=threads, **f32),
        "whole, n_ubatch = 1": logits(one_at_a_time=False, threads=threads, n_ubatch=1),
        "whole, flash attention": logits(one_at_a_time=False, threads=threads, flash_attn=True),
        "token by token, flash attention": logits(one_at_a_time=True, threads=threads, flash_attn=True),
    }
    print(f"SmolLM2-135M Q4_1, {len(reference)} positions, {threads} threads; "
          "reference: the whole sentence in one step with an F32 KV cache")
    print(f"{'way':<54}{'max |Δ|':>9}{'mean |Δ|':>10}  same as 'whole, F16 KV'")
    for name, values in ways.items():
        gap = np.abs(values - reference)
        print(f"{name:<54}{gap.max():>9.3f}{gap.mean():>10.4f}  {'yes' if np.array_equal(values, default) else 'no'}")
    one = ways["token by token, F16 KV (generation, per-token path)"]
    print(f"token by token vs whole (both F16 KV): max |Δ| {np.abs(one - default).max():.3f}, first position "
          f"equal: {np.array_equal(one[0], default[0])}")
    flash = ways["whole, flash attention"], ways["token by token, flash attention"]
    print(f"flash attention, token by token vs whole: equal bit for bit: {np.array_equal(*flash)}")


if __name__ == "__main__":
    main()
