"""``stormshift inspect PATH``: the graph stormshift sees (components, par, streams, groupings)
and the stages a Spark run of it executes (fused chains, heads on their spout's partitions)."""

from __future__ import annotations

import click

from stormshift.cli.options import json_option, load_graph, par_option, topology_options
from stormshift.display import console, json_text

__all__ = ["inspect_command"]


@click.command("inspect")
@click.argument("path")
@topology_options
@par_option
@click.option("--format", "fmt", type=click.Choice(["graph", "table", "dot", "svg"]),
              default="graph", show_default=True, help=(
                  "graph: each component with its inputs and streams, lines of at most 80 "
                  "characters; table: the same as tables; dot: Graphviz (what sparse "
                  "visualize gave); svg: a drawing of the graph, one self-contained file."))
@json_option
def inspect_command(path: str, name: str | None, environment: str | None,
                    config_options: tuple[str, ...], pars: tuple[str, ...], fmt: str,
                    as_json: bool) -> None:
    """Print a topology's graph: components, par, streams and fields, groupings (with
    --par, the effective par a run with the same --par uses), and the Spark plan: which
    bolts run fused behind which stage head, which heads run on their spout's partitions
    (none with -o stormshift.fuse=false)."""
    from stormshift.display import visible
    from stormshift.engines.spark import spark_plan
    from stormshift.topology.graph_views import graph_dot, graph_lines, graph_svg
    from stormshift.topology.render import graph_to_dict, render_graph

    graph = load_graph(path, name, environment, config_options, pars)
    plan = spark_plan(graph)
    data = graph_to_dict(graph, plan)
    if as_json:
        click.echo(json_text(data, indent=2))
    elif fmt == "table":
        console().print(render_graph(graph, plan))
    elif fmt == "dot":
        click.echo(visible(graph_dot(data)), nl=False)
    elif fmt == "svg":
        click.echo(visible(graph_svg(data)), nl=False)
    else:
        click.echo("\n".join(visible(line) for line in graph_lines(data)))
