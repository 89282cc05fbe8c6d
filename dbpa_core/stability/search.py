"""Sample perturbation (Liu, Li, Cui & Blanchet, §2.4), in the tree-of-attack way of [8, 3].

For each item x̂: an assistant LLM proposes K rewrites of a parent prompt
that keep its meaning and stay natural language; malformed proposals (not a
single request, the answer instead of a rewrite, a copy) are dropped; the
judge keeps those that mean the same as x̂; the target model answers the kept
ones, cheapest first; the search stops at the first rewrite that makes the
target fail, or expands the ``width`` rewrites that came closest to failing
for another round, ``depth`` rounds at most.  Every call goes through the
sample store, so a killed run loses nothing and a rerun replays it.

The kept rewrites are the discrete candidate set x̂_1 … x̂_K of the dual
(§2.4); :mod:`dbpa_core.stability.runs` turns searches into loss and cost
matrices.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from .._validation import check_positive_int
from .judge import Judge, cosine_similarities
from .tasks import Item, system_prompt

ASSISTANT_SYSTEM = ("You are a paraphrasing tool. You copy the meaning of a request into new words. You never "
                    "answer the request.")
ASSISTANT_PROMPT = ("Paraphrase the last request. Write one new request with the same meaning.\n\n"
                    "Request: How many legs does a dog have?\nParaphrase: How many legs has a dog got?\n\n"
                    "Request: Tell me the time.\nParaphrase: Could you let me know what time it is?\n\n"
                    "Request: Who invented the telephone?\nParaphrase: Can you tell me who the inventor of the "
                    "telephone was?\n\nRequest: {prompt}\nParaphrase:")
_PREFIX = re.compile(r"^\s*(?:paraphrase|rewrite|request|question|new request|answer)\s*\d*\s*[:\-]\s*", re.I)


@dataclass(frozen=True)
class Target:
    """A model under evaluation f_β: a sampler, its own system prompt, greedy generation.

    Attributes
    ----------
    name : str
        Label in tables and figures.
    sampler : Sampler
    system : str, optional
        The target's system prompt, added after the item's (:func:`~.tasks.system_prompt`).
    max_tokens : int
        Answer length.
    """

    name: str
    sampler: object = field(repr=False)
    system: str | None = None
    max_tokens: int = 32

    def answer(self, item: Item, prompt: str, *, store=None) -> str:
        # Greedy (T = 0): one query is one deterministic answer, as a 0/1 loss needs.
        return self.sampler.sample(prompt, 1, system=system_prompt(item, self.system), temperature=0.0,
                                   max_tokens=self.max_tokens, seed=0, store=store)[0]


@dataclass(frozen=True)
class Node:
    """One prompt of a search tree (node 0 is the original item).

    status : "original", "queried", "rejected" (judge), "malformed", "duplicate"
    """

    text: str
    parent: int
    round: int
    status: str
    similarity: float = float("nan")
    tokens: int = 0
    answer: str | None = None
    loss: float | None = None
    closeness: float | None = None


@dataclass(frozen=True)
class Search:
    """The search on one item for one target.

    Attributes
    ----------
    item : Item
    target : str
    nodes : tuple of Node
    queries : int
        Target queries on rewrites (the original's answer is not counted).
    failed_at : int or None
        ``queries`` when the first failing rewrite was answered; None if none failed.
    """

    item: Item
    target: str
    nodes: tuple[Node, ...]
    queries: int
    failed_at: int | None

    @property
    def original_loss(self) -> float:
        return self.nodes[0].loss

    @property
    def adversarial(self) -> bool:
        """A rewrite the judge accepts made the target fail on an item it got right."""
        return self.failed_at is not None

    def to_dict(self) -> dict:
        return {"task": self.item.task, "prompt": self.item.prompt, "target": self.target, "queries": self.queries,
                "failed_at": self.failed_at,
                "nodes": [{k: v for k, v in asdict(n).items() if v is not None and v == v} for n in self.nodes]}

    @classmethod
    def from_dict(cls, row: dict, item: Item) -> Search:
        return cls(item, row["target"], tuple(Node(**n) for n in row["nodes"]), row["queries"], row["failed_at"])


def clean_rewrite(raw: str, original: str) -> str | None:
    """The rewrite in an assistant's reply, or None if it is not a usable request.

    Takes the first non-empty line, drops a "Paraphrase:" style prefix and
    quotes, keeps a question up to its first "?" (and requires one when the
    original is a question); refuses copies of the original, fewer than 3
    words and more than 3× the original's words (§2.4: candidates stay
    natural language of the same kind).
    """
    lines = [line for line in raw.strip().splitlines() if line.strip()]
    if not lines:
        return None
    text = _PREFIX.sub("", lines[0]).strip()
    # A reply that wraps the rewrite in a sentence ('Here is one: "Which city …?"') gives the quoted part.
    quoted = re.findall(r'"([^"]{8,})"|“([^”]{8,})”', text)
    if quoted and not text.startswith(('"', "“")):
        text = next(q for pair in quoted[::-1] for q in pair if q)
    text = _PREFIX.sub("", text.strip().strip("\"'“”").strip()).strip()
    if original.rstrip().endswith("?"):
        if "?" not in text:
            return None
        text = text[: text.index("?") + 1]
    words = len(text.split())
    if words < 3 or words > 3 * len(original.split()) + 6:
        return None
    if _key(text) == _key(original):
        return None
    return text


def _key(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def _round_seed(seed: int, round_: int) -> int:
    return int(np.random.SeedSequence([int(seed), int(round_)]).generate_state(1)[0] % (2**31))


def search_item(item: Item, target: Target, assistant, judge: Judge, embedder, *, token_count: Callable,
                n_candidates: int = 3, width: int = 1, depth: int = 3, seed: int = 0, store=None,
                assistant_max_tokens: int = 32, assistant_temperature: float = 0.9) -> Search:
    """Search rewrites of ``item`` that make ``target`` fail (module docstring).

    Parameters
    ----------
    item : Item
    target : Target
    assistant : Sampler
        Proposes rewrites (:data:`ASSISTANT_PROMPT`), ``n_candidates`` samples per parent.
    judge : Judge
        Keeps the rewrites that mean the same as the original.
    embedder : Embedder
        Similarities for the cost (§2.1) and for how close an answer came to failing.
    token_count : callable(str) -> int
        #Token of eq. (1).
    n_candidates, width, depth : int
        K proposals per parent, parents expanded per round, rounds.
    seed : int
        The assistant's seed; the target is greedy.
    store : SampleStore, optional

    Returns
    -------
    Search
    """
    n_candidates = check_positive_int(n_candidates, "n_candidates")
    width = check_positive_int(width, "width")
    depth = check_positive_int(depth, "depth")
    answer = target.answer(item, item.prompt, store=store)
    nodes = [Node(item.prompt, -1, 0, "original", 1.0, int(token_count(item.prompt)), answer, item.loss(answer), 0.0)]
    if nodes[0].loss == 1:  # fails unperturbed: no rewrite can add risk (ℓ_{h,θ1} = h already)
        return Search(item, target.name, tuple(nodes), 0, None)
    reference = answer
    seen = {_key(item.prompt)}
    frontier, queries = [0], 0
    for round_ in range(1, depth + 1):
        proposals = []
        for parent in frontier:
            replies = assistant.sample(ASSISTANT_PROMPT.format(prompt=nodes[parent].text), n_candidates,
                                       system=ASSISTANT_SYSTEM, temperature=assistant_temperature,
                                       max_tokens=assistant_max_tokens, seed=_round_seed(seed, round_), store=store)
            for reply in replies:
                text = clean_rewrite(reply, item.prompt)
                if text is None:
                    nodes.append(Node(reply.strip()[:200], parent, round_, "malformed"))
                elif _key(text) in seen:
                    nodes.append(Node(text, parent, round_, "duplicate"))
                else:
                    seen.add(_key(text))
                    proposals.append((parent, text))
        if not proposals:
            continue
        texts = [t for _, t in proposals]
        similarity = cosine_similarities(embedder, item.prompt, texts, store=store)
        accepted = judge.verdicts(item.prompt, texts, store=store)
        tokens = [int(token_count(t)) for t in texts]
        kept = []
        order = np.argsort(-similarity, kind="stable")
        for k in order:
            if not accepted[k]:
                nodes.append(Node(proposals[k][1], proposals[k][0], round_, "rejected", float(similarity[k]),
                                  tokens[k]))
        # Cheapest first (the cost of eq. 1 grows as the similarity falls): the
        # first failing rewrite found is then also the cheapest of its round.
        for k in order[accepted[order]]:
            parent, text = proposals[k]
            reply = target.answer(item, text, store=store)
            queries += 1
            loss = item.loss(reply)
            drift = 1.0 - float(cosine_similarities(embedder, reference, [reply], store=store)[0])
            closeness = item.partial_failure(reply) + 0.5 * drift
            nodes.append(Node(text, parent, round_, "queried", float(similarity[k]), tokens[k], reply, loss,
                              closeness))
            kept.append(len(nodes) - 1)
            if loss == 1:
                return Search(item, target.name, tuple(nodes), queries, queries)
        if kept:
            frontier = sorted(kept, key=lambda i: -nodes[i].closeness)[:width]
    return Search(item, target.name, tuple(nodes), queries, None)


def search_items(items: Sequence[Item], target: Target, assistant, judge: Judge, embedder, *, token_count,
                 progress: Callable | None = None, **settings) -> list[Search]:
    """:func:`search_item` for each item; ``progress(done, total)`` after each (False cancels)."""
    results = []
    for index, item in enumerate(items):
        results.append(search_item(item, target, assistant, judge, embedder, token_count=token_count, **settings))
        if progress is not None and progress(index + 1, len(items)) is False:
            break
    return results


def smollm2_token_count() -> Callable[[str], int]:
    """#Token of eq. (1) with the packaged SmolLM2's tokenizer (vocabulary only; offline).

    The paper counts tokens with its tokenizer; the experiments here use one
    fixed tokenizer for every target, so costs compare across models.
    """
    from ..samplers.smollm2 import smollm2_path
    from llama_cpp import Llama

    vocabulary = Llama(model_path=str(smollm2_path()), vocab_only=True, verbose=False)

    def count(text: str) -> int:
        return len(vocabulary.tokenize(text.encode("utf-8"), add_bos=False))

    return count
