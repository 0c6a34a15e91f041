"""Compiles stormshift's per-tuple hot path with Cython (``stormshift/native.py`` says
which modules and how a stale build is caught). Everything else is in pyproject.toml.

Optional by design: without Cython, without a C compiler, or with
``STORMSHIFT_PURE=1`` the install is pure Python and behaves the same, slower.
The build record (each module's source digest) is written after the build and
names only the modules that were built, and an in-place build first removes
every compiled module of the package: a failed compile leaves no stale one.
"""

import glob
import importlib.machinery
import json
import os
import runpy

from setuptools import setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
native = runpy.run_path(os.path.join(HERE, "stormshift", "native.py"))


def _source(module: str) -> str:
    return os.path.relpath(native["source_path"](HERE, module), HERE)


class BuildHotPath(build_ext):
    """build_ext that compiles the modules side by side and records what it built.

    Parallel by default (one compiler per core: ``build_ext -j`` still overrides), and
    without debug information: ``-g`` nearly doubled each module's compile time and changes
    no instruction of the code (``bench/install_time.py`` measures the install).
    """

    def finalize_options(self) -> None:
        if self.parallel is None:
            self.parallel = os.cpu_count() or 1
        super().finalize_options()

    def run(self) -> None:
        if self.inplace:
            for suffix in importlib.machinery.EXTENSION_SUFFIXES:
                pattern = os.path.join(HERE, "stormshift", "**", "*" + suffix)
                for path in glob.glob(pattern, recursive=True):
                    os.remove(path)
            record = os.path.join(HERE, "stormshift", native["RECORD"])
            if os.path.exists(record):
                os.remove(record)
        digests = {e.name: native["source_digest"](os.path.join(HERE, _source(e.name)))
                   for e in self.extensions}  # of the sources being compiled
        super().run()
        built = [e.name for e in self.extensions if os.path.exists(self.get_ext_fullpath(e.name))]
        if not built:
            return
        package_dir = os.path.dirname(self.get_ext_fullpath(built[0]))
        for _ in range(built[0].count(".") - 1):
            package_dir = os.path.dirname(package_dir)
        with open(os.path.join(package_dir, native["RECORD"]), "w", encoding="utf-8") as f:
            json.dump({m: digests[m] for m in built}, f, indent=1, sort_keys=True)


def hot_path_extensions() -> list:
    if os.environ.get(native["PURE_ENV"]):
        return []
    try:
        from Cython.Build import cythonize
        from setuptools import Extension
    except ImportError:
        return []
    extensions = cythonize(
        [Extension(m, [_source(m)]) for m in native["COMPILED"]],
        compiler_directives={"language_level": 3, "annotation_typing": False, "binding": True},
        build_dir=os.path.join("build", "cython"),
        quiet=True,
        nthreads=os.cpu_count() or 1,
    )
    for ext in extensions:
        ext.optional = True  # a failed compile leaves that module pure Python
        ext.extra_compile_args = [*ext.extra_compile_args, "-g0"]  # after Python's own -g
    return extensions


setup(ext_modules=hot_path_extensions(), cmdclass={"build_ext": BuildHotPath})
