"""Secrets given with ``-o`` are never printed nor on a command line (issue 49.3).

``submit`` ships every secret ``-o`` entry (a secret-named key, or a value holding a
URL password) in a 0600 file on ``--files`` that the generated driver reads back into
``stormshift run``'s options in-process; ``inspect``, ``--json``, the run summary, the
component log and errors mask them; the component log file is 0600 under a 0700
directory. The rule for "secret-named" is ``private.is_secret_key``'s.
"""

from __future__ import annotations

import json
import logging
import os
import runpy
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from stormshift import private
from stormshift.cli import cli, main
from stormshift.engines.spark.driver.submit import OPTIONS_FILE, REDIS_FILE
from stormshift.private import is_secret_key

ROOT = Path(__file__).resolve().parents[1]
WORDCOUNT = ROOT / "examples" / "wordcount"
ADCLICKS = ROOT / "examples" / "adclicks"

# every shape of a secret -o entry: (key, value); the values are unique, to be searched for
SECRETS = [
    ("state.hmac_key", "f00dfeedf00dfeed-hmac"),
    ("db.password", "hunter2-password"),
    ("DB.PASSWORD", "HUNTER2-UPPER"),
    ("mysql.redisPassword", "camel-password-1"),
    ("svc.passwd", "passwd-value-2"),
    ("aws.secret_access_key", "aws-secret-value-3"),
    ("api.token", "token-value-4"),
    ("auth.accessToken", "camel-token-5"),
    ("gcp.credentials", "credentials-value-6"),
    ("db.pwd", "pwd-value-7"),
    ("x.api-key", "dash-api-key-8"),
    ("gcp.privateKey", "camel-private-key-9"),
    ("kafka.sasl.jaas.config", 'PlainLoginModule required password="sasl-jaas-10";'),
    ("sasl.username", "sasl-user-11"),
    ("adclicks.sink", "redis://:url-password-12@h:6379/0"),  # not secret-named: its URL
]
SHOWN = "words.limit=7"  # an entry that is no secret: forwarded on argv as before


def secret_args() -> list[str]:
    return [arg for key, value in SECRETS for arg in ("-o", f"{key}={value}")]


def leaked(text: str) -> list[str]:
    """The secret values (or their URL password) found in ``text``."""
    return [v for _, v in SECRETS if v in text] + (["url-password-12"]
                                                   if "url-password-12" in text else [])


@pytest.fixture(autouse=True)
def forget_hidden_values() -> Iterator[None]:
    """Each test starts with no remembered secret values (the registry is per process)."""
    private._hidden.clear()
    yield
    private._hidden.clear()


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_secret_key_rule() -> None:
    """``private.py``'s rule, one example per clause and what it leaves alone."""
    assert all(is_secret_key(k) for k, _ in SECRETS[:-1])
    for key in ("sasl.mechanism", "x.token_ttl", "partition_key", "API_KEY", "ssh.host_keys",
                "kafka.ssl.keystore.password"):
        assert is_secret_key(key), key
    for key in ("nlp.tokenizer", "adclicks.key_field", "key", "stormshift.fuse.keyed",
                "adclicks.events", "x.monkey", "keys", "topology.debug", "shadow.results"):
        assert not is_secret_key(key), key


def test_submit_prints_and_runs_no_secret_given_by_o(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    import stormshift.engines.spark as spark_api

    ran: list[list[str]] = []
    monkeypatch.setattr(spark_api, "run_submit", lambda command, env=None: ran.append(command) or 0)
    build = tmp_path / "build"
    done = CliRunner().invoke(cli, [
        "submit", str(WORDCOUNT), "--master", "spark://m:7077", "--build-dir", str(build),
        "--run", "-o", SHOWN, *secret_args(), "--files", "/etc/extra.conf"],
        catch_exceptions=False)
    assert done.exit_code == 0, done.output
    (argv,) = ran
    assert not leaked(done.output), done.output
    assert not leaked(" ".join(argv)), argv
    assert SHOWN in argv and argv[argv.index(SHOWN) - 1] == "-o"  # the rest forwarded as before
    assert argv[argv.index("--files") + 1] == f"/etc/extra.conf,{build / OPTIONS_FILE}"
    shipped = json.loads((build / OPTIONS_FILE).read_text())
    assert shipped == [f"{k}={v}" for k, v in SECRETS]
    assert mode(build / OPTIONS_FILE) == 0o600

    again = CliRunner().invoke(cli, ["submit", str(WORDCOUNT), "--master", "spark://m:7077",
                                     "--build-dir", str(build)], catch_exceptions=False)
    assert not (build / OPTIONS_FILE).exists()  # a submit without secrets ships none
    assert OPTIONS_FILE not in again.output


def _run_driver(driver: Path, argv: list[str], cwd: Path,
                monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The generated driver run as spark-submit runs it (``__main__``, ``sys.argv``), with
    ``stormshift.cli.main`` replaced: the argv it hands ``stormshift run``."""
    import stormshift.cli

    handed: list[list[str]] = []
    monkeypatch.setattr(stormshift.cli, "main", lambda args: handed.append(list(args)) or 0)
    monkeypatch.setattr(sys, "argv", [str(driver), *argv])
    monkeypatch.chdir(cwd)
    monkeypatch.delenv("STORMSHIFT_REDIS", raising=False)
    with pytest.raises(SystemExit) as ended:
        runpy.run_path(str(driver), run_name="__main__")
    assert ended.value.code == 0
    assert sys.argv == [str(driver), *argv]  # what ps shows: unchanged, no secret
    (args,) = handed
    return args


@pytest.mark.parametrize("deploy", ["client", "cluster"])
def test_the_driver_reads_the_shipped_secrets_back_into_the_config(
        deploy: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Round trip: submit writes the file -> the driver adds its entries to ``run``'s
    options -> the topology's config holds every secret as given."""
    from stormshift.cli.options import load_graph
    from stormshift.engines.spark import build_submit_plan

    build = tmp_path / "build"
    secrets = [f"{k}={v}" for k, v in SECRETS]
    plan = build_submit_plan(WORDCOUNT, "local[1]", build_dir=build, ship_stormshift=False,
                             run_args=["-o", SHOWN], secret_options=secrets,
                             redis_url="redis://:pw-in-file@127.0.0.1:6379/0")
    assert not leaked(" ".join(plan.command))
    argv = plan.command[plan.command.index(str(plan.driver_file)) + 1:]
    driver, cwd = plan.driver_file, tmp_path
    if deploy == "cluster":  # the container's cwd holds the shipped files, not the build dir
        container = tmp_path / "container"
        container.mkdir()
        for name in (OPTIONS_FILE, REDIS_FILE):
            (container / name).write_text((build / name).read_text())
        driver = container / plan.driver_file.name
        driver.write_text(plan.driver_file.read_text())
        for name in (OPTIONS_FILE, REDIS_FILE):
            (build / name).unlink()
        cwd = container
    args = _run_driver(driver, argv, cwd, monkeypatch)
    assert os.environ.pop("STORMSHIFT_REDIS") == "redis://:pw-in-file@127.0.0.1:6379/0"
    options = [args[i + 1] for i, a in enumerate(args) if a == "-o"]
    assert options == [SHOWN, *secrets]
    graph = load_graph(args[1], None, None, options)
    for key, value in SECRETS:
        assert graph.config[key] == value, key


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_inspect_masks_every_secret_shape(as_json: bool) -> None:
    args = ["inspect", str(ADCLICKS), *secret_args(), *(["--json"] if as_json else [])]
    done = CliRunner(env={"COLUMNS": "250"}).invoke(cli, args, catch_exceptions=False)
    assert done.exit_code == 0, done.output
    assert not leaked(done.output), done.output
    if as_json:
        config = json.loads(done.output)["config"]
        assert all(config[k] == "***" for k, _ in SECRETS[:-1])
        assert config["adclicks.sink"] == "redis://:***@h:6379/0"
    else:
        assert "state.hmac_key" in done.output and "'***'" in done.output


@pytest.mark.parametrize("argv, says", [
    (["-o", "state.hmac_key=123456789"], "-o state.hmac_key=***: expected a non-empty string"),
    (["-o", "db.password=hunter2-password", "-o", "stormshift.max_replays=hunter2-password"],
     "-o stormshift.max_replays=***: expected an integer"),
    (["-o", "=hunter2-password"], "'***' is not KEY=VALUE"),
    (["-o", "hunter2-password"], "a value without '=' (not shown) is not KEY=VALUE"),
], ids=["secret-key-refused", "secret-value-echoed-by-another-key", "no-key", "no-equals"])
@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_an_error_that_would_echo_a_secret_masks_it(argv: list[str], says: str, as_json: bool,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["inspect", str(WORDCOUNT), *argv, *(["--json"] if as_json else [])])
    out, err = capsys.readouterr()
    assert code == 2, err
    assert "123456789" not in out + err and "hunter2-password" not in out + err, out + err
    assert says in err, err
    if as_json:
        assert says in json.loads(out.strip().splitlines()[-1])["error"]


def test_component_logs_are_0600_under_0700_and_mask_secret_values(tmp_path: Path) -> None:
    from stormshift.engines.logs import ComponentLogs, forward_logs

    private.hide_secrets({"db.password": "hunter2-password", "db.user": "not-a-secret"})
    path = tmp_path / "new" / "logs" / "topo.log"
    old_umask = os.umask(0)  # the most permissive umask: still private
    try:
        with ComponentLogs(str(path), logging.INFO):
            forward_logs("bolt", 0, [("info", "connecting as not-a-secret with hunter2-password")])
    finally:
        os.umask(old_umask)
    assert mode(path) == 0o600
    assert mode(path.parent) == 0o700 and mode(path.parent.parent) == 0o700
    text = path.read_text()
    assert "connecting as not-a-secret with ***" in text and "hunter2" not in text

    older = tmp_path / "mine" / "older.log"  # an existing directory keeps its mode
    older.parent.mkdir(mode=0o755)
    older.parent.chmod(0o755)
    older.write_text("from an older run\n")
    older.chmod(0o644)
    with ComponentLogs(str(older), logging.INFO):
        pass
    assert mode(older) == 0o600 and mode(older.parent) == 0o755


def test_a_local_run_keeps_secrets_out_of_its_summary_json_and_log(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    logs = tmp_path / ".stormshift" / "logs"
    logs.mkdir(parents=True, mode=0o755)
    logs.chmod(0o755)  # as an older stormshift left it
    for as_json in (False, True):
        code = main(["run", str(WORDCOUNT), "--engine", "local", "--max-tuples", "30",
                     "--log-level", "debug", *secret_args(), *(["--json"] if as_json else [])])
        out, err = capsys.readouterr()
        assert code == 0, err
        assert not leaked(out + err), out + err
    log = logs / "wordcount.log"
    assert mode(log) == 0o600 and mode(logs) == 0o700
    assert not leaked(log.read_text())


def test_mask_url_never_shows_a_password_of_a_malformed_url() -> None:
    from stormshift.private import mask_url

    for url, shown in [("redis://:p/w@h:1/0", "redis://:***@h:1/0"),
                       ("redis://u:a@b@h/0", "redis://u:***@h/0"),
                       ("redis://only-secret@h/0", "redis://***@h/0"),
                       ("s3cret@h:6379", "***@h:6379"),
                       ("redis://h:6379/0", "redis://h:6379/0")]:
        assert mask_url(url) == shown, url
