"""``stormshift submit`` ships the project's own Python dependencies.

A tiny package (``ratecard``) exists only as a wheel on the submitting side; the
project's requirements.txt names it. The submit builds ``<topology>-deps.zip`` from
``pip wheel`` (no index: ``PIP_NO_INDEX``), puts it on ``--py-files`` and the executors'
PYTHONPATH, and a Python without the package imports it from the zip. A dependency with
compiled code is refused with the fix.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from support.wheels import LEDGER, RATECARD, make_wheel

from stormshift.engines.spark.driver.submit import build_submit_plan
from stormshift.errors import TopologyError


def project_with(tmp_path: Path, wheel: Path) -> Path:
    project = tmp_path / "ledger"
    shutil.copytree(LEDGER, project)
    (project / "requirements.txt").write_text(f"{wheel}\n")
    return project


def test_submit_ships_a_dependency_installed_only_here(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    wheel = make_wheel(tmp_path, "ratecard", {"ratecard/__init__.py": RATECARD})
    project = project_with(tmp_path, wheel)
    plan = build_submit_plan(str(project), "spark://127.0.0.1:7077", build_dir=tmp_path / "b")
    assert plan.deps_zip is not None and plan.deps_zip.name == "ledger-deps.zip"
    py_files = plan.command[plan.command.index("--py-files") + 1].split(",")
    assert str(plan.deps_zip) in py_files
    assert any(a.startswith("spark.executorEnv.PYTHONPATH=") and "ledger-deps.zip" in a
               for a in plan.command)
    with zipfile.ZipFile(plan.deps_zip) as archive:
        names = archive.namelist()
    assert "ratecard/__init__.py" in names
    assert not any(n.startswith(("redis/", "pyspark/", "streamparse/")) for n in names)
    probe = ("import sys; sys.path.insert(0, sys.argv[1]); import ratecard; "
             "print(ratecard.rate('a3'), ratecard.__file__)")
    done = subprocess.run([sys.executable, "-c", probe, str(plan.deps_zip)], capture_output=True,
                          text=True, check=True, cwd=tmp_path)
    assert done.stdout.split()[0] == "4" and "ledger-deps.zip" in done.stdout
    bare = subprocess.run([sys.executable, "-c", "import ratecard"], capture_output=True,
                          cwd=tmp_path, check=False)
    assert bare.returncode != 0  # not installed here: only the zip has it


def test_a_dependency_with_compiled_code_is_refused_with_the_fix(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sysconfig

    monkeypatch.setenv("PIP_NO_INDEX", "1")
    abi = f"cp{sys.version_info.major}{sys.version_info.minor}"
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    wheel = make_wheel(tmp_path, "fastmath", {"fastmath/__init__.py": ""},
                       tag=f"{abi}-{abi}-{platform}")
    with pytest.raises(TopologyError, match=r"fastmath .*compiled code.*\n  fix: install "
                                            r"fastmath in the cluster's Python"):
        build_submit_plan(str(project_with(tmp_path, wheel)), "spark://127.0.0.1:7077",
                          build_dir=tmp_path / "b")


def test_without_requirements_nothing_more_is_shipped(tmp_path: Path) -> None:
    plan = build_submit_plan(str(LEDGER), "spark://127.0.0.1:7077", build_dir=tmp_path / "b")
    assert plan.deps_zip is None and "deps.zip" not in " ".join(plan.command)
