"""``python -m nbgrad``: a forward/backward demo of a small graph, then the micro-benchmark."""

import sys

from .bench import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
