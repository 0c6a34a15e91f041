"""Loading streamparse topologies: the three target forms, environments, config,
ordering, task ids, pickling, and importing component classes again elsewhere."""



from __future__ import annotations

import json
import pickle
import subprocess
import sys
from pathlib import Path

import pytest
from streamparse import Bolt, Grouping, Spout, Stream, Topology

from stormshift.errors import TopologyError
from stormshift.topology.graph import ComponentKind, FrozenDict, GroupingKind, TopologyGraph
from stormshift.topology.loader import import_component_class, load_topology

FIXTURES = Path(__file__).parent / "fixtures" / "topologies"
WORDCOUNT = FIXTURES / "wordcount"
MULTI = FIXTURES / "multi"
FILES = FIXTURES / "files"


def module_file(cls: type) -> Path:
    """Where the class was imported from (ask right after importing: later loads may evict it)."""
    return Path(sys.modules[cls.__module__].__file__ or "")


# -- (a) a Topology subclass -----------------------------------------------------
class TickSpout(Spout):
    outputs = [Stream(["tick"], "default"), Stream(["tick", "task"], "pinned", direct=True)]

    def next_tuple(self) -> None:
        self.emit([1])


class EchoBolt(Bolt):
    outputs = ["tick"]
    config = {"echo.prefix": ">"}

    def process(self, tup):  # type: ignore[no-untyped-def]
        self.emit([tup.values[0]])


class ClassTopology(Topology):
    config = {"topology.message.timeout.secs": 30, "echo.prefix": "topology"}
    ticks = TickSpout.spec(par=2)
    echo = EchoBolt.spec(inputs={ticks: Grouping.fields("tick")}, par=3)
    pinned = EchoBolt.spec(name="pinned-echo", inputs={ticks["pinned"]: Grouping.DIRECT}, config={})


def test_load_topology_class_copies_specs_into_graph() -> None:
    graph = load_topology(ClassTopology)
    assert graph.name == "ClassTopology"
    assert [c.name for c in graph] == ["ticks", "echo", "pinned-echo"]
    ticks = graph.component("ticks")
    assert ticks.kind is ComponentKind.SPOUT
    assert ticks.class_path == f"{__name__}.TickSpout"
    assert ticks.par == 2
    assert ticks.outputs["pinned"].direct is True
    assert ticks.outputs["default"].fields == ("tick",)
    echo = graph.component("echo")
    assert echo.kind is ComponentKind.BOLT
    assert echo.inputs[0].source == "ticks" and echo.inputs[0].stream == "default"
    assert echo.inputs[0].grouping.kind is GroupingKind.FIELDS
    assert echo.inputs[0].grouping.fields == ("tick",)
    # the class's own config beats the topology config; topology keys are inherited
    assert echo.config["echo.prefix"] == ">"
    assert echo.config["topology.message.timeout.secs"] == 30
    # an explicit empty component config keeps the topology's value
    assert graph.component("pinned-echo").config["echo.prefix"] == "topology"
    assert str(Path(__file__).parent) in graph.source_dirs
    assert import_component_class(echo.class_path, graph.source_dirs) is EchoBolt


class DirectDefaultSpout(Spout):
    outputs = [Stream(["x"], direct=True)]


class DirectDefaultTopology(Topology):
    source = DirectDefaultSpout.spec()
    reader = EchoBolt.spec(inputs=[source])


def test_subscribing_a_whole_spec_to_a_direct_default_stream_is_direct() -> None:
    graph = load_topology(DirectDefaultTopology)
    assert graph.component("reader").inputs[0].grouping.kind is GroupingKind.DIRECT


def test_component_class_defined_in_a_function_is_refused() -> None:
    class LocalSpout(Spout):
        outputs = ["x"]

    class LocalTopology(Topology):
        local = LocalSpout.spec()

    with pytest.raises(TopologyError) as info:
        load_topology(LocalTopology)
    assert info.value.component == "local"
    assert "inside a function" in str(info.value)
    assert info.value.fix is not None and "module level" in info.value.fix


def test_task_ids_follow_component_name_order() -> None:
    graph = load_topology(ClassTopology)
    # names sorted: echo (3 tasks), pinned-echo (1), ticks (2)
    assert graph.component("echo").task_ids == (1, 2, 3)
    assert graph.component("pinned-echo").task_ids == (4,)
    assert graph.component("ticks").task_ids == (5, 6)
    assert graph.total_tasks == 6


# -- (b) a topology file -----------------------------------------------------------
def test_load_file_with_components_defined_in_the_topology_file() -> None:
    graph = load_topology(MULTI / "topologies" / "inline.py")
    assert graph.name == "inline"
    assert graph.project_dir == str(MULTI)
    assert graph.working_dir == str(MULTI / "src")
    assert [c.class_path for c in graph] == [
        "inline.EventSpout",
        "inline.RouterBolt",
        "inline.SinkBolt",
    ]
    assert str(MULTI / "topologies") in graph.source_dirs
    sink = graph.component("sink")
    assert [(i.source, i.stream, i.grouping.kind) for i in sink.inputs] == [
        ("router", "routed", GroupingKind.DIRECT),
        ("events", "logins", GroupingKind.ALL),
    ]


def test_standalone_file_uses_its_own_dir() -> None:
    graph = load_topology(FILES / "ordering.py")
    assert graph.project_dir is None
    assert graph.working_dir == str(FILES)
    assert graph.source_dirs[0] == str(FILES)
    assert graph.environment is None


def test_file_with_several_topologies_needs_a_name() -> None:
    with pytest.raises(TopologyError) as info:
        load_topology(FILES / "two_topologies.py")
    assert "['Small', 'Large']" in str(info.value)
    assert "name='Small'" in str(info.value)
    assert load_topology(FILES / "two_topologies.py", name="Large").component("numbers").par == 4
    assert load_topology(FILES / "two_topologies.py", name="Small").total_tasks == 1
    with pytest.raises(TopologyError, match="no Topology subclass 'Medium'"):
        load_topology(FILES / "two_topologies.py", name="Medium")


# -- (c) a streamparse project dir ---------------------------------------------------
def test_project_with_one_topology_needs_no_name() -> None:
    graph = load_topology(WORDCOUNT)
    assert graph.name == "wordcount"
    assert graph.environment == "prod"  # the only env in config.json
    assert [c.class_path for c in graph] == [
        "spouts.words.WordSpout",
        "bolts.wordcount.WordCountBolt",
    ]
    assert graph.source_dirs[:2] == (str(WORDCOUNT / "src"), str(WORDCOUNT))
    # config.json env options < topology config
    assert graph.config["topology.max.spout.pending"] == 100
    assert graph.config["topology.message.timeout.secs"] == 30


def test_project_with_several_topologies_lists_them() -> None:
    with pytest.raises(TopologyError) as info:
        load_topology(MULTI)
    assert "['envpar', 'inline', 'plain', 'srcstyle']" in str(info.value)
    assert "-n envpar" in str(info.value)
    with pytest.raises(TopologyError, match="no topology 'nope'"):
        load_topology(MULTI, name="nope")


def test_both_import_styles_of_real_projects() -> None:
    plain = load_topology(MULTI, name="plain")
    src_style = load_topology(MULTI, name="srcstyle")
    assert plain.component("split").class_path == "bolts.split.SplitBolt"
    assert src_style.component("split").class_path == "src.bolts.split.SplitBolt"
    for graph in (plain, src_style):
        for component in graph:
            cls = import_component_class(component.class_path, graph.source_dirs)
            assert module_file(cls).is_relative_to(MULTI / "src")


def test_project_name_can_pick_a_class() -> None:
    graph = load_topology(MULTI, name="inline:Inline")
    assert graph.component("router").class_path == "inline.RouterBolt"


def test_par_dict_picks_the_environment() -> None:
    prod = load_topology(MULTI, name="envpar", environment="prod")
    beta = load_topology(MULTI, name="envpar", environment="beta")
    assert (prod.component("sentences").par, prod.component("split").par) == (2, 4)
    assert (beta.component("sentences").par, beta.component("split").par) == (1, 1)
    assert prod.environment == "prod"
    assert prod.component("count").par == beta.component("count").par == 2
    assert prod.config["topology.max.spout.pending"] == 500
    assert beta.config["topology.max.spout.pending"] == 50


def test_par_dict_without_environment_names_component_and_envs() -> None:
    with pytest.raises(TopologyError) as info:
        load_topology(MULTI, name="envpar")
    assert info.value.component == "sentences"
    assert "['beta', 'prod']" in str(info.value)
    assert "--environment" in str(info.value)


def test_environment_missing_from_par_dict() -> None:
    with pytest.raises(TopologyError) as info:
        load_topology(FILES / "env_par_no_project.py", environment="staging")
    assert info.value.component == "numbers"
    assert "'staging'" in str(info.value) and "['dev', 'prod']" in str(info.value)
    assert (
        load_topology(FILES / "env_par_no_project.py", environment="dev").component("numbers").par
        == 1
    )


def test_unknown_environment_lists_config_json_envs() -> None:
    with pytest.raises(TopologyError) as info:
        load_topology(MULTI, name="plain", environment="staging")
    assert "['beta', 'prod']" in str(info.value)


def test_config_precedence_env_options_topology_overrides_component() -> None:
    graph = load_topology(
        MULTI, name="plain", environment="prod", overrides={"topology.message.timeout.secs": 60}
    )
    assert dict(graph.config) == {
        "topology.max.spout.pending": 500,  # env options
        "shared.key": "from-topology",  # topology config beats env options
        "topology.message.timeout.secs": 60,  # overrides beat topology config
        "topo.only": 1,
    }
    split = graph.component("split").config
    assert split["shared.key"] == "from-component"  # component config wins
    assert split["split.separator"] == ","  # spec config replaces the class attribute
    assert split["topology.message.timeout.secs"] == 60
    assert dict(graph.component("count").config) == dict(graph.config)


# -- groupings, order, pickling ------------------------------------------------------
def test_every_grouping_kind_is_decoded() -> None:
    graph = load_topology(FILES / "groupings_all.py")
    decoded = {c.name: (c.inputs[0].stream, c.inputs[0].grouping) for c in graph.bolts}
    kinds = {name: (stream, g.kind, g.fields) for name, (stream, g) in decoded.items()}
    assert kinds == {
        "by_fields": ("default", GroupingKind.FIELDS, ("n",)),
        "by_fields_list": ("default", GroupingKind.FIELDS, ("n",)),
        "by_shuffle": ("default", GroupingKind.SHUFFLE, ()),
        "by_global": ("default", GroupingKind.GLOBAL, ()),  # fields=[] is GLOBAL
        "by_all": ("default", GroupingKind.ALL, ()),
        "by_none": ("default", GroupingKind.NONE, ()),
        "by_local": ("default", GroupingKind.LOCAL_OR_SHUFFLE, ()),
        "by_direct": ("direct_out", GroupingKind.DIRECT, ()),
        "by_default": ("default", GroupingKind.SHUFFLE, ()),
    }
    subs = graph.subscriptions("src", "direct_out")
    assert [(s.consumer, s.grouping.kind, s.par) for s in subs] == [
        ("by_direct", GroupingKind.DIRECT, 2)
    ]


def test_topological_order_spouts_first_then_declaration() -> None:
    graph = load_topology(FILES / "ordering.py")
    assert [c.name for c in graph] == ["zspout", "aspout", "late_bolt", "join", "b_side"]
    seen: set[str] = set()
    for component in graph:
        assert {i.source for i in component.inputs} <= seen
        seen.add(component.name)
    assert {c.name: c.task_ids for c in graph} == {
        "aspout": (1, 2, 3),
        "b_side": (4,),
        "join": (5,),
        "late_bolt": (6, 7),
        "zspout": (8,),
    }


def test_graph_pickle_round_trip() -> None:
    graph = load_topology(MULTI, name="inline")
    copy = pickle.loads(pickle.dumps(graph))
    assert isinstance(copy, TopologyGraph)
    assert copy == graph
    assert isinstance(copy.components, FrozenDict)
    assert isinstance(copy.component("events").outputs, FrozenDict)
    assert copy.component("sink").inputs == graph.component("sink").inputs
    with pytest.raises(TypeError):
        copy.components["x"] = None  # type: ignore[index]


# -- importing component classes (executors) -------------------------------------------
def test_projects_with_same_package_names_do_not_mix() -> None:
    """Both fixture projects have a `bolts` package: each load imports its own."""
    first = load_topology(WORDCOUNT)
    second = load_topology(MULTI, name="plain")
    split = import_component_class("bolts.split.SplitBolt", second.source_dirs)
    assert module_file(split).is_relative_to(MULTI)
    again = load_topology(WORDCOUNT)
    assert again == first
    counter = import_component_class("bolts.wordcount.WordCountBolt", again.source_dirs)
    assert module_file(counter).is_relative_to(WORDCOUNT)


def test_component_classes_import_in_another_process(tmp_path: Path) -> None:
    graph = load_topology(MULTI, name="inline")
    plain = load_topology(MULTI, name="plain")
    wanted = [
        (graph.component("router").class_path, list(graph.source_dirs)),
        (plain.component("count").class_path, list(plain.source_dirs)),
    ]
    script = (
        "import json, sys\n"
        "from stormshift.topology.loader import import_component_class\n"
        "out = []\n"
        "for path, dirs in json.loads(sys.argv[1]):\n"
        "    cls = import_component_class(path, dirs)\n"
        "    out.append([cls.__qualname__, sys.modules[cls.__module__].__file__])\n"
        "print(json.dumps(out))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script, json.dumps(wanted)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    (router_name, router_file), (count_name, count_file) = json.loads(result.stdout)
    assert router_name == "RouterBolt" and router_file == str(MULTI / "topologies" / "inline.py")
    assert count_name == "CountBolt" and count_file == str(MULTI / "src" / "bolts" / "split.py")


def test_import_component_class_errors_name_the_class_and_line(tmp_path: Path) -> None:
    with pytest.raises(TopologyError) as info:
        import_component_class("bolts.split.NoSuchBolt", [str(MULTI / "src")])
    assert "bolts.split.NoSuchBolt" in str(info.value)
    with pytest.raises(TopologyError) as info:
        import_component_class("no_such_pkg_xyz.Bolt", [str(tmp_path)])
    assert "no_such_pkg_xyz.Bolt" in str(info.value)
    (tmp_path / "exploding_bolts.py").write_text("import os\n\nVALUE = 1 / 0\n")
    with pytest.raises(TopologyError) as info:
        import_component_class("exploding_bolts.Bolt", [str(tmp_path)])
    assert "ZeroDivisionError" in str(info.value)
    assert "exploding_bolts.py:3" in str(info.value)
    assert info.value.__cause__ is None and info.value.__suppress_context__


def test_alternating_projects_import_their_own_classes() -> None:
    """A shadow run hosts two projects in one process; each class path resolves to its project."""
    wordcount = load_topology(WORDCOUNT)
    multi = load_topology(MULTI, name="plain")
    for _ in range(2):
        count = import_component_class("bolts.split.CountBolt", multi.source_dirs)
        assert module_file(count).is_relative_to(MULTI)
        words = import_component_class("bolts.wordcount.WordCountBolt", wordcount.source_dirs)
        assert module_file(words).is_relative_to(WORDCOUNT)


def test_source_dirs_do_not_shadow_the_standard_library() -> None:
    import json as stdlib_json

    graph = load_topology(WORDCOUNT)
    stdlib_dir = str(Path(stdlib_json.__file__).parent.parent)
    positions = {p: i for i, p in enumerate(sys.path)}
    assert all(positions[d] > positions[stdlib_dir] for d in graph.source_dirs)


def test_projects_loaded_from_threads_at_once_each_get_their_own_topology() -> None:
    """A harness starting runs in parallel loads several projects from threads of one process:
    each load must see its own project's modules (loading rearranges sys.path and evicts the
    other project's modules; without one load at a time, a thread read the other's half)."""
    import threading

    examples = Path(__file__).resolve().parents[1] / "examples"
    projects = ["adclicks", "wordcount", "pixelcount"] * 4
    found: dict[int, str] = {}
    failed: list[BaseException] = []

    def load(n: int, project: str) -> None:
        try:
            found[n] = load_topology(examples / project).name
        except BaseException as exc:  # noqa: BLE001 - reported below with its project
            failed.append(exc)

    threads = [threading.Thread(target=load, args=(n, p)) for n, p in enumerate(projects)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failed, failed
    assert [found[n] for n in range(len(projects))] == projects


def test_a_bolts_package_left_from_a_dir_since_taken_off_sys_path_is_not_the_projects(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A caller imported some other ``bolts`` through its own ``sys.path`` edit and undid
    the edit: the module stays in ``sys.modules``, and the next project's ``from bolts.x
    import ...`` must not find it there."""
    other = tmp_path / "elsewhere"
    (other / "bolts").mkdir(parents=True)
    (other / "bolts" / "__init__.py").write_text("STALE = True\n")
    with monkeypatch.context() as patch:
        patch.syspath_prepend(str(other))
        for name in [n for n in sys.modules if n.partition(".")[0] == "bolts"]:
            del sys.modules[name]  # not patch.delitem: its undo would put them back
        import bolts  # type: ignore[import-not-found]

        assert bolts.STALE
    assert sys.modules["bolts"].__file__ == str(other / "bolts" / "__init__.py")
    graph = load_topology(Path(__file__).parents[1] / "examples" / "pixelcount")
    assert "pixel-count-bolt" in graph.components
    assert not hasattr(sys.modules["bolts"], "STALE")
