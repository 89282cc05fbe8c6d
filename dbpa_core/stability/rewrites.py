"""Rule-based rewrites of a question, the candidate perturbations of the stability audit.

Each rewrite keeps the question's meaning and changes its surface; they are
deterministic, so losses and costs are reproducible.
"""

from __future__ import annotations

REWRITES = {
    "typo": "swap two letters in the longest word",
    "lowercase": "lower case, no punctuation",
    "distractor": "an irrelevant sentence before the question",
    "polite": "a polite, wordier request",
}


def rewrite(question: str, kind: str) -> str:
    """The ``kind`` rewrite of ``question`` (see :data:`REWRITES`)."""
    if kind == "typo":
        words = question.split()
        index = max(range(len(words)), key=lambda i: len(words[i].strip("?.,!")))
        word = words[index]
        if len(word) > 3:
            words[index] = word[:1] + word[2] + word[1] + word[3:]
        return " ".join(words)
    if kind == "lowercase":
        return "".join(c for c in question.lower() if c.isalnum() or c.isspace())
    if kind == "distractor":
        return "My neighbour painted his fence blue last weekend. " + question
    if kind == "polite":
        return f"Could you please help me with a quick question? {question} Thank you very much!"
    raise ValueError(f"`kind` must be one of {', '.join(REWRITES)}; got {kind!r}.")
