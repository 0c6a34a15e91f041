"""The file redirect of a shadow side (``stormshift/engines/external_files.py``), in-process.

The project's own code is told apart from everything else by the first frame outside the
standard library: a module under the project's root writes below the scratch directory, the
same call from anywhere else keeps its path.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from stormshift.engines.external_files import (
    dump_files,
    redirect_files,
    scratch_path,
)

WRITER = '''
from pathlib import Path


def append(path, line):
    with open(path, "a") as f:
        f.write(line + "\\n")


def write_text(path, text):
    Path(path).write_text(text)


def read(path):
    with open(path) as f:
        return f.read()
'''


def _project_module(root: Path) -> ModuleType:
    root.mkdir(parents=True)
    (root / "writer.py").write_text(WRITER)
    spec = importlib.util.spec_from_file_location("ss_test_writer", root / "writer.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules.pop("ss_test_writer", None)
    return module


def test_scratch_path_keeps_the_whole_path_below_the_scratch_directory() -> None:
    assert scratch_path("/s/legacy", "/var/log/clicks/audit.log") == "/s/legacy/var/log/clicks/audit.log"


def test_the_projects_writes_and_reads_go_to_the_scratch_directory(tmp_path: Path) -> None:
    project = _project_module(tmp_path / "project")
    real = tmp_path / "real" / "audit.log"
    scratch = tmp_path / "scratch"
    redirect_files(str(scratch), (str(tmp_path / "project"),))
    try:
        project.append(str(real), "one")
        project.append(str(real), "two")
        project.write_text(str(tmp_path / "real" / "last.txt"), "two")
        seen = project.read(str(real))  # the side reads back what it wrote
        with open(real.parent.parent / "elsewhere.txt", "w") as f:  # not the project's code
            f.write("kept")
    finally:
        redirect_files(None)
    assert seen == "one\ntwo\n"
    assert not real.exists() and not (tmp_path / "real" / "last.txt").exists()
    assert (tmp_path / "elsewhere.txt").read_text() == "kept"
    assert dump_files(str(scratch)) == {
        f"{real}[one]": 1, f"{real}[two]": 1, f"{tmp_path}/real/last.txt[two]": 1}


def test_without_a_redirect_the_project_writes_where_it_says(tmp_path: Path) -> None:
    project = _project_module(tmp_path / "project")
    redirect_files(None)
    project.append(str(tmp_path / "out.log"), "x")
    assert (tmp_path / "out.log").read_text() == "x\n"


def test_devices_are_never_redirected(tmp_path: Path) -> None:
    project = _project_module(tmp_path / "project")
    redirect_files(str(tmp_path / "scratch"), (str(tmp_path / "project"),))
    try:
        project.append("/dev/null", "gone")
    finally:
        redirect_files(None)
    assert not (tmp_path / "scratch").exists()


def test_dump_files_counts_equal_lines_and_ignores_order(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.log").write_text("b\na\nb\n")
    assert dump_files(str(tmp_path)) == {"/a/x.log[a]": 1, "/a/x.log[b]": 2}
