"""Hand-back: production goes back to the legacy, from where the port stopped.

Numbered steps (a hand-back interrupted at any step is run again whole: every write is
an absolute value, so a second pass writes the same):

1. the cut-over record must be live (or a hand-back under way);
2. the port stops at a batch boundary (``stormshift stop``'s request; its lease released);
3. where it stands: the offsets of its last committed batch (``port.py``);
4. its seeded state (state maps; dict attributes merged over the tasks' committed
   snapshots) is written into the legacy's store in the legacy's format (the seed's
   inverse, one MULTI/EXEC per store);
5. its position is committed where the legacy resumes from (its consumer group, position
   store, or printed);
6. the record says ``handed_back``, with that position and txid: a later cut-over seeds
   again from the legacy's store.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from stormshift.cutover.legacy import write_position, write_store
from stormshift.cutover.plan import position_spec, seeds_of
from stormshift.cutover.port import port_position, port_values
from stormshift.cutover.record import HANDED_BACK, LIVE, read_record, write_record
from stormshift.errors import CutoverRefused
from stormshift.state.client import Redis
from stormshift.topology.graph import TopologyGraph

__all__ = ["HANDING_BACK", "handback"]

HANDING_BACK = "handing_back"


def _stop(r: Redis, ns: str, timeout_secs: float, say: Callable[[str], None]) -> None:
    from stormshift.state.keys import lease_key
    from stormshift.state.lease import request_stop

    _now, holder, asked = request_stop(r, ns)
    if not asked or holder is None:
        return
    deadline = time.monotonic() + timeout_secs
    while time.monotonic() < deadline:
        held = r.hget(lease_key(ns), "holder")
        if held is None or held.decode() != holder.token:
            say(f"stopped the port (host {holder.host}, pid {holder.pid}) at a batch boundary")
            return
        time.sleep(0.2)
    raise CutoverRefused(f"handback: the port of namespace {ns!r} (pid {holder.pid}) has not "
                         f"stopped after {timeout_secs:g} s; nothing was handed back. Run "
                         "`stormshift handback` again with a longer --timeout")


def handback(graph: TopologyGraph, r: Redis, ns: str, timeout_secs: float,
             say: Callable[[str], None]) -> dict[str, Any]:
    # Step 1.
    record = read_record(r, ns)
    if record is None or record["status"] not in (LIVE, HANDING_BACK):
        raise CutoverRefused(f"handback refused: namespace {ns!r} has no live cut-over "
                             "(`stormshift cutover status` shows it); nothing was written")
    # Step 2.
    _stop(r, ns, timeout_secs, say)
    record["status"] = HANDING_BACK
    write_record(r, ns, record)
    # Step 3.
    committed, position = port_position(r, ns, record)
    # Step 4.
    written = {}
    for seed in seeds_of(graph.config, {b.name for b in graph.bolts}):
        values = port_values(graph, r, ns, seed, record)
        write_store(seed, r, graph.component(seed.component).config, values)
        written[f"{seed.component}.{seed.map}"] = len(values)
        say(f"state: {seed.component}.{seed.map} ({len(values)} keys) written to the legacy's "
            f"{seed.store} {seed.name!r}")
    # Step 5.
    for spout, offsets in sorted(position.items()):
        conf = graph.component(spout).config
        spec = position_spec(conf, spout)
        write_position(spec, conf, r, offsets)
        where = next((f"{k} {v!r}" for k, v in spec.items() if k != "url"), "?")
        say(f"position: {spout} resumes at {offsets} (written to {where})")
    # Step 6.
    record.update(status=HANDED_BACK, handback={
        "at_ms": int(time.time() * 1000), "txid": committed, "position": position,
        "state": written})
    write_record(r, ns, record)
    say(f"handed back namespace {ns!r} at txid {committed}: start the legacy topology now")
    return {"namespace": ns, "txid": committed, "position": position, "state": written}
