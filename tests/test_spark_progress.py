"""The reason a failed query names: the user's error, not Spark's wrappers."""

from __future__ import annotations

from stormshift.engines.spark.driver.progress import stop_reason_from

FOREACH_FAILURE = """[FOREACH_BATCH_USER_FUNCTION_ERROR] An error occurred in the user provided function in foreach batch sink. Reason: An exception was raised by the Python Proxy. Return Message: Traceback (most recent call last):
  File "/site-packages/py4j/clientserver.py", line 644, in _call_proxy
    return_value = getattr(self.pool[obj_id], method)(*params)
py4j.protocol.Py4JJavaError: An error occurred while calling o123.collect.
  File "/stormshift/engines/spark/driver/batch.py", line 118, in __call__
    self.commit_log.record_commit(txid)
RuntimeError: injected: driver lost before committing txid 0
 SQLSTATE: 39000
=== Streaming Query ===
Identifier: stormshift_dltopo [id = 1, runId = 2]"""


def test_stop_reason_names_the_python_error_inside_spark_wrappers() -> None:
    assert stop_reason_from(FOREACH_FAILURE) == "RuntimeError: injected: driver lost before committing txid 0"


def test_stop_reason_prefers_a_component_failure() -> None:
    text = ("org.apache.spark.SparkException: Job aborted.\n"
            "stormshift.errors.ComponentFailure: component 'sums' task 0 raised in process: "
            "ValueError: boom (at bolts.py:12)\n"
            "ValueError: boom")
    assert stop_reason_from(text).startswith("stormshift.errors.ComponentFailure: component 'sums'")


def test_stop_reason_falls_back_to_the_first_line() -> None:
    assert stop_reason_from("query terminated\nno python here") == "query terminated"
