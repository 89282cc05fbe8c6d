"""A recorded RUT audit read beside the MMD on the same answers: the sentences and the JSON record's block."""

from __future__ import annotations

from dbpa_core.present.formatting import format_pvalue, p_relation
from dbpa_core.present.readings import decision
from dbpa_core.present.rut_readings import read_mmd_beside_rut


def mmd_beside_rut(found, alpha: float) -> tuple[list[str], dict]:
    """The sentences shown under a recorded RUT audit and the block its JSON record carries beside the RUT.

    ``found`` is a :class:`~dbpa_core.requests.rut.RUTAuditResult` of a recorded request (its MMD on the same
    audit and how many target answers came from the substitute: the truth a recorded audit knows).
    """
    mmd, substituted = found.mmd, found.n_substituted
    reading = read_mmd_beside_rut(mmd.pvalue, found.rut.pvalue, alpha, substituted=substituted)
    sentences = [f"{substituted} of {found.request.n} target answers actually came from the substitute.",
                 f"MMD (Hamming kernel on the answers' tokens, Gao et al.) on the same audit: "
                 f"p {p_relation(format_pvalue(mmd.pvalue, mmd.n_resamples, exact=mmd.exact))} "
                 + (f"(all {mmd.n_resamples} within-prompt splits, enumerated: p is exact)." if mmd.exact
                    else f"({mmd.n_resamples} random within-prompt re-splits)."),
                 reading]
    # The MMD's result beside the RUT's in the JSON (it sat under "settings", which holds the inputs).
    record = {"mmd": {"pvalue": mmd.pvalue, "n_resamples": mmd.n_resamples, "exact": bool(mmd.exact),
                      "decision": decision(mmd.pvalue, alpha), "reading": reading},
              "substituted_answers": substituted}
    return sentences, record
