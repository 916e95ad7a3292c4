"""C ABI front end: CANN aclnn test programs (acl/acl.h, aclnnop/aclnn_<op>.h) compiled with an ordinary C++
compiler and run on the CPU through npu-emu. ``npu-emu cabi build --prefix DIR`` writes the headers and libraries
(:mod:`npu_emu.cabi.build`); the libraries embed Python and call :mod:`npu_emu.cabi.bridge`. See
docs/integrations/cabi.md.
"""

from npu_emu.cabi.build import build, compile_command, find_compiler

__all__ = ["build", "compile_command", "find_compiler"]
