"""`python -m strato.vta.run_model`: the command line of `strato.targets.vta.run_model`."""

import sys

from strato.targets.vta.run_model import main

if __name__ == "__main__":
    sys.exit(main())
