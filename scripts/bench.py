#!/usr/bin/env python
"""Thin wrapper: ``python scripts/bench.py`` == ``python -m nbgrad``."""

import sys

from nbgrad.bench import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
