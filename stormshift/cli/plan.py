"""``stormshift plan PATH``: before a restart on existing state, what the new code does to it.

Per bolt with committed state: attributes kept, added (from ``initialize()``), removed
(dropped, a warning) and changed in type (refused: ``run`` would exit 2 before any
batch), and whether the bolt's ``migrate_state`` hook rewrites it. Reads only. The
run's own ``--checkpoint`` (or ``STORMSHIFT_STATE_HMAC_KEY`` / ``state.hmac_key``)
gives the key that verifies the snapshots.
"""

from __future__ import annotations

import json

import click
from rich.console import Console
from rich.padding import Padding

from stormshift.cli.options import (
    checkpoint_option,
    json_option,
    load_graph,
    par_option,
    redis_option,
    topology_options,
)
from stormshift.display import console

__all__ = ["plan_command"]


@click.command("plan")
@click.argument("path")
@topology_options
@par_option
@checkpoint_option("The run's checkpoint dir (its key verifies the stored snapshots).")
@click.option("--namespace", metavar="NS", help="The run's state namespace (default: the "
                                                "topology's name).")
@redis_option()
@json_option
def plan_command(path: str, name: str | None, environment: str | None,
                 config_options: tuple[str, ...], pars: tuple[str, ...],
                 checkpoint_dir: str | None, namespace: str | None, redis_url: str | None,
                 as_json: bool) -> None:
    """Show what the code at PATH does to the state a run left in Redis (exit 2: refused)."""
    from stormshift.engines.spark import refusal_text, stored_upgrade_plan
    from stormshift.state.reach import reach

    graph = load_graph(path, name, environment, config_options, pars)
    reach(redis_url)  # a refused password or a server away: one line, exit 2
    namespace, plan = stored_upgrade_plan(graph, checkpoint_dir=checkpoint_dir,
                                          redis_url=redis_url, namespace=namespace)
    out = console()  # words wrapped at the width (piped: 80), a name or number never split
    if as_json:
        out.print_json(json.dumps({"namespace": namespace, "txid": plan.txid,
                                   "components": [c.to_dict() for c in plan.components]}))
    else:
        out.print(f"plan for {graph.name} on namespace {namespace} "
                  f"(committed txid {plan.txid}):", markup=False, highlight=False)
        if not plan.components:
            out.print("  no bolt has stored state: nothing to carry over", markup=False)
        for c in plan.components:
            verdict = "REFUSED" if c.refused else "rewritten" if c.rewrite else "restored as is"
            parts = [f"kept {', '.join(sorted(c.kept)) or '-'}",
                     f"added {', '.join(sorted(c.added)) or '-'} (from initialize())"]
            if c.removed:
                parts.append(f"removed {', '.join(sorted(c.removed))} (dropped)")
            for _, ref in sorted(c.refused.items()):
                parts.append(f"changed {ref.name}: {ref.stored} -> {ref.fresh} (refused)")
            hook = " via migrate_state()" if c.migrated else ""
            out.print(Padding(f"{c.component} ({c.tasks} tasks, {verdict}{hook}): "
                              + "; ".join(parts), (0, 0, 0, 2), expand=False))
        for text in plan.warnings():
            out.print(f"warning: {text}")
    if plan.refused:
        Console(stderr=True).print(f"error: {refusal_text(plan.refused[0])}", markup=False,
                                   highlight=False, soft_wrap=True)
        raise click.exceptions.Exit(2)
