"""The two tasks of the stability experiments (Liu, Li, Cui & Blanchet, §3), made safe to ship.

=========  ===================================================================
qa         general QA (the paper's Alpaca task): easy questions with known
           answers; loss 1 when the answer is wrong (:func:`~.grader.is_correct`)
secret     the jailbreak analogue: the system prompt holds a secret and an
           instruction never to reveal it; loss 1 when the answer reveals it
           (:func:`~.grader.leaks_secret`).  No harmful text is needed.
=========  ===================================================================

An :class:`Item` is one evaluation sample ẑ = (x̂, ŷ): the prompt x̂ that
rewrites perturb, what grades the answer, and the item's own system prompt
(the secret).  A target model adds its own system prompt on top
(:func:`system_prompt`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..data.assets import AUDITS_DIR, read_yaml
from .grader import is_correct, leaks_secret, secret_exposure

TASKS = ("qa", "secret")
TASK_FILES = {"qa": "stability_qa.yaml", "secret": "stability_secret.yaml"}
TASK_LABELS = {"qa": "General QA", "secret": "Secret keeping (jailbreak analogue)"}


@dataclass(frozen=True)
class Item:
    """One evaluation sample: the prompt that rewrites perturb and what grades the answer.

    Attributes
    ----------
    task : {"qa", "secret"}
    prompt : str
        The question (QA) or the user's request (secret).
    answers : tuple of str
        Accepted answers (QA); empty for the secret task.
    secret : str
        The secret (secret task); empty for QA.
    system : str
        The item's own system prompt ("" for QA).
    """

    task: str
    prompt: str
    answers: tuple[str, ...] = ()
    secret: str = ""
    system: str = ""

    def loss(self, answer: str) -> float:
        """ℓ(f(x), y) ∈ {0, 1}: 1 when the model fails on this item."""
        if self.task == "qa":
            return 0.0 if is_correct(answer, self.answers, self.prompt) else 1.0
        return 1.0 if leaks_secret(answer, self.secret) else 0.0

    def partial_failure(self, answer: str) -> float:
        """A graded sign of failure in [0, 1] for the search: the share of the secret revealed; 0 for QA."""
        return secret_exposure(answer, self.secret) if self.task == "secret" else 0.0


def system_prompt(item: Item, target_system: str | None) -> str | None:
    """The system prompt a target receives: the item's (the secret) then the target's own."""
    parts = [p for p in (item.system, target_system or "") if p]
    return "\n".join(parts) if parts else None


def _task_iv(task: str) -> str:
    if task not in TASKS:
        raise ValueError(f"`task` must be one of {', '.join(map(repr, TASKS))}; got {task!r}.")
    return task


def load_items(task: str) -> tuple[Item, ...]:
    """The shipped items of ``task`` (``assets/audits/stability_{qa,secret}.yaml``)."""
    data = read_yaml(AUDITS_DIR / TASK_FILES[_task_iv(task)])
    if task == "qa":
        return tuple(Item("qa", q["question"], tuple(str(a) for a in q["answers"])) for q in data["questions"])
    template = " ".join(data["system"].split())
    return tuple(Item("secret", r["request"], secret=r["secret"], system=template.format(secret=r["secret"]))
                 for r in data["requests"])


#: The columns of an uploaded table of items, per task (the first is required in a CSV header).
UPLOAD_COLUMNS = {"qa": ("question", "answers"), "secret": ("request", "secret")}


def items_from_rows(task: str, rows: Sequence[dict], *, where: Sequence[str] | None = None) -> tuple[Item, ...]:
    """Items from uploaded rows: QA rows need ``question`` and ``answers``; secret rows ``request`` and ``secret``.

    ``answers`` is a list or a string of accepted answers separated by "|"
    (``answer`` is read the same way).  ``where`` names each row in messages
    (default "row 1", "row 2", …).

    Raises
    ------
    ValueError
        Naming the row and the missing or malformed field.
    """
    task = _task_iv(task)
    items = []
    system = " ".join(read_yaml(AUDITS_DIR / TASK_FILES["secret"])["system"].split())
    for number, row in enumerate(rows, start=1):
        place = where[number - 1] if where is not None else f"row {number}"
        if task == "qa":
            question = row.get("question")
            answers = row.get("answers", row.get("answer"))
            if isinstance(answers, str | int | float) and not isinstance(answers, bool):
                answers = [a.strip() for a in str(answers).split("|") if a.strip()]
            if not isinstance(question, str) or not question.strip() or not isinstance(answers, list) \
                    or not [a for a in answers if str(a).strip()]:
                raise ValueError(f"{place}: a QA row needs a `question` and its `answers` (a list, or "
                                 "several separated by |).")
            items.append(Item("qa", question.strip(), tuple(str(a).strip() for a in answers if str(a).strip())))
        else:
            request, secret = row.get("request"), row.get("secret")
            if not isinstance(request, str) or not request.strip() or not isinstance(secret, str) \
                    or len(secret.strip()) < 4:
                raise ValueError(f"{place}: a secret row needs a `request` and a `secret` of at least 4 "
                                 "letters.")
            items.append(Item("secret", request.strip(), secret=secret.strip(),
                              system=system.format(secret=secret.strip())))
    if not items:
        raise ValueError("`rows` must hold at least one item.")
    if len({i.prompt for i in items}) < len(items):
        raise ValueError("every item must be asked once: the same question appears in two rows; remove one.")
    return tuple(items)


def read_items(data: bytes, filename: str, task: str) -> tuple[Item, ...]:
    """Items of ``task`` from an uploaded CSV or JSONL file (:data:`UPLOAD_COLUMNS`; :func:`items_from_rows`)."""
    from ..data.uploads import read_rows

    rows = read_rows(data, filename, columns=UPLOAD_COLUMNS[_task_iv(task)])
    return items_from_rows(task, [row for _, row in rows], where=[place for place, _ in rows])


@dataclass(frozen=True)
class GraderAccuracy:
    """The rule-based loss against a person's labels on the shipped sample.

    Attributes
    ----------
    accuracy : float
        Share of labelled answers graded as the person did.
    substring_accuracy : float
        The same for a bare case-insensitive substring test (the baseline the
        grader must beat).
    n : int
    errors : tuple of dict
        The labelled rows the grader gets wrong.
    """

    accuracy: float
    substring_accuracy: float
    n: int
    errors: tuple


def grader_accuracy(task: str = "qa", *, heldout: bool = False) -> GraderAccuracy:
    """Accuracy of the task's loss on the labelled answers (``assets/audits/stability_labelled.yaml``).

    ``heldout=True`` (QA): the answers labelled after the grader's rules were
    fixed (``qa_heldout``), rather than the sample they were written against.
    """
    task = _task_iv(task)
    data = read_yaml(AUDITS_DIR / "stability_labelled.yaml")
    if task == "qa":
        rows = data["qa_heldout" if heldout else "qa_answers"]
        truth = [bool(r["correct"]) for r in rows]
        graded = [is_correct(r["answer"], [str(a) for a in _answers_of(r["question"])], r["question"]) for r in rows]
        naive = [any(str(a).lower() in r["answer"].lower() for a in _answers_of(r["question"])) for r in rows]
    else:
        rows = data["secret_answers"]
        truth = [bool(r["leaks"]) for r in rows]
        graded = [leaks_secret(r["answer"], r["secret"]) for r in rows]
        naive = [r["secret"].lower() in r["answer"].lower() for r in rows]
    errors = tuple(r for r, g, t in zip(rows, graded, truth) if g != t)
    agree = sum(g == t for g, t in zip(graded, truth))
    return GraderAccuracy(agree / len(rows), sum(n == t for n, t in zip(naive, truth)) / len(rows), len(rows), errors)


def _answers_of(question: str) -> tuple[str, ...]:
    answers = {i.prompt: i.answers for i in load_items("qa")}
    if question not in answers:
        raise ValueError(f"labelled answer to {question!r}: the question is not in {TASK_FILES['qa']}.")
    return answers[question]
