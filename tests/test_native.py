"""The compiled hot path (``stormshift/native.py``): which modules are compiled, a stale
build never runs, and the pure-Python sources pass the hot path's tests on their own."""

from __future__ import annotations

import importlib.machinery
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from stormshift import native

ROOT = Path(native.__file__).resolve().parents[1]


def test_stale_is_any_module_whose_source_digest_differs_from_the_build_record() -> None:
    record = {"a": "1", "b": "2"}
    assert native.stale(record, {"a": "1", "b": "2"}) == []
    assert native.stale(record, {"a": "1", "b": "3"}) == ["b"]
    assert native.stale(record, {"c": "9", "a": "1"}) == ["c"]  # not in the record: not built here
    assert native.stale({}, {"b": "2", "a": "1"}) == ["a", "b"]


def test_pure_names_every_compiled_module_or_the_listed_ones() -> None:
    assert native.pure_modules(None) == native.pure_modules("") == frozenset()
    assert native.pure_modules("1") == frozenset(native.COMPILED)
    listed = f"{native.COMPILED[0]}, {native.COMPILED[-1]}"
    assert native.pure_modules(listed) == {native.COMPILED[0], native.COMPILED[-1]}
    assert native.pure_modules("stormshift.no_such_module") == frozenset(native.COMPILED)


def _run(code: str, cwd: Path, **env: str) -> dict:
    """``code``'s last line of output, as JSON; ``STORMSHIFT_PURE`` only if ``env`` sets it."""
    base = {k: v for k, v in os.environ.items() if k != native.PURE_ENV}
    done = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True,
                          env={**base, **env}, timeout=120, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_an_edited_or_pure_module_is_imported_from_its_source_never_its_build(tmp_path: Path) -> None:
    """A package with a compiled twin that must not load (its file is no extension at all):
    the edited module and ``STORMSHIFT_PURE`` both import the ``.py``; a warning names the edit."""
    pkg = tmp_path / "stormshift" / "spouts"
    pkg.mkdir(parents=True)
    (tmp_path / "stormshift" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "jsonlines.py").write_text("WHERE = 'source'\n")
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    (pkg / f"jsonlines{suffix}").write_bytes(b"not an extension: importing it would fail")
    (tmp_path / "stormshift" / native.RECORD).write_text(json.dumps(
        {"stormshift.spouts.jsonlines": "digest of an older source"}))
    code = (
        "import json, sys, warnings\n"
        f"sys.path.insert(0, {str(ROOT / 'stormshift')!r})\n"
        "import native\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        f"    routed = native.install({str(tmp_path)!r})\n"
        f"sys.path.insert(0, {str(tmp_path)!r})\n"
        "import stormshift.spouts.jsonlines as m\n"
        f"state = native.status({str(tmp_path)!r})['stormshift.spouts.jsonlines']\n"
        "print(json.dumps({'routed': routed, 'where': m.WHERE, 'state': state,\n"
        "                  'warnings': [str(w.message) for w in caught]}))\n"
    )
    edited = _run(code, tmp_path)
    assert edited["routed"] == ["stormshift.spouts.jsonlines"] and edited["where"] == "source"
    assert edited["state"].startswith("source (edited")
    assert len(edited["warnings"]) == 1 and "pip install -e ." in edited["warnings"][0]

    (tmp_path / "stormshift" / native.RECORD).write_text(json.dumps(
        {"stormshift.spouts.jsonlines": native.source_digest(str(pkg / "jsonlines.py"))}))
    pure = _run(code, tmp_path, STORMSHIFT_PURE="1")
    assert pure["routed"] == ["stormshift.spouts.jsonlines"] and pure["where"] == "source"
    assert pure["state"] == "source (STORMSHIFT_PURE is set)" and pure["warnings"] == []


def test_a_compiled_module_no_longer_in_the_build_is_imported_from_its_source(
        tmp_path: Path) -> None:
    """An extension file left beside a module dropped from ``COMPILED`` (or one whose build
    failed, so the record does not name it) never loads: its ``.py`` does, with or without a
    record, and the other modules import as usual."""
    pkg = tmp_path / "stormshift" / "adapters"
    pkg.mkdir(parents=True)
    (tmp_path / "stormshift" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "dropped.py").write_text("WHERE = 'source'\n")
    (pkg / "plain.py").write_text("WHERE = 'plain source'\n")
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    (pkg / f"dropped{suffix}").write_bytes(b"not an extension: importing it would fail")
    code = (
        "import json, sys\n"
        f"sys.path.insert(0, {str(ROOT / 'stormshift')!r})\n"
        "import native\n"
        f"native.install({str(tmp_path)!r})\n"
        f"sys.path.insert(0, {str(tmp_path)!r})\n"
        "import stormshift.adapters.dropped as m, stormshift.adapters.plain as p\n"
        "print(json.dumps({'where': m.WHERE, 'plain': p.WHERE}))\n"
    )
    assert _run(code, tmp_path) == {"where": "source", "plain": "plain source"}
    (tmp_path / "stormshift" / native.RECORD).write_text(json.dumps({}))
    assert _run(code, tmp_path) == {"where": "source", "plain": "plain source"}


def test_this_install_runs_every_hot_path_module_compiled_when_it_built_them(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The install compiled what ``COMPILED`` lists (pip's build had Cython and a compiler):
    a module silently left out would make the benchmarks measure something else. A module
    edited since the build runs from its source (the other test): no rebuild is needed to
    run the tests."""
    monkeypatch.delenv(native.PURE_ENV, raising=False)
    if not (ROOT / "stormshift" / native.RECORD).exists():
        states = native.status(str(ROOT))
        assert all(s.startswith("source (not compiled") for s in states.values()), states
        return
    states = {m: s for m, s in native.status(str(ROOT)).items()
              if s != "compiled" and not s.startswith("source (edited")}
    assert states == {}, (
        "these hot-path modules run from source; rebuild with `pip install -e .` (needs a C "
        f"compiler; STORMSHIFT_PURE=1 at install time builds nothing): {states}")


@pytest.mark.redis  # runs the other files' Redis tests in a child pytest
def test_the_pure_python_sources_pass_the_hot_paths_tests_on_their_own() -> None:
    """Everyone without a compiler runs the sources: the tests of every compiled module
    (hosting, routing, tuples, rows, stage input, JSON lines) pass on them too."""
    files = ["tests/test_hosting.py", "tests/test_routing.py", "tests/test_spark_rows.py",
             "tests/test_spark_spoutread.py", "tests/test_spouts.py"]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not spark",
         *files], check=False, cwd=ROOT, capture_output=True, text=True, timeout=900,
        env={**os.environ, "STORMSHIFT_PURE": "1"})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert " passed" in done.stdout.splitlines()[-1]
