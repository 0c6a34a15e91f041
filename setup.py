"""Compiles stormshift's per-tuple hot path with Cython (``stormshift/native.py`` says
which modules and how a stale build is caught). Everything else is in pyproject.toml.

Optional by design: without Cython, without a C compiler, or with
``STORMSHIFT_PURE=1`` the install is pure Python and behaves the same, slower.
"""

import json
import os
import runpy

from setuptools import setup

HERE = os.path.dirname(os.path.abspath(__file__))
native = runpy.run_path(os.path.join(HERE, "stormshift", "native.py"))


def hot_path_extensions() -> list:
    record_path = os.path.join(HERE, "stormshift", native["RECORD"])
    if os.environ.get(native["PURE_ENV"]):
        return []
    try:
        from Cython.Build import cythonize
        from setuptools import Extension
    except ImportError:
        return []
    modules = native["COMPILED"]
    sources = {m: os.path.relpath(native["source_path"](HERE, m), HERE) for m in modules}
    with open(record_path, "w", encoding="utf-8") as f:
        json.dump({m: native["source_digest"](os.path.join(HERE, p)) for m, p in sources.items()},
                  f, indent=1, sort_keys=True)
    extensions = cythonize(
        [Extension(m, [sources[m]]) for m in modules],
        compiler_directives={"language_level": 3, "annotation_typing": False, "binding": True},
        build_dir=os.path.join("build", "cython"),
        quiet=True,
    )
    for ext in extensions:
        ext.optional = True  # a failed compile leaves that module pure Python
    return extensions


setup(ext_modules=hot_path_extensions())
