"""`python -m hydroplane` is the same as the `hydroplane` console command."""

import sys

from hydroplane.cli import main

sys.exit(main())
