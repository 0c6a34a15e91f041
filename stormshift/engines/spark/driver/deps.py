"""The project's Python dependencies, shipped by ``stormshift submit`` as one zip.

``pip wheel -r REQUIREMENTS`` (the user's pip config: an index, or ``PIP_NO_INDEX`` and
``PIP_FIND_LINKS`` for a wheelhouse; nothing else is fetched) builds or copies a wheel
per requirement and dependency. Pure-Python wheels (``py3-none-any``) are unpacked
into ``<topology>-deps.zip``, which goes to ``--py-files`` beside the project zip, so
executors without the packages import them from the zip. Distributions stormshift
itself needs (pyspark, redis, streamparse, pyarrow, ...) are left out: the cluster's
Python has them already. A platform wheel (C extensions) cannot be imported from a
zip: it is refused, naming the package and the fix.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path

from stormshift.engines.spark.driver.zips import write_zip
from stormshift.errors import TopologyError

__all__ = ["build_deps_zip", "requirements_of", "stormshift_requirements"]

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


def _wheel_name(wheel: Path) -> tuple[str, bool]:
    """``(distribution, pure)`` from a wheel's file name."""
    parts = wheel.name[: -len(".whl")].split("-")
    return _canonical(parts[0]), parts[-1] == "any" and parts[-2] == "none"


def build_deps_zip(requirements: Path, out_dir: Path, topology: str) -> Path:
    """Wheels of ``requirements`` unpacked into ``out_dir/<topology>-deps.zip``."""
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
    unpack = wheels / "unpacked"
    for wheel in sorted(wheels.glob("*.whl")):
        name, pure = _wheel_name(wheel)
        if name in skip:
            continue
        if not pure:
            raise TopologyError(
                f"requirement {name} ({wheel.name}) has compiled code: Python cannot import it "
                "from a zip shipped with --py-files",
                fix=f"install {name} in the cluster's Python, or drop it from {requirements.name}")
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(unpack)
    entries = [(f, f.relative_to(unpack).as_posix()) for f in sorted(unpack.rglob("*"))
               if f.is_file()] if unpack.is_dir() else []
    return write_zip(out_dir / f"{topology}-deps.zip", entries)
