"""The MiniLM embedder on the CPU and on CUDA: throughput, and how far the GPU's vectors are from the CPU's.

    python bench/bench_embedder_device.py [--texts 2000] [--batch-size 64]

Embeds the same texts (the paper's persona responses, numbered copies up to
``--texts``) on the CPU and, where PyTorch sees one, on CUDA (and MPS), and
prints texts per second for each and the largest absolute difference of any
vector component from the CPU's, with the largest change of a cosine
similarity between two outputs (what the DBPA statistics read).  Without a
GPU it says so and measures the CPU alone: there ``device="auto"`` *is* the
CPU, the same call, the same numbers.
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def texts_to_embed(n: int) -> list[str]:
    """``n`` distinct texts: the paper's persona responses (numbered once they repeat)."""
    from dbpa_core.paper.loaders import load_personas

    pool = [text for texts in load_personas().values() for text in texts]
    return [pool[i % len(pool)] + (f" ({i // len(pool)})" if i >= len(pool) else "") for i in range(n)]


def measure(device: str, texts: list[str], batch_size: int) -> tuple[np.ndarray, float]:
    from dbpa_core.embedders.minilm import MiniLMEmbedder

    embedder = MiniLMEmbedder(batch_size=batch_size, device=device)
    embedder.embed(texts[:batch_size])  # load and warm up
    start = time.perf_counter()
    vectors = embedder.embed(texts)
    return vectors, len(texts) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=2000)
    parser.add_argument("--batch-size", type=int, default=64)
    args = parser.parse_args()
    import torch

    from dbpa_core.embedders.minilm import resolve_device

    texts = texts_to_embed(args.texts)
    print(f"torch {torch.__version__}; device='auto' resolves to {resolve_device('auto')!r}; "
          f"{len(texts)} texts, batch {args.batch_size}")
    cpu, speed = measure("cpu", texts, args.batch_size)
    print(f"cpu   {speed:9.1f} texts/s")
    others = [name for name, present in (("cuda", torch.cuda.is_available()),
                                         ("mps", bool(getattr(torch.backends, "mps", None)
                                                      and torch.backends.mps.is_available()))) if present]
    if "cuda" not in others:
        print("cuda  absent: PyTorch sees no CUDA device here (device='auto' runs on the CPU, the same numbers).")
    for device in others:
        vectors, speed = measure(device, texts, args.batch_size)
        delta = float(np.max(np.abs(vectors - cpu)))
        cosine = float(np.max(np.abs(vectors @ vectors[:200].T - cpu @ cpu[:200].T)))
        print(f"{device:5} {speed:9.1f} texts/s; max |Δ| of a component vs the CPU {delta:.2e}, "
              f"of a cosine similarity {cosine:.2e}")


if __name__ == "__main__":
    main()
