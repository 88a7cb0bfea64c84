#!/usr/bin/env python
"""`python play.py ...` from a checkout; installed, the same command is `twentyfourseven-play`.
The code, and `--help`'s text, live in humanplay/cli.py."""

import sys

from humanplay.cli import main

if __name__ == "__main__":
    sys.exit(main())
