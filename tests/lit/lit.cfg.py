# The lit configuration of strato's FileCheck suite: `lit -v tests/lit`.
#
# Tools run with the Python that runs lit (`python -m ...`), so the suite works from any
# environment where strato and the test extra are installed, without PATH set-up.
# `not` is lit's internal-shell builtin.

import os
import shlex
import sys

import lit.formats

config.name = "strato"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir"]
# Inputs/ holds files that tests read, not tests.
config.excludes = ["Inputs", "Output", "lit.cfg.py"]
config.test_source_root = os.path.dirname(__file__)

python = shlex.quote(sys.executable)

# A tool name is replaced only where it stands as a command word, never inside a path
# or a longer name (`strato-opt-foo`, `/x/strato-opt`).
_word_start = r"(?<![\w./-])"
_word_end = r"(?![\w.-])"

config.substitutions.append(
    (_word_start + "strato-opt" + _word_end, f"{python} -m strato.tools.strato_opt")
)
config.substitutions.append(
    (_word_start + "filecheck" + _word_end, f"{python} -m filecheck")
)

for name in ("PYTHONPATH", "HOME", "TMPDIR"):
    if name in os.environ:
        config.environment[name] = os.environ[name]
