"""``stormshift cutover status``: both sides at a glance, and the target checked.

Per spout: the legacy's recorded position and the port's (its last committed batch),
each with its lag behind the source's head (the spout's own ``replay_partition_lag``).
The port's last commit (txid, lease renewal). The live comparison since the cut: every
``cutover.sink`` target read back and compared, key by key, with the port's state map
of the same bolt (the seeded map or attribute) -- equal keys, differing keys, keys on one side only.
"""

from __future__ import annotations

import time
from typing import Any

from stormshift.cutover.legacy import read_position
from stormshift.cutover.plan import position_spec, seeds_of, to_port
from stormshift.cutover.port import port_position, port_values
from stormshift.cutover.record import history, read_record
from stormshift.state.client import Redis
from stormshift.topology.graph import TopologyGraph

__all__ = ["compare_target", "lag_of", "status"]


def lag_of(graph: TopologyGraph, spout: str, offsets: dict[str, Any]) -> int | None:
    """Records of the source after ``offsets`` now (None when it cannot tell)."""
    from stormshift.adapters.host import SpoutHost

    try:
        host = SpoutHost(graph, spout, 0)
        host.open()
        instance = host.instance
        return sum(instance.replay_partition_lag(p, o)[0] for p, o in offsets.items())
    except Exception:  # noqa: BLE001 - a report: no figure rather than no status
        return None


def _target_values(target: Any, r: Redis) -> dict[str, Any]:
    import redis

    client: Any = redis.Redis.from_url(target.url) if target.url else r
    if target.shape == "zset":
        return {k.decode(): v for k, v in client.zrange(target.name, 0, -1, withscores=True)}
    if target.shape == "hash":
        return {k.decode(): v.decode() for k, v in client.hgetall(target.name).items()}
    keys = sorted(k for k in client.scan_iter(match=f"{target.name}*", count=1000)
                  if not k.decode().endswith(":stormshift:txid"))
    return {k.decode()[len(target.name):]: v.decode() for k, v in zip(keys, client.mget(keys))
            if v is not None}


def compare_target(target: Any, seed: Any, r: Redis, ns: str, graph: TopologyGraph,
                   record: Any = None) -> dict[str, int]:
    """``same`` / ``differ`` / ``target_only`` / ``port_only`` keys of one target."""
    port = {str(k): v for k, v in port_values(graph, r, ns, seed, record or {}).items()}
    held = {k: to_port(v, seed.value) for k, v in _target_values(target, r).items()}
    same = sum(1 for k in port if k in held and held[k] == port[k])
    return {"same": same, "differ": sum(1 for k in port if k in held) - same,
            "target_only": len(set(held) - set(port)), "port_only": len(set(port) - set(held))}


def status(graph: TopologyGraph, r: Redis, ns: str) -> dict[str, Any]:
    from stormshift.state.lease import read_lease
    from stormshift.state.target import parse_targets

    record = read_record(r, ns)
    if record is None:
        return {"namespace": ns, "status": None,
                "lines": [f"namespace {ns!r}: never cut over (`stormshift cutover PROJECT` does)"]}
    since = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(record["at_ms"] / 1000))
    lines = [(f"namespace {ns!r}: {record['status']} (cut over {since} UTC, seed txid "
             f"{record['seed_txid']}, checkpoint {record['checkpoint']})")]
    committed, port = port_position(r, ns, record)
    now_ms, holder = read_lease(r, ns)
    running = (f"running (pid {holder.pid} on {holder.host})" if holder is not None
               and holder.live(now_ms) else "not running")
    lines.append(f"port: last commit txid {committed}, {committed - record['seed_txid']} batches "
                 f"since the cut; {running}")
    sides: dict[str, Any] = {}
    for spout in graph.spouts:
        legacy = read_position(position_spec(spout.config, spout.name), spout.config, r)
        mine = port.get(spout.name, {})
        sides[spout.name] = {"legacy": legacy, "legacy_lag": lag_of(graph, spout.name, legacy),
                             "port": mine, "port_lag": lag_of(graph, spout.name, mine)}
        s = sides[spout.name]
        lines.append(f"{spout.name}: legacy at {legacy} (lag {s['legacy_lag']}); port at {mine} "
                     f"(lag {s['port_lag']})")
    seeds = {s.component: s for s in seeds_of(graph.config, {b.name for b in graph.bolts})}
    compared: dict[str, Any] = {}
    for stream, target in parse_targets(graph.config).items():
        seed = seeds.get(target.component)
        if seed is None:
            continue
        if target.shape == "kafka":
            lines.append(f"since the cut: target Kafka topic {target.name!r} is not read back")
            continue
        c = compared[stream] = compare_target(target, seed, r, ns, graph, record)
        lines.append(f"since the cut: target {target.shape} {target.name!r} vs "
                     f"{seed.component}.{seed.map}: {c['same']} keys equal, {c['differ']} differ, "
                     f"{c['port_only']} only in the port, {c['target_only']} only in the target")
    return {"namespace": ns, "status": record["status"], "record": record, "txid": committed,
            "positions": sides, "compared": compared, "history": history(r, ns), "lines": lines}
