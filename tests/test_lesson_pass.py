"""Issue 45, second pass: the time said before it is spent, the Appendix CSV's split cells, the sidebar unclipped."""

from __future__ import annotations

import re


from test_app import start


def captions(at) -> str:
    return "\n".join(c.value for c in at.caption)


def test_home_page_says_how_long_a_resample_takes_before_it_starts(tmp_path, monkeypatch):
    from dbpa_core.audit import timing

    at = start(tmp_path, monkeypatch)
    said = re.search(r"Resample: about (\d+) (s|min) on this machine", captions(at))
    assert said, captions(at)
    # k = 40 on 7 arms, every output embedded anew by MiniLM: the model's own arithmetic, no invented figure.
    seconds = int(said.group(1)) * (60 if said.group(2) == "min" else 1)
    modelled = 7 * 40 * timing.SECONDS_PER_EMBEDDING["minilm"]
    assert modelled * 0.5 <= seconds <= modelled * 3


def test_a_run_page_says_its_time_beside_its_cost(tmp_path, monkeypatch):
    at = start(tmp_path, monkeypatch)
    at.switch_page("views/tpr_fpr.py").run()
    at.radio(key="roc_source").set_value("live").run()
    assert not at.exception
    notes = "\n".join(i.value for i in at.info)
    assert re.search(r"Time: about \d+ (s|min) on this machine if none of it is stored yet", notes), notes

