"""engines/spark/runtime: setting up the processes the other folders run in.

Runs in: the driver (``session.py``: the SparkSession and its settings;
``classcache.py``: the driver JVM's class-data archive on a local master;
``launcher.py``: the shell script Spark starts every Python process with) and
every Python worker process Spark starts on an executor or for a source's
planner (``daemon.py``: Spark's ``spark.python.daemon.module``, preloading before
it forks; ``worker.py``: one Redis client per URL per process, the user's
source dirs on ``sys.path``; ``hosts.py``: starting, reaching and serving the
long-lived spout and task host processes beside the workers).

Crosses the boundary: nothing of a batch. Settings (Spark conf keys, the
``PYSPARK_PYTHON`` launcher script, environment) go from the driver to the
workers; the daemon is named by module path (``DAEMON_MODULE``), so it must
import nothing heavy (no pyspark, no pyarrow) before it runs: this
``__init__`` imports nothing.
"""
