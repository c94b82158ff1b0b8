"""`python -m strato.vta.simulator`: the command line of `strato.targets.vta.simulator`."""

import sys

from strato.targets.vta.simulator import main

if __name__ == "__main__":
    sys.exit(main())
