"""Every topology error names the component and says how to fix it."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamparse.thrift import NullStruct, storm_thrift

from stormshift.errors import TopologyError
from stormshift.topology.loader import load_topology
from stormshift.topology.specs import decode_grouping

FILES = Path(__file__).parent / "fixtures" / "topologies" / "files"


def load_error(stem: str, **kwargs: object) -> TopologyError:
    with pytest.raises(TopologyError) as info:
        load_topology(FILES / f"{stem}.py", **kwargs)  # type: ignore[arg-type]
    return info.value


def test_unknown_field_in_fields_grouping() -> None:
    err = load_error("bad_field")
    assert err.component == "counter"
    assert "['number']" in str(err) and "['n', 'parity']" in str(err)
    assert err.fix is not None and "Grouping.fields('n')" in err.fix
    assert "bad_field.py:6" in str(err)  # the user's class statement


def test_bolt_without_input() -> None:
    err = load_error("no_input")
    assert err.component == "orphan"
    assert "no input" in str(err)
    assert err.fix is not None and "inputs=" in err.fix


def test_cycle_names_the_path() -> None:
    err = load_error("cycle_topo")
    assert err.component == "first"
    assert "first -> second -> third -> first" in str(err)
    assert err.fix is not None and "remove one subscription" in err.fix


def test_subscription_to_undeclared_stream_lists_declared_streams() -> None:
    err = load_error("unknown_stream")
    assert err.component == "reader"
    assert "'errors'" in str(err)
    assert "'default' ['n', 'parity']" in str(err)
    assert err.fix is not None and "numbers['default']" in err.fix


def test_subscription_to_undeclared_component() -> None:
    err = load_error("unknown_source")
    assert err.component == "reader"
    assert "'nubmers'" in str(err) and "['numbers', 'reader']" in str(err)


def test_direct_grouping_on_plain_stream() -> None:
    err = load_error("direct_on_plain")
    assert err.component == "reader"
    assert "not a direct stream" in str(err)
    assert err.fix is not None and "direct=True" in err.fix


def test_plain_grouping_on_direct_stream() -> None:
    err = load_error("plain_on_direct")
    assert err.component == "reader"
    assert "fields(n)" in str(err) and "'direct_out'" in str(err)
    assert err.fix is not None and "Grouping.DIRECT" in err.fix


def test_java_bolt_cannot_run() -> None:
    err = load_error("java_bolt")
    assert err.component == "enricher"
    assert "com.example.storm.EnrichBolt" in str(err) and "JVM" in str(err)
    assert err.fix is not None and "['n', 'geo']" in err.fix and "streamparse Bolt" in err.fix


def test_shell_bolt_cannot_run() -> None:
    err = load_error("shell_bolt")
    assert err.component == "scorer"
    assert "`node score.js`" in str(err)
    assert err.fix is not None and "streamparse Bolt subclass" in err.fix


@pytest.mark.parametrize(
    ("stem", "what"),
    [
        ("custom_grouping", "com.example.PartialKeyGrouping"),
        ("custom_serialized", "serialized custom Java grouping"),
    ],
)
def test_custom_java_groupings_are_refused_with_alternatives(stem: str, what: str) -> None:
    err = load_error(stem)
    assert err.component == "reader"
    assert what in str(err) and "JVM" in str(err)
    assert err.fix is not None and "Grouping.fields" in err.fix and "partial-key" in err.fix


def test_grouping_union_with_two_members_is_refused() -> None:
    bad = storm_thrift.Grouping(shuffle=NullStruct(), all=NullStruct())
    with pytest.raises(TopologyError) as info:
        decode_grouping(bad, consumer="b", source="s", stream="default")
    assert info.value.component == "b"
    assert "['shuffle', 'all']" in str(info.value)


def test_import_error_names_file_and_line_without_deep_traceback() -> None:
    err = load_error("broken_import")
    assert "broken_import.py:4" in str(err)
    assert "bolts_that_do_not_exist" in str(err)
    # not installed and not in the project: the fix says both (tests/test_missing_package.py)
    assert err.fix is not None and "pip install bolts_that_do_not_exist" in err.fix
    assert "src/" in err.fix
    assert err.__cause__ is None and err.__suppress_context__


def test_exception_at_import_names_the_users_line() -> None:
    err = load_error("raises_at_import")
    assert "raises_at_import.py:6" in str(err)
    assert "KeyError" in str(err) and 'SETTINGS["thresold"]' in str(err)


def test_syntax_error_in_topology_file(tmp_path: Path) -> None:
    path = tmp_path / "syntax_broken_topo.py"
    path.write_text("from streamparse import Topology\n\nclass Broken(Topology)\n    pass\n")
    with pytest.raises(TopologyError) as info:
        load_topology(path)
    assert "SyntaxError" in str(info.value) and "syntax_broken_topo.py:3" in str(info.value)


def test_not_a_topology_target(tmp_path: Path) -> None:
    with pytest.raises(TopologyError, match="neither a topology .py file nor a project"):
        load_topology(tmp_path / "missing.txt")
    with pytest.raises(TopologyError, match="does not exist"):
        load_topology(tmp_path / "missing.py")
    with pytest.raises(TopologyError, match="no topology definitions"):
        load_topology(tmp_path)
    with pytest.raises(TopologyError, match="not a streamparse Topology subclass"):
        load_topology(dict)


def test_file_without_topology_class(tmp_path: Path) -> None:
    path = tmp_path / "helpers_only_topo.py"
    path.write_text("X = 1\n")
    with pytest.raises(TopologyError, match="defines no streamparse Topology subclass"):
        load_topology(path)
