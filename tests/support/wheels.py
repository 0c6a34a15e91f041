"""A dependency as a team's internal package ships it: a one-module wheel, and the
ledger project that imports it (``tests/fixtures/operate/ledger``).

Shared by tests/test_submit_deps.py (what ``submit`` ships) and
tests/test_cluster.py (it runs on a standalone cluster's executors).
"""

from __future__ import annotations

import zipfile
from pathlib import Path

LEDGER = Path(__file__).resolve().parents[1] / "fixtures" / "operate" / "ledger"


RATECARD = '''"""Per-account rates, as a team's internal package would hold them."""

RATES = {f"a{i}": i + 1 for i in range(7)}



def rate(account):
    return RATES[account]
'''



def make_wheel(where: Path, name: str, files: dict[str, str], tag: str = "py3-none-any") -> Path:
    """A minimal wheel file, as ``pip wheel`` of a one-module package makes."""
    wheel = where / f"{name}-0.1-{tag}.whl"
    info = f"{name}-0.1.dist-info"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
        archive.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
        archive.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\n"
                                          f"Root-Is-Purelib: {'true' if 'none' in tag else 'false'}\n"
                                          f"Tag: {tag}\n")
        archive.writestr(f"{info}/RECORD", "")
    return wheel
