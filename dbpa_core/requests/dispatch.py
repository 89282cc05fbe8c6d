"""One table from request kinds to their runners: what the command line and the app both call.

=================  ==============================================  ====================================
request            what it asks                                    runner
=================  ==============================================  ====================================
AuditRequest       a family of perturbations of one prompt (DBPA)  ``dbpa_core.audit.runner.run``
TwoSampleRequest   two given arms of outputs (files, an upload)    ``dbpa_core.requests.two_sample.run``
RUTRequest         is this API the model it claims? (RUT)          ``dbpa_core.requests.rut.run``
StabilityRequest   the OT stability search and criterion           ``dbpa_core.requests.stability.run``
=================  ==============================================  ====================================

Every runner is ``run(request, *, store=None, progress=None, **resources)``:
``store`` keeps samples and embeddings (a rerun resumes), ``progress``
receives :class:`~dbpa_core.audit.arms.RunUpdate` updates, and ``resources`` are what a caller
may lend instead of building from the request (the app's shared models and
clients with the session's keys: ``sampler_for``, ``embedder``, ``scorer``,
``token_count``, ``pools``).  Each request kind has a ``key``
(:func:`~dbpa_core.audit.identity.request_digest`) and ``settings()`` for reports.
"""

from __future__ import annotations

from ..audit import runner
from . import rut, stability, two_sample
from ..audit.request import AuditRequest
from .rut import RUTRequest
from .stability import StabilityRequest
from .two_sample import TwoSampleRequest

#: request type -> ``run(request, *, store, progress, **resources)``: the one table the CLI and the app use.
RUNNERS = {
    AuditRequest: runner.run,
    TwoSampleRequest: two_sample.run,
    RUTRequest: rut.run,
    StabilityRequest: stability.run,
}


def run(request, *, store=None, progress=None, **resources):
    """Run any request through its runner in :data:`RUNNERS` (the one entry point of CLI and app)."""
    try:
        runner_of = RUNNERS[type(request)]
    except KeyError:
        raise TypeError(f"no runner for {type(request).__name__}; requests: "
                        f"{', '.join(kind.__name__ for kind in RUNNERS)}.") from None
    return runner_of(request, store=store, progress=progress, **resources)
