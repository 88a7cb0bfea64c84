#!/usr/bin/env python
"""`python evaluate.py ...` from a checkout; installed, the same command is `twentyfourseven-evaluate`.
The code, and `--help`'s text, live in evaluation/cli.py."""

import sys

from evaluation.cli import main

if __name__ == "__main__":
    sys.exit(main())
