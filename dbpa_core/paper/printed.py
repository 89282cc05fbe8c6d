"""What the DBPA paper printed: its tables and stated findings, transcribed with their references.

Rauba, Wei & van der Schaar, "Statistical Hypothesis Testing for Auditing Robustness in Language Models"
(ICML 2025; text in ``shared/papers/dbpa-paper-icml2025.txt``).  Everything the app or the command line
labels **"paper (printed)"** comes from this module and nowhere else: numbers as the tables print them
(two decimals, stars for p < 0.05 / 0.01 / 0.001, "two-sided" per the captions), sentences quoted from the
text.  The reference run's result files (``assets/paper/``) are **"reference run"**, never "paper";
our numbers are **"this project"**.  ``tests/test_paper_printed.py`` checks every cell against the
paper's text.

Figures 1 and 2 print no numbers in the text (their AUCs and TPRs are in the images only); what the text
says about them is in :data:`FINDINGS`.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

#: The three sources every reproduced value is labelled with.
PRINTED, REFERENCE_RUN, THIS_PROJECT = "paper (printed)", "reference run", "this project"
SOURCES = (PRINTED, REFERENCE_RUN, THIS_PROJECT)

#: The personas of Tables 2–4, 6, 7 as the loaders name them (dbpa_core.paper.loaders.PERSONAS).
_PERSONAS = ("doctor", "nurse", "medical practitioner", "medical supervisor",
             "comedian", "robot from the future", "NeurIPS reviewer", "child")


@dataclass(frozen=True)
class PrintedValue:
    """One printed cell: its number, its stars, and where it is printed.

    ``stars`` is "", "*", "**" or "***" (p < 0.05, 0.01, 0.001); the paper prints no p-values.
    """

    value: float
    stars: str
    reference: str
    row: str
    column: str

    @property
    def significant(self) -> bool:
        """Printed as significant at 0.05 (any star)."""
        return bool(self.stars)


@dataclass(frozen=True)
class PrintedTable:
    """A table as printed: rows (our persona names or the table's own labels) × columns."""

    reference: str
    section: str
    caption: str
    rows: tuple[str, ...]
    columns: tuple[str, ...]
    cells: MappingProxyType  # (row, column) -> PrintedValue

    def value(self, row: str, column: str) -> PrintedValue:
        try:
            return self.cells[row, column]
        except KeyError:
            raise KeyError(f"{self.reference} has no cell ({row!r}, {column!r}); rows: {', '.join(self.rows)}; "
                           f"columns: {', '.join(self.columns)}.") from None

    def column(self, column: str) -> tuple[PrintedValue, ...]:
        return tuple(self.value(row, column) for row in self.rows)

    def significant(self, column: str) -> tuple[str, ...]:
        """Rows printed with a star in ``column``."""
        return tuple(v.row for v in self.column(column) if v.significant)


def _table(reference: str, section: str, caption: str, columns: tuple[str, ...], lines: dict[str, str],
           ) -> PrintedTable:
    """Parse ``{row: "0.22 0.41** …"}`` into cells: each token is a number with its stars, as printed."""
    cells = {}
    for row, line in lines.items():
        tokens = line.split()
        if len(tokens) != len(columns):
            raise ValueError(f"{reference} row {row!r}: {len(tokens)} values for {len(columns)} columns.")
        for column, token in zip(columns, tokens):
            number = token.rstrip("*")
            cells[row, column] = PrintedValue(float(number.replace(",", "")), token[len(number):], reference, row,
                                              column)
    return PrintedTable(reference, section, caption, tuple(lines), columns, MappingProxyType(cells))


#: Table 2 (§4.1): ω (JS distance) by persona and model; columns as printed, in our model labels
#: ("LLama-3.1-8B" → Llama-3.1-8B, "SmoILM-135M" → SmolLM-135M, "MagicPrompt" → MagicPrompt-SD).
TABLE2 = _table(
    "Table 2", "§4.1", "Effect-size estimates ω by persona for all models; stars: two-sided p < 0.05, 0.01, 0.001 "
    "(Alg. 1). Medical personas (top) are expected to stay stable, the other four to shift.",
    ("GPT-4", "GPT-3.5", "Llama-3.1-8B", "GPT-2", "Gemma-2-9B", "SmolLM-135M", "Phi-3-mini", "MagicPrompt-SD",
     "Mistral-7B"),
    dict(zip(_PERSONAS, (
        "0.22 0.21 0.20 0.20 0.41** 0.14 0.16 0.17 0.31*",
        "0.20 0.20 0.25 0.30* 0.24* 0.13 0.22 0.13 0.24",
        "0.25 0.19 0.25 0.33** 0.30* 0.29** 0.18 0.20 0.20",
        "0.22 0.17 0.20 0.19 0.17 0.17 0.25 0.26 0.20",
        "0.32*** 0.24 0.36*** 0.26 0.23 0.12 0.23 0.24 0.20",
        "0.15 0.26* 0.31** 0.23 0.18 0.16 0.23 0.25 0.24",
        "0.28** 0.28* 0.30** 0.17 0.19 0.13 0.24 0.17 0.28",
        "0.27 0.33** 0.19 0.27* 0.14 0.28** 0.20 0.19 0.37**",
    ))))

#: Table 3 (App. C.1): effect size by persona and prompt length in tokens.
TABLE3 = _table(
    "Table 3", "App. C.1", "Effect-size estimates by persona across different token counts.",
    ("100", "200", "300", "400", "500", "600", "700", "800", "900"),
    dict(zip(_PERSONAS, (
        "0.14 0.25 0.20 0.22 0.20 0.16 0.16 0.22 0.19",
        "0.18 0.27** 0.23 0.20 0.25 0.37*** 0.19 0.17 0.18",
        "0.16 0.23 0.22 0.23 0.21 0.45*** 0.17 0.22 0.18",
        "0.24 0.25 0.21 0.26 0.21 0.33** 0.20 0.17 0.17",
        "0.24 0.41*** 0.34*** 0.26 0.41*** 0.18 0.28* 0.24 0.17",
        "0.26 0.28** 0.32*** 0.42** 0.29 0.19 0.22 0.19 0.20",
        "0.40*** 0.36*** 0.39** 0.35* 0.23 0.37* 0.26 0.25 0.17",
        "0.34*** 0.31* 0.32* 0.27 0.37*** 0.26* 0.31*** 0.18 0.23",
    ))))

#: Table 4 (App. C.2): six distributional distance measures, persona vs the doctor baseline.
TABLE4 = _table(
    "Table 4", "App. C.2", "Distributional distance measures across personas measuring deviation from baseline "
    "outputs; mean distances with significance stars.",
    ("Energy (Cosine)", "Euclidean", "Wasserstein", "JSD", "Energy (L1)", "Energy (L2)"),
    dict(zip(_PERSONAS, (
        "0.01*** 31.95 2.72 0.20 1.97*** 0.06***",
        "0.01*** 34.63 2.56 0.20 1.57*** 0.05***",
        "0.01** 40.88 1.57 0.22 1.27* 0.04**",
        "0.01*** 37.34 1.60 0.21 2.15*** 0.07***",
        "0.11*** 54.99*** 4.36*** 0.31 9.11*** 0.30***",
        "0.01*** 40.95 2.47 0.22 1.71** 0.05***",
        "0.05*** 52.63*** 4.55*** 0.30*** 4.84*** 0.15***",
        "0.14*** 57.03*** 4.57*** 0.31** 11.29*** 0.36***",
    ))))

#: Table 5 (App. C.3): embedding cost in US cents, at 200 tokens per perturbation (January 2025 prices).
TABLE5 = _table(
    "Table 5", "App. C.3", "Cost of embedding all tokens for the number of perturbations, 200 tokens per "
    "perturbation; cents (official API pricing, January 2025).",
    ("tokens", "text-embedding-3-small", "text-embedding-3-large", "text-embedding-ada-002"),
    {"100": "200,000 0.4 2.6 2.0", "200": "400,000 0.8 5.2 4.0", "500": "1,000,000 2.0 13.0 10.0",
     "1000": "2,000,000 4.0 26.0 20.0", "2000": "4,000,000 8.0 52.0 40.0", "5000": "10,000,000 20.0 130.0 100.0",
     "10000": "20,000,000 40.0 260.0 200.0", "20000": "40,000,000 80.0 520.0 400.0",
     "50000": "100,000,000 200.0 1,300.0 1,000.0"})
#: Table 5's prices (¢ per million tokens, as its column headers print them).
TABLE5_CENTS_PER_MILLION = MappingProxyType({"text-embedding-3-small": 2.0, "text-embedding-3-large": 13.0,
                                             "text-embedding-ada-002": 10.0})
#: Tokens per perturbation as App. C.3's text and Table 5's caption state them ("assuming 200 tokens per
#: perturbation on average") — while the table's own "Total Tokens" column is 2 000 × the perturbations
#: (100 → 200,000), and its cents follow that column.
TABLE5_STATED_TOKENS_PER_PERTURBATION = 200
TABLE5_PRINTED_TOKENS_PER_PERTURBATION = 2000

#: Table 6 (App. C.4): effect sizes with text similarities in place of embedding cosine.
TABLE6 = _table(
    "Table 6", "App. C.4", "Effect-size estimates using BLEU and ROUGE as distance measures within DBPA, role-play "
    "experiments.",
    ("BLEU", "ROUGE-1", "ROUGE-2", "ROUGE-L"),
    dict(zip(_PERSONAS, (
        "0.19 0.16 0.18 0.26", "0.40*** 0.36*** 0.31* 0.28", "0.20 0.27* 0.20 0.19", "0.24 0.34 0.34** 0.26",
        "0.65*** 0.37*** 0.38*** 0.26", "0.30** 0.26* 0.25 0.20", "0.26 0.22 0.21 0.24",
        "0.66*** 0.44*** 0.49*** 0.33***",
    ))))

#: Table 7 (App. C.5): effect sizes with four embedding models.
TABLE7 = _table(
    "Table 7", "App. C.5", "Effect-size estimates by persona across different embedding models.",
    ("Ada", "Jasper", "Stella", "Kalm"),
    dict(zip(_PERSONAS, (
        "0.21 0.07*** 0.07*** 0.03***", "0.20 0.03*** 0.03*** 0.02***", "0.19 0.05*** 0.04*** 0.02**",
        "0.17 0.09*** 0.08*** 0.05***", "0.24 0.36*** 0.31*** 0.23***", "0.26* 0.04*** 0.04*** 0.05***",
        "0.28* 0.14*** 0.13*** 0.13***", "0.33** 0.48*** 0.41*** 0.35***",
    ))))

TABLES = MappingProxyType({t.reference: t for t in (TABLE2, TABLE3, TABLE4, TABLE5, TABLE6, TABLE7)})


@dataclass(frozen=True)
class Finding:
    """A claim of the paper's text, quoted, with where it is made."""

    reference: str
    quote: str


#: The paper's stated findings, verbatim (the figures print no numbers in the text).
FINDINGS = MappingProxyType({
    "protocol": Finding("§4", "By default, we run the experiment over 5 seeds, and report the mean and standard "
                              "deviation of the measurements. We calculate the distance measure ω, computed as the "
                              "JSD distance between the null and alternative distributions, and the p-values."),
    "table2": Finding("§4.1, Table 2", "We see that this is true in larger models (GPT-4 and GPT-3.5) where none of "
                                       "the effect sizes are significant for medical personas and most of them are "
                                       "for the non-medical personas."),
    "table2_personas": Finding("§4.1", "We divide the setups into medical professions (medical supervisor, "
                                       "therapist, doctor, medical student) and other roles (comedian, robot from "
                                       "the future, neurips reviewer, child)."),
    "fig1": Finding("§4.2, Fig. 1", "We find that not all models are equally strong for the selected cases. For "
                                    "our example, we have demonstrated the best, middle, and worse performing "
                                    "models."),
    "fig2": Finding("§4.2, Fig. 2", "for an allowed FPR of 1%, we would choose Phi-3 whereas an allowed FPR of 5% "
                                    "would suggest Mistral-7B."),
    "fig3": Finding("§4.3, Fig. 3", "Given the number of Monte Carlo samples used, only two models—SmolLM and "
                                    "LLama-3.1—had significantly different responses with other models showcasing "
                                    "less divergence."),
    "fig3_reference": Finding("Fig. 3 caption", "We collect k responses from a base model (GPT-4) and evaluate the "
                                                "responses from multiple other language models"),
    "c2": Finding("App. C.2", "Medical personas consistently show lower effect sizes across all metrics, while "
                              "creative and role-playing personas exhibit substantially higher values."),
    "c3": Finding("App. C.3", "For typical research applications involving 1,000-5,000 perturbations, costs range "
                              "from 4¢ to $1.30 depending on the chosen model."),
    "c4": Finding("App. C.4", "BLEU scores show particularly high sensitivity to persona-induced changes, with "
                              "creative personas like ‘comedia’ and ‘child’ achieving effect sizes of 0.65-0.66"),
    "sample_size": Finding("§3.2", "k_adj ∝ ((z_{1−α/(2m)} + z_{1−β}) / ω)², where ω denotes the target effect "
                                   "size, z_q is the q-th standard-normal quantile, and β the tolerated Type-II "
                                   "error."),
})

#: Fig 2's printed choice of model per allowed FPR (§4.2 text), in our model labels.
FIG2_BEST = MappingProxyType({0.01: "Phi-3-mini", 0.05: "Mistral-7B"})
#: Fig 3's printed significant models (§4.3 text), in our labels; the printed reference model is GPT-4.
FIG3_DIFFERENT = ("SmolLM-135M", "Llama-3.1-8B")
FIG3_REFERENCE = "GPT-4"
