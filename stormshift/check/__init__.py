"""``stormshift check``: what in a streamparse project will not port as is.

Runs in the driver process only (the CLI's): it imports the project's
topology and components, reads their sources with ``ast`` and runs the
topology briefly on the in-process local engine. No Spark session, no Redis.

Modules: ``rules`` (the catalogue), ``project`` (the topology as declared),
``stand_ins`` (empty modules for packages that are not installed),
``graph_rules`` (Java/shell components, custom groupings), ``static`` and
``static_state`` (ast rules), ``patterns`` (what a call is), ``dynamic``
(the short run and the snapshot attempt), ``report`` (exit code, terminal,
JSON), ``runner`` (``run_check``); the click command is ``stormshift/cli/check.py``.
"""

from stormshift.check.report import CheckReport
from stormshift.check.rules import RULES, Finding, Rule, Severity
from stormshift.check.runner import run_check

__all__ = ["RULES", "CheckReport", "Finding", "Rule", "Severity", "run_check"]
