"""Helpers the test modules share: harnesses, fixtures' builders, oracles.

Why a package: a test module never imports another test module
(tests/test_code_quality.py checks it), so whatever two test modules share
lives here and is imported as ``from support.NAME import ...`` (pytest puts
``tests/`` on ``sys.path``: ``rootdir``-relative ``prepend`` import mode).
Topology modules that Spark workers import by class path stay in
``tests/spark_fixtures/``; data stays in ``tests/fixtures/``.
"""
