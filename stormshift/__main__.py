"""``python -m stormshift ...``: the same command as ``stormshift`` (also the spark-submit driver)."""

import sys

from stormshift.cli import main

if __name__ == "__main__":
    sys.exit(main())
