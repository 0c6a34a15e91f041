"""The conformance suite's one hook: a failed case's report gets a section with the seed
that reproduces its batch cuts (an assertion says it too; this covers a run that raised)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from conformance.harness import SEED, SEED_ENV


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: Any) -> Iterator[None]:
    report = yield
    if report.failed and item.get_closest_marker("conformance") is not None:
        report.sections.append(("conformance seed", f"{SEED_ENV}={SEED}"))
    return report
