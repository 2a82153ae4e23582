"""``python -m nbgrad.bench``: the same as ``nbgrad-bench``."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
