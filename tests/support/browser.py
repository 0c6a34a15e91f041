"""A real headless Chromium for the tests that check a page or a drawing as a browser shows it
(the shadow report, ``inspect --format svg``). Missing, it fails with the line that installs it:
never a skip (the README's "Needs" line and ``.ci/prerequisites`` list it)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

__all__ = ["chromium", "render_dom"]


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.fail("this test needs a real headless browser: `apt-get install -y chromium` "
                    "(Debian; .ci/prerequisites installs it) and rerun")
    return found


def render_dom(page: Path, profile: Path) -> str:
    """The DOM Chromium built from ``page`` (after its layout), as serialized text."""
    done = subprocess.run(
        [chromium(), "--headless", "--no-sandbox", "--disable-gpu",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--no-first-run", f"--user-data-dir={profile}", "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout
