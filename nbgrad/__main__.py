"""``python -m nbgrad``: a forward/backward demo of a small graph, then a quick run of the
benchmark (``nbgrad-bench --quick``; extra arguments are passed to it)."""

import sys

from .bench import main

if __name__ == "__main__":
    sys.exit(main())
