"""The README's first step, ``pip install -e '.[dev]'``, timed in fresh virtualenvs.

Each variant installs a copy of this checkout's files (tracked and modified, as the working
tree has them) into a virtualenv of its own, one after the other, and the figures are ratios
between variants of the same run (issue 48: the install <= 150 s, beside the same install with
compiling off):

- ``compiled``: as the README says (the hot-path modules compiled, ``setup.py``);
- ``pure``: the same with ``STORMSHIFT_PURE=1`` (nothing compiled);
- ``rev:REV``: the checkout's ``setup.py`` and ``stormshift/native.py`` as of git REV (how the
  compile step was built before), everything else as the working tree.

``--cache cold`` passes ``--no-cache-dir`` (a fresh machine: every download and pyspark's wheel
build paid); ``warm`` uses pip's cache (a second install on the same machine). After each
install the compile step alone is timed again in the same tree (``setup.py build_ext
--inplace``), so the compile's share of the install is printed beside it::

    python bench/install_time.py [--variants compiled,pure,rev:HEAD~1] [--cache cold|warm]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def copy_tree(dest: Path, rev: str | None) -> None:
    """The working tree's tracked files (edits included); setup.py and native.py from ``rev``."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, check=True,
                            capture_output=True).stdout.decode().split("\0")
    for rel in filter(None, listed):
        src = REPO / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    if rev:
        for rel in ("setup.py", "stormshift/native.py"):
            old = subprocess.run(["git", "show", f"{rev}:{rel}"], cwd=REPO, check=True,
                                 capture_output=True).stdout
            (dest / rel).write_bytes(old)


def timed(cmd: list[str], cwd: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(cmd, check=False, cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.stderr.write(done.stdout[-3000:] + done.stderr[-3000:])
        raise SystemExit(f"failed: {' '.join(cmd)}")
    return time.perf_counter() - start


def install(variant: str, cache: str, work: Path) -> dict[str, float | int | str]:
    tree = work / variant.replace(":", "_")
    tree.mkdir()
    copy_tree(tree, variant[4:] if variant.startswith("rev:") else None)
    venv = tree / ".venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "STORMSHIFT_PURE", "PIP_NO_CACHE_DIR")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(venv)
    if variant == "pure":
        env["STORMSHIFT_PURE"] = "1"
    pip = [str(venv / "bin" / "pip"), "install", "-q", "-e", ".[dev]"]
    if cache == "cold":
        pip.insert(2, "--no-cache-dir")
    total = timed(pip, tree, env)
    built = len(list((tree / "stormshift").rglob("*.so")))
    compile_s = 0.0
    if variant != "pure":
        compile_s = timed([str(venv / "bin" / "python"), "setup.py", "-q", "build_ext",
                           "--inplace"], tree, env)
    return {"variant": variant, "install_s": round(total, 1), "compile_s": round(compile_s, 1),
            "modules_compiled": built}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--variants", default="pure,compiled",
                   help="comma-separated: compiled, pure, rev:REV (run in this order)")
    p.add_argument("--cache", choices=["cold", "warm"], default="cold")
    args = p.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory(prefix="stormshift-install-") as tmp:
        for variant in args.variants.split(","):
            row = install(variant, args.cache, Path(tmp))
            rows.append(row)
            print(row, flush=True)
    pure = next((r for r in rows if r["variant"] == "pure"), None)
    print(f"\ncpus {os.cpu_count()}, pip cache {args.cache}")
    print(f"{'variant':<16} {'install s':>10} {'/ pure':>8} {'compile s':>10} {'modules':>8}")
    for r in rows:
        ratio = f"{float(r['install_s']) / float(pure['install_s']):.2f}" if pure else "-"
        print(f"{r['variant']:<16} {r['install_s']:>10} {ratio:>8} {r['compile_s']:>10} "
              f"{r['modules_compiled']:>8}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
