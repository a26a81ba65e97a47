import os
import sys

from rp1.cli import main

if sys.path and sys.path[0] and os.path.abspath(sys.path[0]) == os.getcwd():
    # `python -m rp1` put the working directory first on sys.path: take it away, so that a run's
    # task module (`module:Spec` in its config.json) is imported as `rp1` imports it, from
    # installed modules and PYTHONPATH, not from whatever directory rp1 is started in
    # (`rp1 train`, `envs` and `sweep` add the working directory themselves, last)
    del sys.path[0]

sys.exit(main())
