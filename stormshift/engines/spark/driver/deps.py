"""The project's Python dependencies, shipped by ``stormshift submit`` as one archive.

``pip wheel -r REQUIREMENTS`` (the user's pip config: an index, or ``PIP_NO_INDEX`` and
``PIP_FIND_LINKS`` for a wheelhouse; nothing else is fetched) builds or copies a wheel
per requirement and dependency. Every wheel, pure-Python or compiled (C extensions), is
unpacked into ``<topology>-deps.tar.gz``, shipped with ``--archives
<topology>-deps.tar.gz#stormshift_deps``: Spark unpacks it into each executor's working
directory as ``stormshift_deps/``, and the executors' ``PYTHONPATH`` names it. A zip on
``--py-files`` would do for pure Python only: Python cannot load an extension module
from a zip. A compiled wheel must fit the executors' Python: its tags are checked
against it (``check_wheel_fits``) and a misfit is refused, naming the package.
Distributions stormshift itself needs (pyspark, redis, streamparse, pyarrow, ...) are
left out: the cluster's Python has them already.
"""

from __future__ import annotations

import gzip
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from importlib import metadata
from pathlib import Path
from typing import Any

from stormshift.errors import TopologyError

__all__ = ["ARCHIVE_DIR", "build_deps_archive", "check_wheel_fits", "executor_tags",
           "requirements_of", "stormshift_requirements", "wheel_tags"]

#: where executors unpack the archive (``--archives NAME-deps.tar.gz#stormshift_deps``: the
#: fragment names the directory in each executor's working directory)
ARCHIVE_DIR = "stormshift_deps"

_NAME = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._]*)")


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def stormshift_requirements() -> frozenset[str]:
    """Canonical names of the distributions stormshift needs, transitively (on the cluster)."""
    seen: set[str] = set()
    todo = ["stormshift"]
    while todo:
        name = todo.pop()
        try:
            requires = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue
        for req in requires:
            if "extra ==" in req:
                continue
            m = _NAME.match(req)
            if m and _canonical(m.group(1)) not in seen:
                seen.add(_canonical(m.group(1)))
                todo.append(m.group(1))
    return frozenset(seen | {"stormshift"})


def requirements_of(project_dir: Path, explicit: str | None) -> Path | None:
    """``--requirements FILE`` (must exist), else the project's ``requirements.txt``."""
    if explicit:
        path = Path(explicit)
        path = path if path.is_absolute() else (Path.cwd() / path)
        if not path.is_file():
            raise TopologyError(f"--requirements {explicit}: no such file",
                                fix="pass the project's requirements file, e.g. "
                                    "--requirements virtualenvs/NAME.txt")
        return path.resolve()
    default = project_dir / "requirements.txt"
    return default if default.is_file() else None


def _tags_module() -> Any:
    """``packaging.tags`` (pip's own copy when ``packaging`` is not installed: ``pip wheel``
    is needed here anyway)."""
    try:
        from packaging import tags
    except ImportError:  # pragma: no cover - depends on the environment
        from pip._vendor.packaging import tags  # type: ignore[no-redef]
    return tags


def wheel_tags(wheel: Path) -> tuple[str, frozenset[str]]:
    """``(distribution, tags)`` from a wheel's file name (``name-ver[-build]-py-abi-plat``;
    compressed tag sets like ``py2.py3`` expanded)."""
    parts = wheel.name[: -len(".whl")].split("-")
    py, abi, plat = parts[-3:]
    return _canonical(parts[0]), frozenset(f"{p}-{a}-{pl}" for p in py.split(".")
                                           for a in abi.split(".") for pl in plat.split("."))


def executor_tags() -> frozenset[str]:
    """The tags the executors' Python accepts: this Python's. PySpark refuses a worker whose
    Python minor version differs from the driver's, and ``submit`` runs the driver with the
    submitting side's interpreter's packages, so the cluster's executors run this version on
    this platform (a cluster on another platform needs its own ``pip wheel``)."""
    return frozenset(str(t) for t in _tags_module().sys_tags())


def check_wheel_fits(wheel: Path, accepted: frozenset[str], requirements: Path) -> None:
    """A clear error naming the package when no tag of ``wheel`` fits the executors."""
    name, tags = wheel_tags(wheel)
    if tags & accepted:
        return
    import platform
    import sys

    here = f"CPython {sys.version_info.major}.{sys.version_info.minor} on {platform.machine()}"
    raise TopologyError(
        f"requirement {name} ({wheel.name}) is built for {', '.join(sorted(tags))}: the "
        f"executors' Python ({here}, the submitting side's) cannot import it",
        fix=f"build {name} for that Python (pip wheel it with the cluster's interpreter into a "
            f"wheelhouse, PIP_FIND_LINKS=WHEELHOUSE), or drop it from {requirements.name}")


def build_deps_archive(requirements: Path, out_dir: Path, topology: str) -> Path:
    """Wheels of ``requirements`` unpacked into ``out_dir/<topology>-deps.tar.gz`` (module doc).

    Every wheel (pure or compiled) must fit the executors' Python (``check_wheel_fits``).
    The archive is reproducible: sorted members, fixed times and owners."""
    wheels = out_dir / "wheels"
    shutil.rmtree(wheels, ignore_errors=True)
    wheels.mkdir(parents=True)
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "-r", str(requirements),
                           "-w", str(wheels)], cwd=requirements.parent, capture_output=True,
                          text=True, check=False)
    if done.returncode:
        last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise TopologyError(f"pip wheel -r {requirements} failed: {last}",
                            fix="make the requirements installable here (an index, or "
                                "PIP_NO_INDEX=1 PIP_FIND_LINKS=WHEELHOUSE), then submit again")
    skip = stormshift_requirements()
    accepted = executor_tags()
    unpack = wheels / "unpacked"
    unpack.mkdir()
    for wheel in sorted(wheels.glob("*.whl")):
        name, _ = wheel_tags(wheel)
        if name in skip:
            continue
        check_wheel_fits(wheel, accepted, requirements)
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(unpack)
            for info in archive.infolist():  # zip keeps the mode in its high bits (.so: 0755)
                mode = (info.external_attr >> 16) & 0o777
                if mode:
                    (unpack / info.filename).chmod(mode)

    def normalized(member: tarfile.TarInfo) -> tarfile.TarInfo:
        member.mtime, member.uid, member.gid, member.uname, member.gname = 0, 0, 0, "", ""
        return member

    target = out_dir / f"{topology}-deps.tar.gz"
    staged = target.with_name(f".{target.name}.tmp")
    with open(staged, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz, \
            tarfile.open(fileobj=gz, mode="w") as tar:
        for path in sorted(unpack.rglob("*")):
            if path.is_file():
                tar.add(path, arcname=path.relative_to(unpack).as_posix(), filter=normalized)
    os.replace(staged, target)
    return target
