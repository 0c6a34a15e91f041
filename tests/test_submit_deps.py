"""``stormshift submit`` ships the project's own Python dependencies.

A tiny package (``ratecard``) exists only as a wheel on the submitting side; the
project's requirements.txt names it. The submit builds ``<topology>-deps.tar.gz`` from
``pip wheel`` (no index: ``PIP_NO_INDEX``), ships it with ``--archives
...#stormshift_deps`` and names ``stormshift_deps`` on the executors' PYTHONPATH, and a
Python without the package imports it from the unpacked archive. A compiled wheel goes
in the archive too when its tags fit the executors' Python, and is refused naming the
package when they do not (tests/test_cluster.py runs a real C extension on a cluster).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from support.wheels import LEDGER, RATECARD, make_wheel

from stormshift.engines.spark.driver.deps import check_wheel_fits, executor_tags
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
    assert plan.deps_archive is not None and plan.deps_archive.name == "ledger-deps.tar.gz"
    archives = plan.command[plan.command.index("--archives") + 1].split(",")
    assert archives == [f"{plan.deps_archive}#stormshift_deps"]
    env = [a for a in plan.command if a.startswith("spark.executorEnv.PYTHONPATH=")]
    assert len(env) == 1 and "stormshift_deps" in env[0].split("=", 1)[1].split(":")
    assert "deps" not in plan.command[plan.command.index("--py-files") + 1]
    unpacked = tmp_path / "executor" / "stormshift_deps"  # as Spark unpacks it
    with tarfile.open(plan.deps_archive) as archive:
        names = archive.getnames()
        archive.extractall(unpacked, filter="data")
    assert "ratecard/__init__.py" in names
    assert not any(n.startswith(("redis/", "pyspark/", "streamparse/")) for n in names)
    probe = "import ratecard; print(ratecard.rate('a3'), ratecard.__file__)"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True, cwd=unpacked.parent, env={"PYTHONPATH": "stormshift_deps"})
    rate, where = done.stdout.split()
    assert rate == "4" and where.startswith(str(unpacked))
    bare = subprocess.run([sys.executable, "-c", "import ratecard"], capture_output=True,
                          cwd=tmp_path, check=False)
    assert bare.returncode != 0  # not installed here: only the archive has it
    again = build_submit_plan(str(project), "spark://127.0.0.1:7077", build_dir=tmp_path / "c")
    assert again.deps_archive is not None
    assert again.deps_archive.read_bytes() == plan.deps_archive.read_bytes()  # reproducible


def _platform_tag() -> str:
    import sysconfig

    return sysconfig.get_platform().replace("-", "_").replace(".", "_")


def test_a_compiled_wheel_for_this_python_goes_in_the_archive(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    abi = f"cp{sys.version_info.major}{sys.version_info.minor}"
    wheel = make_wheel(tmp_path, "fastmath", {"fastmath/__init__.py": ""},
                       tag=f"{abi}-{abi}-{_platform_tag()}")
    plan = build_submit_plan(str(project_with(tmp_path, wheel)), "spark://127.0.0.1:7077",
                             build_dir=tmp_path / "b")
    assert plan.deps_archive is not None
    with tarfile.open(plan.deps_archive) as archive:
        assert "fastmath/__init__.py" in archive.getnames()


def test_a_compiled_wheel_for_another_python_is_refused_naming_the_package(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    other = f"cp{sys.version_info.major}{sys.version_info.minor + 1}"
    wheel = make_wheel(tmp_path, "fastmath", {"fastmath/__init__.py": ""},
                       tag=f"{other}-{other}-{_platform_tag()}")
    # pip itself refuses to pick it for this Python; the error names the wheel
    with pytest.raises(TopologyError, match=r"fastmath-0\.1-cp\d+-.*not a supported wheel"):
        build_submit_plan(str(project_with(tmp_path, wheel)), "spark://127.0.0.1:7077",
                          build_dir=tmp_path / "b")
    # a wheel that reached the archive step anyway (a wheelhouse built elsewhere) is
    # checked against the executors' tags and refused with the package's name and the fix
    with pytest.raises(TopologyError, match=rf"requirement fastmath .* is built for {other}-"
                                            r".*cannot import it\n  fix: build fastmath for "
                                            r"that Python"):
        check_wheel_fits(wheel, executor_tags(), tmp_path / "requirements.txt")
    abi = f"cp{sys.version_info.major}{sys.version_info.minor}"
    check_wheel_fits(wheel.with_name(f"fastmath-0.1-{abi}-{abi}-{_platform_tag()}.whl"),
                     executor_tags(), tmp_path / "requirements.txt")  # fits: no error
    check_wheel_fits(wheel.with_name("ratecard-0.1-py2.py3-none-any.whl"), executor_tags(),
                     tmp_path / "requirements.txt")


def test_without_requirements_nothing_more_is_shipped(tmp_path: Path) -> None:
    plan = build_submit_plan(str(LEDGER), "spark://127.0.0.1:7077", build_dir=tmp_path / "b")
    assert plan.deps_archive is None
    assert "--archives" not in plan.command and "deps" not in " ".join(plan.command)
