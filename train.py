#!/usr/bin/env python
"""`python train.py ...` from a checkout; installed, the same command is `twentyfourseven-train`.
The code, and `--help`'s text, live in training/cli.py."""

import sys

from training.cli import run

if __name__ == "__main__":
    sys.exit(run())
