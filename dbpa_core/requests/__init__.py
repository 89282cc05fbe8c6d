"""Every analysis as a request with one run, and the one table the command line and the app dispatch through.

=============  ===================================================================
two_sample     TwoSampleRequest: two given arms of outputs (``dbpa test``, an upload)
rut            RUTRequest: is this API the model it claims? (``dbpa rut``)
stability      StabilityRequest: the OT stability search and criterion (``dbpa stability``)
dispatch       RUNNERS: request type -> run, with AuditRequest -> audit.runner.run
specs          the YAML SPECs of ``dbpa rut`` and ``dbpa stability``
many           CompareSpec: ``dbpa compare SPEC.yaml``, one change across many prompts sampled now
many_batch     a compare SPEC's prompts × arms through ``dbpa batch export`` / ``import``
=============  ===================================================================

A layer above the analyses it wires (audit, rut, stability, paper) and below
the reports (present) and the command line (cli): the request types and the
table are importable from :mod:`dbpa_core.audit` too (``from dbpa_core.audit
import RUTRequest, RUNNERS``).
"""
