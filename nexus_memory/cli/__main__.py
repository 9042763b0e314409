"""`python -m nexus_memory.cli`: the same command as the `nexus-memory` script."""

import sys

from nexus_memory.cli import main

sys.exit(main())
