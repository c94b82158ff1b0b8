"""`python -m strato.vta.examples`: the command line of `strato.targets.vta.examples`."""

import sys

from strato.targets.vta.examples import main

if __name__ == "__main__":
    sys.exit(main())
