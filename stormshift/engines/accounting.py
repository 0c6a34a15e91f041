"""Where every tuple went: the bookkeeping identity of a run (``RunSummary.accounting``).

Per bolt: every tuple it got is *settled* exactly once -- acked, or
dead-lettered (Spark engine; a tuple retried and then acked counts once,
its failed attempts show in ``failed``) / failed (local engine: Storm has no
dead-letter store, a failed tuple goes back to its spout). So
``in == acked + dead_lettered`` (local: ``acked + failed``); a gap is tuples
neither acked nor dead-lettered: a bolt that never acks (``auto_ack = False``
and no ``ack()``), or a BatchingBolt holding tuples it has not flushed yet.

Local engine, per bolt, delivery: every tuple queued for a bolt's tasks
(``received``) was executed (``in``), dropped with a crashed task's queue
(``lost``) or is still queued when the run ended (``queued``):
``received == in + lost + queued``. Lost tuples are accounted for, not hidden:
the identity holds, and the CLI exits non-zero for them (a failure, like a
dead letter).

Topology level: the *first-hop* bolts (every input is a spout) get each spout
emit once per subscription (``all`` grouping: once per task), plus the dead
letters redriven into them; that is the run's *input*, and it must equal what
they processed (acked) plus what they dead-lettered, plus what was *in flight*
(inside a bolt's call) when the run was stopped. Spouts with several
output streams make the expected count unknown (emits are not counted per
stream); then only the per-bolt identities are checked.

Per built-in spout (both engines): every record it read became a new tuple or
was dead-lettered at the spout (``decode`` / ``value``: ``spouts/values.py``):
``read == emitted + dead_lettered``, where emitted counts new tuples (a replay of
a failed tuple reads nothing); and a bounded source with records left
(``unread``) when the run said its input was done never "holds": a spout that
stopped early must not pass for one that read everything.

What failed past the first hop (a second bolt raising, calling ``fail``,
dead-lettering) does not change the first hop's identity, so the lines name
it beside it (``downstream``), and on the local engine the spouts' failed
trees, so a "holds" never reads as "nothing failed".
"""

from __future__ import annotations

from typing import Any

from stormshift.topology.graph import TopologyGraph

__all__ = ["FirstHop", "accounting", "accounting_lines", "first_hop"]

# bolt -> ((spout, deliveries per emit), ...), or None when a spout has several streams
FirstHop = dict[str, "tuple[tuple[str, int], ...] | None"]


def first_hop(graph: TopologyGraph) -> FirstHop:
    """The first-hop bolts of ``graph`` and how many deliveries each spout emit makes."""
    from stormshift.topology.graph import GroupingKind

    out: FirstHop = {}
    for comp in graph.bolts:
        sources = [graph.component(i.source) for i in comp.inputs]
        if not sources or not all(s.is_spout for s in sources):
            continue
        if any(len(s.outputs) != 1 for s in sources):
            out[comp.name] = None
            continue
        out[comp.name] = tuple(
            (i.source, comp.par if i.grouping.kind is GroupingKind.ALL else 1) for i in comp.inputs
        )
    return out


def accounting(summary: Any) -> dict[str, Any]:
    """``{"bolts": {name: {...}}, "topology": {...}}`` (see module doc); JSON-ready."""
    local = summary.engine == "local"
    bolts: dict[str, dict[str, Any]] = {}
    for s in summary.components.values():
        if s.kind == "spout":
            continue
        settled = s.acks + (s.fails if local else s.dead_lettered) + s.in_flight
        tracked = local and bool(s.received or s.lost)  # deliveries counted (local engine runs)
        delivered = s.received == s.tuples_in + s.lost + s.queued if tracked else True
        bolts[s.name] = {
            "in": s.tuples_in, "acked": s.acks, "failed": s.fails,
            "dead_lettered": s.dead_lettered, "redriven": s.redriven,
            "lost": s.lost, "received": s.received if tracked else s.tuples_in,
            "queued": s.queued, "in_flight": s.in_flight,
            "unsettled": s.tuples_in - settled, "holds": s.tuples_in == settled and delivered,
        }
    spouts = spout_reads(summary)
    hop = summary.first_hop
    names = [n for n in hop if n in bolts]
    top: dict[str, Any] = {
        "spout_tuples": sum(s.tuples_out for s in summary.components.values() if s.kind == "spout"),
        "first_hop_bolts": names,
        "input": sum(bolts[n]["in"] for n in names),
        "redriven": sum(bolts[n]["redriven"] for n in names),
        "processed": sum(bolts[n]["acked"] for n in names),
        "dead_lettered": sum(bolts[n]["dead_lettered"] for n in names),
        "failed": sum(bolts[n]["failed"] for n in names),
        "in_flight": sum(bolts[n]["in_flight"] for n in names),
        "lost": sum(b["lost"] for b in bolts.values()),
        "given_up": sum(s.gave_up for s in summary.components.values() if s.kind == "spout"),
        "spout_acks": sum(s.acks for s in summary.components.values() if s.kind == "spout"),
        "spout_fails": sum(s.fails for s in summary.components.values() if s.kind == "spout"),
    }
    # Bolts past the first hop that failed / dead-lettered tuples: the first hop's identity
    # holds without them, so they are named beside it (never a "holds" that hides them).
    top["downstream"] = {n: b["failed"] if local else b["dead_lettered"]
                         for n, b in bolts.items()
                         if n not in hop and (b["failed"] if local else b["dead_lettered"])}
    expected: int | None = top["redriven"]
    for n in names:
        spec = hop[n]
        if spec is None or expected is None:
            expected = None
            continue
        expected += sum(summary.components[sp].tuples_out * k for sp, k in spec if sp in summary.components)
    top["expected_input"] = expected
    settled = (top["processed"] + (top["failed"] if local else top["dead_lettered"])
               + top["in_flight"])
    top["spout_dead_lettered"] = sum(s["dead_lettered"] for s in spouts.values())
    top["unread"] = sum(s["unread"] for s in spouts.values())
    top["holds"] = (
        top["input"] == settled
        and (expected is None or expected == top["input"])
        and all(b["holds"] for b in bolts.values())
        and all(s["holds"] for s in spouts.values())
    )
    return {"bolts": bolts, "spouts": spouts, "topology": top}


def spout_reads(summary: Any) -> dict[str, dict[str, Any]]:
    """Per spout that counts the records it reads (built-in spouts): read, emitted (new
    tuples), dead-lettered at the spout, unread, and whether the identity holds."""
    out: dict[str, dict[str, Any]] = {}
    for s in summary.components.values():
        read = getattr(s, "records_read", 0)
        if s.kind != "spout" or not (read or s.dead_lettered or getattr(s, "unread", 0)):
            continue
        emitted = s.tuples_out - s.replays
        unread = getattr(s, "unread", 0)
        out[s.name] = {"read": read, "emitted": emitted, "dead_lettered": s.dead_lettered,
                       "unread": unread,
                       "holds": read == emitted + s.dead_lettered and not unread}
    return out


def accounting_lines(summary: Any) -> list[str]:
    """The lines ``print_summary`` shows: the topology identity, then every bolt where it fails."""
    acc = accounting(summary)
    top, local = acc["topology"], summary.engine == "local"
    if not top["first_hop_bolts"]:
        return []
    what = "failed" if local else "dead-lettered"
    settled = top["failed"] if local else top["dead_lettered"]
    source = ""
    if top["redriven"]:
        source = f" ({top['input'] - top['redriven']:,} from spouts + {top['redriven']:,} redriven)"
    verdict = "holds" if top["holds"] else "does NOT hold"
    hop = " at the first hop" if top["downstream"] else ""
    flight = f" + in flight {top['in_flight']:,}" if top["in_flight"] else ""
    head = (f"accounting: input {top['input']:,}{source} = processed {top['processed']:,} "
            f"+ {what} {settled:,}{flight}{hop} ({verdict})")
    lines = [head]
    for name in top["downstream"]:
        b = acc["bolts"][name]
        lines.append(f"  then downstream: {name} in {b['in']:,} = acked {b['acked']:,} + "
                     f"{what} {b['failed'] if local else b['dead_lettered']:,}")
    if local and top["spout_fails"]:
        lines.append(f"  spout trees: {top['spout_acks']:,} completed, {top['spout_fails']:,} "
                     "failed (a bolt failed them, or they timed out)")
    if top["expected_input"] is not None and top["expected_input"] != top["input"]:
        lines.append(f"  spouts emitted {top['spout_tuples']:,}: first-hop bolts should have got "
                     f"{top['expected_input']:,}, got {top['input']:,}")
    if top["in_flight"] or any(b["in_flight"] for b in acc["bolts"].values()):
        busy = ", ".join(f"{n} {b['in_flight']:,}" for n, b in acc["bolts"].items()
                         if b["in_flight"])
        lines.append(f"  in flight when the run stopped: {busy} (inside the bolt's call, "
                     "not yet acked)")
    if top["lost"]:
        lines.append(f"  lost {top['lost']:,}: queued for tasks that crashed (Storm drops a dead "
                     "worker's queue; their spout trees time out and replay)")
    if top["given_up"]:
        lines.append(f"  given up {top['given_up']:,}: spout tuples that failed more than "
                     "stormshift.max_replays times, no longer replayed")
    for name, b in acc["bolts"].items():
        if b["holds"]:
            continue
        if local and b["received"] != b["in"] + b["lost"] + b["queued"]:
            lines.append(f"  {name}: received {b['received']:,} != in {b['in']:,} + lost "
                         f"{b['lost']:,} + still queued {b['queued']:,}")
            continue
        gap = b["unsettled"]
        why = (f"{gap:,} neither acked nor {what}: never acked, or still batched" if gap > 0
               else f"{-gap:,} settled twice")
        lines.append(f"  {name}: in {b['in']:,} != acked {b['acked']:,} + {what} "
                     f"{b['failed'] if local else b['dead_lettered']:,} ({why})")
    for name, sp in acc["spouts"].items():
        if sp["holds"] and not sp["dead_lettered"]:
            continue  # every record read became a tuple: nothing to add to the first hop
        verdict = "holds" if sp["holds"] else "does NOT hold"
        line = (f"  spout {name}: read {sp['read']:,} = emitted {sp['emitted']:,} + "
                f"dead-lettered at the spout {sp['dead_lettered']:,} ({verdict})")
        if sp["unread"]:
            line += f"; {sp['unread']:,} records left unread in a source the run called done"
        lines.append(line)
    reasons = getattr(summary, "dead_letter_reasons", {})
    for name, counts in reasons.items():
        if counts:
            parts = ", ".join(f"{r} {n:,}" for r, n in sorted(counts.items()))
            lines.append(f"  {name} dead letters by reason: {parts}")
    return lines
