"""``stormshift check``: every rule fires on the fixture written for it, at the marked line,
and nothing fires on clean code.

Fixture projects live in ``tests/fixtures/check/<name>/``; a line that must be reported
ends with ``# expect: RULE``. A fixture's findings (with a line) must equal its markers
exactly, so a missed pattern and a false positive both fail. Unit tier: the short run is
the in-process local engine; no JVM, no Redis.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from stormshift.check import RULES, CheckReport, Severity, run_check
from stormshift.cli.check import check_command

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures" / "check"
EXAMPLES = REPO / "examples"
MARK = re.compile(r"#\s*expect:\s*([a-z-]+(?:,\s*[a-z-]+)*)")

# fixture -> run the short local run? (off where the code would start threads or emit
# to a made-up task; the writes/java fixtures skip it themselves)
CASES = {
    "clean": True, "writes": True, "nondeterminism": True, "threads": False,
    "shared_state": True, "unpicklable": True, "timing": False, "java": True,
    "missing_package": True,
    "emits": False,
}


def expected(fixture: str) -> set[tuple[str, str, int]]:
    base = FIXTURES / fixture
    out = set()
    for path in sorted(base.rglob("*.py")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            match = MARK.search(line)
            for rule in match[1].split(",") if match else ():  # a line may break two rules
                out.add((rule.strip(), str(path.relative_to(base)), number))
    return out


def found(report: CheckReport) -> set[tuple[str, str, int]]:
    return {(f.rule, f.file, f.line) for f in report.findings if f.line}


@pytest.mark.parametrize("fixture", sorted(CASES))
def test_fixture_findings_match_their_markers(fixture: str) -> None:
    report = run_check(FIXTURES / fixture, dynamic=CASES[fixture])
    assert found(report) == expected(fixture)


def test_every_rule_is_exercised_by_a_fixture_or_a_test() -> None:
    marked = {rule for fixture in CASES for rule, _, _ in expected(fixture)}
    assert set(RULES) - marked == {"spout-fail", "run-error", "run-skipped", "run-budget"}


def test_clean_fixture_says_nothing_and_exits_zero() -> None:
    report = run_check(FIXTURES / "clean")
    assert report.findings == [] and report.exit_code == 0
    assert report.ran == "60 spout tuples on the local engine"  # its input ends at 60


def test_wordcount_example_is_clean() -> None:
    report = run_check(EXAMPLES / "wordcount")
    assert [f for f in report.findings if f.severity is not Severity.INFO] == []
    assert report.exit_code == 0 and report.ran


def test_adclicks_example_only_reports_its_fail_replays() -> None:
    report = run_check(EXAMPLES / "adclicks")
    assert [(f.rule, f.file, f.line) for f in report.findings] == [
        ("fail-replay", "src/spouts/adlog.py", 85)]
    assert report.exit_code == 1


def test_severities_and_exit_codes() -> None:
    writes = run_check(FIXTURES / "writes")
    assert {f.rule: f.severity for f in writes.findings if f.line} == {
        "external-write": Severity.ERROR, "idempotent-write": Severity.WARNING,
        "external-read": Severity.WARNING, "redis-py-signature": Severity.ERROR}
    get = writes.by_rule("external-read")  # an HTTP GET asks; it writes nothing
    assert [(f.file, f.component) for f in get] == [("src/bolts/sinks.py", "http_bolt")]
    zincrby = writes.by_rule("redis-py-signature")[0]
    assert "zincrby(name, amount, member)" in zincrby.spec.fix
    assert writes.exit_code == 3
    nondeterminism = run_check(FIXTURES / "nondeterminism", dynamic=False)
    assert nondeterminism.exit_code == 1
    seeded = [f for f in nondeterminism.findings if f.component == "module_seeded"]
    assert [f.severity for f in seeded] == [Severity.INFO]  # seeded, yet shared: info only


def test_findings_say_where_why_fix_and_guide() -> None:
    report = run_check(FIXTURES / "writes")
    incr = next(f for f in report.findings if f.line == 25)
    assert incr.component == "redis_bolt" and incr.via == ("process", "_bump")
    assert "redis.StrictRedis.from_url().incr" in incr.message
    data = incr.to_dict()
    assert data["guide"] == "migrations_guide/check.md#external-write"
    assert "state map" in data["fix"] and "--sink" in data["fix"] and data["why"]


def test_the_run_is_skipped_where_it_would_write_or_cannot_load() -> None:
    for fixture, reason in (("writes", "write"), ("java", "cannot load")):
        skipped = run_check(FIXTURES / fixture).by_rule("run-skipped")
        assert len(skipped) == 1 and reason in skipped[0].message
        assert skipped[0].severity is Severity.INFO


def test_a_component_raising_in_the_short_run_is_reported_where_it_raised() -> None:
    report = run_check(REPO / "tests" / "fixtures" / "failing", name="always_raises")
    errors = report.by_rule("run-error")
    assert [(f.component, f.file) for f in errors] == [("raiser", "src/bolts/failing.py")]
    assert errors[0].line > 0 and "ZeroDivisionError" in errors[0].message
    assert [f.rule for f in report.by_rule("fail-replay")] == ["fail-replay"]  # queued replays


def test_a_package_that_is_not_installed_is_one_finding_and_the_rest_is_still_read() -> None:
    report = run_check(FIXTURES / "missing_package")
    [missing] = report.by_rule("missing-package")
    assert (missing.file, missing.severity, missing.component) == (
        "src/bolts/billing.py", Severity.ERROR, "billing")
    assert missing.message == (
        "package 'adnet_billing' is not installed; fix: pip install adnet_billing, or add it "
        "to the project's requirements (a module of the project itself belongs in src/)")
    # the bolt's other hazards are found in spite of the import (the markers: wall-clock,
    # shared-module-state), the short run waits for the package
    assert {f.rule for f in report.findings} == {
        "missing-package", "shared-module-state", "wall-clock", "run-skipped"}
    [skipped] = report.by_rule("run-skipped")
    assert "adnet_billing" in skipped.message and not report.ran
    assert report.exit_code == 3 and report.components == 3


def test_the_stand_ins_check_reads_with_do_not_outlive_it() -> None:
    """After check, the project's modules built on a stand-in are gone: loading the
    topology in the same process still fails on the missing package."""
    from stormshift.errors import MissingPackageError
    from stormshift.topology.loader import load_topology

    run_check(FIXTURES / "missing_package")
    assert "adnet_billing" not in sys.modules and "bolts.billing" not in sys.modules
    with pytest.raises(MissingPackageError):
        load_topology(FIXTURES / "missing_package")
    assert len(run_check(FIXTURES / "missing_package").by_rule("missing-package")) == 1


@pytest.mark.parametrize("statement", [
    # the component classes derive from the missing package: nothing else can be read
    "import adnet_billing\nBolt = adnet_billing.BillingBolt",
    # a name an installed package lacks: nothing to stand in for
    "from redis import RateCardClient\nfrom streamparse import Bolt",
], ids=["derived-from-it", "name-missing"])
def test_what_cannot_be_read_with_a_stand_in_is_still_one_finding(
        tmp_path: Path, statement: str) -> None:
    project = tmp_path / "billing"
    shutil.copytree(FIXTURES / "missing_package", project)
    bolt = project / "src" / "bolts" / "billing.py"
    source = bolt.read_text().replace("from streamparse import Bolt\n", "")
    bolt.write_text(source.replace("import adnet_billing  # expect: missing-package", statement))
    report = run_check(project)
    [missing] = report.by_rule("missing-package")
    assert (missing.file, missing.line) == ("src/bolts/billing.py", 6)
    assert {f.rule for f in report.findings} == {"missing-package", "run-skipped"}
    assert report.exit_code == 3 and report.components == 0


def test_command_reports_a_missing_package_as_a_finding() -> None:
    code, output = invoke(FIXTURES / "missing_package", "--json")
    data = json.loads(output)
    assert code == data["exit_code"] == 3
    [missing] = [f for f in data["findings"] if f["rule"] == "missing-package"]
    assert missing["line"] == 6 and "pip install adnet_billing" in missing["message"]
    assert missing["guide"] == "migrations_guide/check.md#missing-package"


def test_every_rule_has_a_guide_section() -> None:
    guide = (REPO / "migrations_guide" / "check.md").read_text()
    headings = set(re.findall(r"^### ([a-z-]+)$", guide, flags=re.MULTILINE))
    assert set(RULES) <= headings


# -- the command -----------------------------------------------------------------------
def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(check_command, [str(a) for a in args])
    return result.exit_code, result.output


def test_command_exit_codes() -> None:
    assert invoke(FIXTURES / "clean")[0] == 0
    assert invoke(FIXTURES / "timing", "--no-run")[0] == 1
    assert invoke(FIXTURES / "java")[0] == 3
    code, output = invoke(REPO / "tests" / "fixtures")  # no project there
    assert code == 2 and "error:" in output


def test_command_json_for_ci() -> None:
    code, output = invoke(FIXTURES / "threads", "--json", "--no-run")
    data = json.loads(output)
    assert code == data["exit_code"] == 3 and data["dynamic_run"] is None
    assert data["counts"] == {"error": 2, "warning": 1, "info": 0}
    assert {f["rule"] for f in data["findings"]} == {"thread", "executor"}


def test_command_terminal_report_fits_80_columns() -> None:
    code, output = invoke(FIXTURES / "writes")
    assert code == 3
    assert max(len(line) for line in output.splitlines()) <= 80
    assert "src/bolts/sinks.py:25" in output and "migrations_guide/check.md#external-write" in output


def test_command_options_reach_the_run() -> None:
    code, output = invoke(FIXTURES / "clean", "-o", "fixture.limit=5", "-e", "prod", "--json")
    assert code == 0 and json.loads(output)["findings"] == []
    code, output = invoke(FIXTURES / "clean", "-o", "no-equals-sign")
    assert code == 2 and "KEY=VALUE" in output


def test_command_help_documents_exit_codes() -> None:
    code, output = invoke("--help")
    assert code == 0
    for text in ("0  nothing found", "1  warnings", "2  the topology could not", "3  errors",
                 "--no-run", "--json", "-o, --option"):
        assert text in output
