"""A project that imports a package this machine does not have: one clear error, never a
traceback, from every command that loads a topology (``check``'s side: tests/test_check.py).

The fixture ``tests/fixtures/check/missing_package`` is an ad-billing project whose bolt
imports ``adnet_billing``, a team's internal client only its Storm cluster has. Variants
(a name or a module an installed package lacks, a module of the project itself that does
not exist, an installed library that needs a missing package) are written from it into
``tmp_path``. Unit tier: the Spark command must fail before Spark starts, which the tier
guard would otherwise refuse (it flags any ``java`` / ``spark-submit`` a unit test starts).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

import pytest

from stormshift.cli import main
from stormshift.errors import MissingPackageError, TopologyError
from stormshift.topology.loader import import_component_class, load_topology

REPO = Path(__file__).resolve().parent.parent
PROJECT = REPO / "tests" / "fixtures" / "check" / "missing_package"
BOLT = Path("src") / "bolts" / "billing.py"
IMPORT = "import adnet_billing  # expect: missing-package"


def import_line(project: Path = PROJECT) -> int:
    lines = (project / BOLT).read_text().splitlines()
    return next(n for n, line in enumerate(lines, 1) if line.startswith("import adnet_billing"))


def variant(tmp_path: Path, statement: str) -> Path:
    """The fixture project with its ``import adnet_billing`` replaced by ``statement``."""
    project = tmp_path / "billing_project"
    shutil.copytree(PROJECT, project)
    bolt = project / BOLT
    bolt.write_text(bolt.read_text().replace(IMPORT, statement))
    return project


def load_error(project: Path) -> TopologyError:
    with pytest.raises(TopologyError) as info:
        load_topology(project)
    return info.value


# -- the loader: which package, which import statement, which fix --------------------------
def test_a_package_that_is_not_installed_is_named_with_its_import_statement() -> None:
    err = load_error(PROJECT)
    assert isinstance(err, MissingPackageError)
    assert err.package == "adnet_billing"
    assert err.file == str(PROJECT / BOLT) and err.line == import_line()
    assert f"{BOLT}:{import_line()}" in str(err) and "`import adnet_billing" in str(err)
    assert err.fix == ("pip install adnet_billing, or add it to the project's requirements "
                       "(a module of the project itself belongs in src/)")
    assert err.__cause__ is None and err.__suppress_context__


def test_a_name_an_installed_package_lacks_says_the_version_installed(tmp_path: Path) -> None:
    project = variant(tmp_path, "from redis import RateCardClient")
    err = load_error(project)
    assert isinstance(err, MissingPackageError) and err.package == "redis"
    version = metadata.version("redis")
    assert f"installed package 'redis' {version} has no name 'RateCardClient'" in str(err)
    assert f"{BOLT}:{import_line(PROJECT)}" in str(err)
    assert err.fix is not None and "pin it in the project's requirements" in err.fix


def test_a_module_an_installed_package_lacks(tmp_path: Path) -> None:
    err = load_error(variant(tmp_path, "import redis.billing_client"))
    assert isinstance(err, MissingPackageError)
    assert "has no module 'redis.billing_client'" in str(err)


def test_a_module_missing_from_the_project_is_the_projects_error(tmp_path: Path) -> None:
    err = load_error(variant(tmp_path, "from bolts.rates import RateCard"))
    assert not isinstance(err, MissingPackageError)
    assert "No module named 'bolts.rates'" in str(err) and f"{BOLT}:{import_line()}" in str(err)
    assert err.fix is not None and "exists in the project" in err.fix


def test_a_library_that_needs_a_missing_package_points_at_the_users_import(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``billing_sdk`` is installed (on sys.path, outside the project) but imports
    ``adnet_transport``, which is not: the package to install is the dependency, the
    line is the project's import of the library."""
    site = tmp_path / "site"
    (site / "billing_sdk").mkdir(parents=True)
    (site / "billing_sdk" / "__init__.py").write_text("import adnet_transport\n")
    monkeypatch.syspath_prepend(str(site))
    err = load_error(variant(tmp_path, "import billing_sdk"))
    assert isinstance(err, MissingPackageError) and err.package == "adnet_transport"
    assert f"{BOLT}:{import_line()} `import billing_sdk`" in str(err)



def test_a_project_package_shadowed_by_another_projects_earlier_on_sys_path_names_both(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every streamparse project has a ``bolts`` package. Another project's ``src/`` put
    first on sys.path (an embedding script, a helper that inserted it) wins the import:
    the error names the folder that shadows the project's package, not a version to pin."""
    other = tmp_path / "other_project" / "src"
    (other / "bolts").mkdir(parents=True)
    (other / "bolts" / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(other))
    err = load_error(variant(tmp_path, "import json"))
    assert isinstance(err, MissingPackageError) and err.package == "bolts"
    assert f"the project's own package 'bolts' is shadowed by {other / 'bolts'}" in str(err)
    assert "no module 'bolts.billing'" in str(err)
    assert err.fix is not None and f"take {other} off sys.path" in err.fix


def test_loading_the_adclicks_oracle_leaves_sys_path_as_it_was() -> None:
    """``examples/adclicks/expected.py`` loads its generator from the file: a test that
    computes the oracle and then loads another project must not import adclicks' ``bolts``."""
    import importlib.util

    before = list(sys.path)
    spec = importlib.util.spec_from_file_location(
        "adclicks_expected_syspath", REPO / "examples" / "adclicks" / "expected.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
        assert len(list(module.generated_lines(seed=1, events=50))) >= 50
    finally:
        del sys.modules[spec.name]
    assert sys.path == before
def test_a_worker_importing_a_component_class_gets_the_same_error(tmp_path: Path) -> None:
    """What a Spark worker runs (``import_component_class``), with a module whose name starts
    with the missing package's: still that package, not "cannot import the class"."""
    (tmp_path / "adnet_billing_bolts.py").write_text(
        "import adnet_billing\n\n\nclass ChargeBolt:\n    pass\n")
    with pytest.raises(MissingPackageError) as info:
        import_component_class("adnet_billing_bolts.ChargeBolt", [str(tmp_path)])
    assert info.value.package == "adnet_billing" and info.value.line == 1


# -- every command that loads a topology: one line (and its fix), exit 2 ------------------
@pytest.mark.parametrize("argv", [
    ["run", str(PROJECT), "--engine", "local"],
    ["run", str(PROJECT)],  # the Spark engine: refused before Spark starts
    ["run", str(PROJECT), "--master", "local[2]", "--until-done"],
    ["inspect", str(PROJECT)],
    ["shadow", str(PROJECT)],
    ["submit", str(PROJECT), "--master", "spark://127.0.0.1:7077"],
], ids=["run-local", "run-spark", "run-spark-until-done", "inspect", "shadow", "submit"])
def test_each_command_prints_one_error_line_and_the_fix(
        argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    started = time.monotonic()
    code = main(argv)
    elapsed = time.monotonic() - started
    out, err = capsys.readouterr()
    assert code == 2, out + err
    lines = err.strip().splitlines()
    assert 1 <= len(lines) <= 3, err
    assert "'adnet_billing' is not installed" in lines[0] and f"{BOLT}:{import_line()}" in lines[0]
    assert "fix: pip install adnet_billing" in err
    assert "Traceback" not in out + err
    assert elapsed < 10  # loading only; the tier guard fails the test if a JVM starts


def test_the_console_command_prints_no_traceback(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "stormshift", "run", str(PROJECT), "--engine", "local"],
        capture_output=True, text=True, timeout=120, check=False, cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert len(done.stderr.strip().splitlines()) <= 3, done.stderr
    assert "adnet_billing" in done.stderr and f"{BOLT}:{import_line()}" in done.stderr
    assert "Traceback" not in done.stderr + done.stdout
