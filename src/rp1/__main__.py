import sys

from rp1.cli import main

sys.exit(main())
