"""``python -m npu_emu.cli``: the ``npu-emu`` command."""

import sys

from npu_emu.cli import main

sys.exit(main())
