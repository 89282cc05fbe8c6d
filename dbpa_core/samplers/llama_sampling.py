"""The sampler chain a draw of :class:`~dbpa_core.samplers.engine.LlamaEngine` goes through."""

from __future__ import annotations

#: llama-cpp-python's default sampler chain for a chat completion (top-k, typical, top-p, min-p, temperature).
TOP_K, TYPICAL_P, TOP_P, MIN_P = 40, 1.0, 0.95, 0.05


def sampler_chain(api, seed: int, temperature: float):
    """llama-cpp-python's sampler chain for a chat completion at ``temperature`` with ``seed`` (greedy at 0):
    the chain a draw goes through, so that it equals ``Llama.create_chat_completion``'s with that seed."""
    chain = api.llama_sampler_chain_init(api.llama_sampler_chain_default_params())
    if temperature == 0:
        api.llama_sampler_chain_add(chain, api.llama_sampler_init_greedy())
        return chain
    api.llama_sampler_chain_add(chain, api.llama_sampler_init_top_k(TOP_K))
    api.llama_sampler_chain_add(chain, api.llama_sampler_init_typical(TYPICAL_P, 1))
    api.llama_sampler_chain_add(chain, api.llama_sampler_init_top_p(TOP_P, 1))
    api.llama_sampler_chain_add(chain, api.llama_sampler_init_min_p(MIN_P, 1))
    api.llama_sampler_chain_add(chain, api.llama_sampler_init_temp(temperature))
    api.llama_sampler_chain_add(chain, api.llama_sampler_init_dist(int(seed) & 0xFFFFFFFF))
    return chain
