"""The answer grader of the stability audit: the 0/1 loss ℓ of a response.

A response is correct when it contains one of the question's accepted answers
as a whole word (case-insensitive); the loss is 0 if correct, else 1.
"""

from __future__ import annotations

import re


def is_correct(response: str, answers) -> bool:
    """Whether the response contains one of the accepted answers (case-insensitive, whole words)."""
    text = response.lower()
    return any(re.search(rf"(?<![a-z0-9]){re.escape(a.lower())}(?![a-z0-9])", text) for a in answers)
