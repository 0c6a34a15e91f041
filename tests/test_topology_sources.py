"""One sys.path / sys.modules policy for user sources (``stormshift.topology.sources``):
a project's ``src/queue.py`` never shadows the standard library, and projects sharing
module names (``spouts``, ``bolts``) loaded one after another each get their own classes.
The Spark side (driver, planner process, workers) is in ``test_spark_sources.py``."""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
from pathlib import Path

from support.local_fixtures import PICKY, STDNAMES, from_stdlib

from stormshift.engines.local import LocalEngine, SimClock
from stormshift.topology.loader import import_component_class, load_topology
from stormshift.topology.sources import shadowed_modules, use_sources


def run_local(graph: object) -> object:
    return LocalEngine(graph, clock=SimClock(ms_per_round=1), seed=0).run()


def test_source_dirs_sit_after_the_standard_library_and_installed_packages() -> None:
    import queue as stdlib_queue

    graph = load_topology(STDNAMES)
    site_packages = sysconfig.get_paths()["purelib"]
    positions = {p: i for i, p in enumerate(sys.path)}
    assert all(positions[d] > positions[site_packages] for d in graph.source_dirs)
    assert sys.modules["queue"] is stdlib_queue, "a standard module is never evicted"
    assert shadowed_modules(STDNAMES / "src").keys() == {"json", "queue"}


def test_a_bytecode_cache_folder_is_no_project_module(tmp_path: Path) -> None:
    """Python writes ``src/__pycache__/`` beside every module it imported: on a project that
    has run once, ``check`` must not take it for a module the standard library shadows."""
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / "__pycache__" / "ledger_rules.cpython-311.pyc").write_bytes(b"")
    (tmp_path / "ledger_rules.py").write_text("X = 1\n")
    assert shadowed_modules(tmp_path) == {}


def test_a_project_naming_modules_like_the_stdlib_runs_on_the_local_engine() -> None:
    graph = load_topology(STDNAMES)
    summary = run_local(graph)
    rows = summary.output("probe_bolt")
    assert sorted(n for n, _, _ in rows) == list(range(30))
    assert all(from_stdlib(spout + bolt) for _, spout, bolt in rows), rows[:2]


def test_a_fresh_process_imports_the_standard_modules_after_loading_such_a_project(
        tmp_path: Path) -> None:
    """Standard modules imported for the first time after the project is loaded (here
    forced by forgetting them) still come from the standard library, in the driver."""
    script = (
        "import importlib, json, sys\n"
        "from stormshift.topology.loader import load_topology\n"
        "load_topology(sys.argv[1])\n"
        "files = []\n"
        "for name in ('queue', 'json'):\n"
        "    sys.modules.pop(name)\n"
        "    files.append(importlib.import_module(name).__file__)\n"
        "print(json.dumps(files))\n"
    )
    done = subprocess.run([sys.executable, "-c", script, str(STDNAMES)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert from_stdlib(json.loads(done.stdout.splitlines()[-1]))


def test_projects_sharing_a_module_path_get_their_own_classes_one_after_another() -> None:
    """picky and stdnames both define ``spouts.numbers.NumberSpout`` (different classes) and
    a ``bolts`` package: loading and running them alternately never reuses the other's."""
    for _ in range(2):
        picky = load_topology(PICKY)
        spout = import_component_class("spouts.numbers.NumberSpout", picky.source_dirs)
        assert spout.outputs == ["n"]
        assert Path(sys.modules["bolts"].__file__ or "").is_relative_to(PICKY)
        summary = run_local(picky)
        assert sorted(n for n, _ in summary.output("picky_bolt")) == [
            n for n in range(70) if n % 7]

        stdnames = load_topology(STDNAMES)
        spout = import_component_class("spouts.numbers.NumberSpout", stdnames.source_dirs)
        assert spout.outputs == ["n", "spout_origins"]
        assert Path(sys.modules["bolts"].__file__ or "").is_relative_to(STDNAMES)
        summary = run_local(stdnames)
        assert sorted(n for n, _, _ in summary.output("probe_bolt")) == list(range(30))


def test_only_modules_of_another_projects_source_dir_are_evicted(tmp_path: Path) -> None:
    """A module of a directory that is no source dir (here the test's own), or of a name
    the new project does not provide, stays cached; a source dir goes after the others."""
    one, two, mine = tmp_path / "one", tmp_path / "two", tmp_path / "mine"
    for directory, tag in ((one, "one"), (two, "two"), (mine, "mine")):
        directory.mkdir()
        (directory / "sharedmod_src.py").write_text(f"TAG = {tag!r}\n")
    (one / "onlyone_src.py").write_text("TAG = 'one'\n")
    sys.path[:0] = [str(mine), str(one)]
    try:
        use_sources([str(one)])
        assert sys.path.index(str(one)) > sys.path.index(str(mine)), "a source dir moves last"
        import onlyone_src
        import sharedmod_src

        assert sharedmod_src.TAG == "mine", "a directory before the source dirs wins"
        sys.modules.pop("sharedmod_src")
        sys.path.remove(str(mine))
        import sharedmod_src

        assert sharedmod_src.TAG == "one"
        use_sources([str(two)])
        assert "sharedmod_src" not in sys.modules and sys.modules["onlyone_src"] is onlyone_src
        import sharedmod_src

        assert sharedmod_src.TAG == "two"
        assert sys.path.index(str(two)) < sys.path.index(str(one)), "the project in use first"
    finally:
        for name in ("sharedmod_src", "onlyone_src"):
            sys.modules.pop(name, None)
        if str(mine) in sys.path:
            sys.path.remove(str(mine))


def test_check_names_each_module_the_standard_library_shadows() -> None:
    from stormshift.check import run_check

    report = run_check(STDNAMES, dynamic=False)
    shadowed = {(f.file, f.line) for f in report.findings if f.rule == "shadowed-module"}
    assert shadowed == {("src/json.py", 1), ("src/queue.py", 1)}
