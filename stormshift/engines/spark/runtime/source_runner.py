"""pyspark's streaming-source runner, quiet when the JVM closes its stream at a stop.

Spark runs each query's stream reader (``latestOffset``, ``commit``) in
``pyspark.sql.streaming.python_streaming_source_runner``. When the query stops, the JVM
closes the runner's socket; a runner waiting for its next call reads EOF, tries to report
it on the closed socket, and Python prints both tracebacks on the console of a run that
ended clean (exit 0). The launcher (``launcher.py``) starts this module instead: the same
runner, and an EOF from the JVM, with a write to the closed socket after it, ends the process
quietly. Any other error is pyspark's to report, as before.
"""

from __future__ import annotations

import sys

__all__ = ["closed_by_the_jvm", "main"]

RUNNER = "pyspark.sql.streaming.python_streaming_source_runner"


def closed_by_the_jvm(error: BaseException | None) -> bool:
    """Whether ``error``, or one it happened while handling, is the JVM's end of stream."""
    seen = 0
    while error is not None and seen < 8:
        if isinstance(error, (EOFError, BrokenPipeError, ConnectionResetError)):
            return True
        error, seen = error.__context__ or error.__cause__, seen + 1
    return False


def main() -> None:
    from pyspark.sql.streaming import python_streaming_source_runner as runner

    try:
        with runner.get_sock_file_to_executor(timeout=None) as sock_file:
            runner.main(sock_file, sock_file)
    except (EOFError, OSError, ValueError) as error:
        if not closed_by_the_jvm(error):
            raise
        sys.exit(0)


if __name__ == "__main__":
    main()
