"""Secrets stay in their place (issue 33.4): private files, masks, submit's Redis URL."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from click.testing import CliRunner

from stormshift.cli import cli
from stormshift.engines.spark.driver.submit import REDIS_FILE, build_submit_plan
from stormshift.private import is_secret_key, mask_config, mask_text, mask_url, write_private

ROOT = Path(__file__).resolve().parents[1]
ADCLICKS = ROOT / "examples" / "adclicks"
WORDCOUNT = ROOT / "examples" / "wordcount"
KEY = "f00dfeedf00dfeedf00dfeed"


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_masks_keys_passwords_tokens_and_url_passwords() -> None:
    assert [k for k in ("state.hmac_key", "db.password", "api.token", "aws.secret_access_key",
                        "kafka.sasl.credentials", "nlp.tokenizer", "adclicks.events",
                        "adclicks.key_field") if is_secret_key(k)] == [
        "state.hmac_key", "db.password", "api.token", "aws.secret_access_key",
        "kafka.sasl.credentials"]
    assert mask_url("redis://:pw@host:6379/0") == "redis://:***@host:6379/0"
    assert mask_url("redis://user:p@ss@host/0") == "redis://user:***@host/0"
    assert mask_url("redis://host:6379/0") == "redis://host:6379/0"
    assert mask_text("cannot reach rediss://u:x@h:1/2 (timeout)") == \
        "cannot reach rediss://u:***@h:1/2 (timeout)"
    shown = mask_config({"state.hmac_key": KEY, "nested": {"password": "pw", "events": 5},
                         "sink.url": "redis://:pw@h/0", "hosts": ["redis://a:pw@b/1"]})
    assert shown == {"state.hmac_key": "***", "nested": {"password": "***", "events": 5},
                     "sink.url": "redis://:***@h/0", "hosts": ["redis://a:***@b/1"]}


def test_write_private_is_0600_whatever_the_umask_and_tightens_an_old_file(tmp_path: Path) -> None:
    old = os.umask(0)  # the most permissive umask: the mode is still 0600
    try:
        assert write_private(tmp_path / "k", "secret")
    finally:
        os.umask(old)
    assert mode(tmp_path / "k") == 0o600
    loose = tmp_path / "old"
    loose.write_text("secret")
    loose.chmod(0o644)
    assert not write_private(loose, "other")  # an existing key is kept (state depends on it)
    assert loose.read_text() == "secret" and mode(loose) == 0o600


def test_inspect_and_its_json_mask_the_hmac_key_and_url_passwords() -> None:
    runner = CliRunner(env={"COLUMNS": "200"})
    args = ["inspect", str(ADCLICKS), "-o", f"state.hmac_key={KEY}",
            "-o", "adclicks.redis_password=hunter2", "-o", "adclicks.sink=redis://:hunter2@h/0"]
    shown = runner.invoke(cli, args, catch_exceptions=False)
    as_json = runner.invoke(cli, [*args, "--json"], catch_exceptions=False)
    for out in (shown.output, as_json.output):
        assert KEY not in out and "hunter2" not in out
    config = json.loads(as_json.output)["config"]
    assert config["state.hmac_key"] == "***" and config["adclicks.redis_password"] == "***"
    assert config["adclicks.sink"] == "redis://:***@h/0"
    assert "state.hmac_key" in shown.output and "'***'" in shown.output


@pytest.mark.redis  # starts an embedded redis-server (in a child the tier guard cannot see)
def test_embedded_redis_files_and_directory_are_private(tmp_path: Path) -> None:
    """The embedded server's directory is 0700 and its AOF/RDB 0600, also when an older
    run left them with the umask's modes."""
    state_dir = tmp_path / "state"
    state_dir.mkdir(mode=0o755)
    (state_dir / "state.rdb").write_bytes(b"")  # as an older stormshift left it
    (state_dir / "state.rdb").chmod(0o644)
    script = (
        "import os, sys\n"
        "from stormshift.state.connection import embedded, stop_embedded\n"
        "os.umask(0o022)\n"
        "r = embedded(sys.argv[1])\n"
        "r.set('k', 'v'); r.bgrewriteaof(); r.save()\n"
        "import time; time.sleep(0.5)\n"
        "stop_embedded()\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("REDIS_URL", None)
    out = subprocess.run([sys.executable, "-c", script, str(state_dir)], env=env,
                         capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 0, out.stderr
    assert mode(state_dir) == 0o700
    files = [p for p in state_dir.rglob("*")]
    assert any(p.name.startswith("appendonly") for p in files) and (state_dir / "state.rdb").exists()
    loose = {str(p.relative_to(state_dir)): oct(mode(p)) for p in files
             if mode(p) & 0o077}
    assert not loose, loose


@pytest.mark.redis
def test_submit_ships_the_redis_url_in_a_private_file_never_on_argv(
        tmp_path: Path, redis_url: str) -> None:
    """`submit --redis` with a password: not printed, not on spark-submit's argv; the
    driver reads the 0600 file shipped with --files and reaches Redis with it."""
    parts = urlsplit(redis_url)
    secret_url = f"redis://default:s3cret-pw@{parts.hostname}:{parts.port or 6379}{parts.path}"
    build = tmp_path / "build"
    printed = CliRunner().invoke(cli, ["submit", str(WORDCOUNT), "--master", "spark://m:7077",
                                       "--build-dir", str(build), "--redis", secret_url,
                                       "--files", "/etc/extra.conf"], catch_exceptions=False)
    assert printed.exit_code == 0, printed.output
    assert "s3cret" not in printed.output and "--redis" not in printed.output
    words = printed.output.split()
    assert words[words.index("--files") + 1] == f"/etc/extra.conf,{build / REDIS_FILE}"
    assert (build / REDIS_FILE).read_text().strip() == secret_url
    assert mode(build / REDIS_FILE) == 0o600

    plan = build_submit_plan(WORDCOUNT, "local[1]", build_dir=build, ship_stormshift=False,
                             redis_url=secret_url)
    assert not any("s3cret" in arg for arg in plan.command)
    # cluster deploy mode: the container's cwd holds the shipped files, not the build dir
    container = tmp_path / "container"
    container.mkdir()
    (container / REDIS_FILE).write_text(secret_url)
    driver = container / plan.driver_file.name
    driver.write_text(plan.driver_file.read_text())
    env = {k: v for k, v in os.environ.items()
           if k not in ("STORMSHIFT_REDIS", "STORMSHIFT_REDIS_URL", "REDIS_URL")}
    reach = ("import runpy, redis\n"
             f"driver = runpy.run_path({str(driver)!r}, run_name='driver')\n"
             "print(redis.Redis.from_url(driver['_redis_url']()).ping())\n")
    out = subprocess.run([sys.executable, "-c", reach], cwd=container,
                         env={**env, "PYTHONPATH": str(ROOT)},
                         capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 0 and out.stdout.strip() == "True", out.stderr
    assert "os.environ[\"STORMSHIFT_REDIS\"] = url" in driver.read_text()  # what `run` reads
