"""`python -m sorch`: the `sorch` command."""
import sys

from sorch.cli import main

sys.exit(main())
