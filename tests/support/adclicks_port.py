"""adclicks, its independent oracle (``examples/adclicks/expected.py``) and a port of it
with one deliberate change, for the shadow tests (tests/test_shadow.py,
tests/test_shadow_state.py).
"""

from __future__ import annotations

import functools
import importlib.util
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


ADCLICKS = REPO / "examples" / "adclicks"


_PORTED: list[Path] = []



def ported_adclicks() -> Path:
    """examples/adclicks copied with one bolt deliberately changed: each event's cost is
    rounded down to whole cents before it is added, so advertisers with CPM impressions
    (fractions of a cent) are billed less; CPC-only advertisers agree."""
    if not _PORTED:
        import shutil
        import tempfile

        root = Path(tempfile.mkdtemp(prefix="adclicks-port-")) / "adclicks"
        shutil.copytree(ADCLICKS, root, ignore=shutil.ignore_patterns("__pycache__"))
        spend = root / "src" / "bolts" / "spend.py"
        text = spend.read_text(encoding="utf-8")
        changed = text.replace("cost = tup.values[7]", "cost = tup.values[7] // 10_000 * 10_000")
        assert changed != text, "examples/adclicks/src/bolts/spend.py changed: update the port"
        spend.write_text(changed, encoding="utf-8")
        _PORTED.append(root)
    return _PORTED[0]


#: enough for every report to have keys, two Spark batches at ``batch_max_tuples=750``, Storm's
#: replays and a crash at tuple 500 of one task; each unit shadow runs both sides on it
EVENTS = 1500


SMALL = {"adclicks.events": EVENTS}



def oracle() -> Any:
    loaded = importlib.util.spec_from_file_location("adclicks_expected", ADCLICKS / "expected.py")
    assert loaded is not None and loaded.loader is not None
    module = importlib.util.module_from_spec(loaded)
    sys.modules[loaded.name] = module
    loaded.loader.exec_module(module)
    return module



def rounded_advertisers() -> set[str]:
    """Advertisers whose spend changes when each cost is rounded down to cents (the port's
    change), computed from the log lines alone."""
    mod = oracle()
    exact: dict[str, int] = {}
    rounded: dict[str, int] = {}
    for line in mod.generated_lines(7, EVENTS):
        rec = mod.parse_record(line)
        if rec is None:
            continue
        adv = rec["advertiser_id"]
        exact[adv] = exact.get(adv, 0) + rec["cost"]
        rounded[adv] = rounded.get(adv, 0) + rec["cost"] // 10_000 * 10_000
    return {adv for adv in exact if exact[adv] != rounded[adv]}


@functools.cache
def changed_port_shadow() -> Any:
    """The local shadow of adclicks (``SMALL``) against :func:`ported_adclicks`, no faults:
    run once per session, read (never changed) by the tests of its streams and its state."""
    from stormshift.shadow import run_shadow
    from stormshift.topology.loader import load_topology

    graph = load_topology(ADCLICKS, overrides=SMALL)
    port = load_topology(ported_adclicks(), overrides=SMALL)
    return run_shadow(graph, port_graph=port, port_engine="local")
