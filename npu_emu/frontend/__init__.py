"""Shared front-end plumbing: input normalisation, dtype resolution and the aclnn executor (``core``), CANN's .bin
files (``binfile``), and the op registry every front end is built from (``registry``). Importing this package
imports nothing: ``registry`` stays free of numpy so that ``import npu_emu.ops`` is cheap."""
