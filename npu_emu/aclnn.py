"""The aclnn two-phase API: ``aclnnXxxGetWorkspaceSize(..., out) -> (status, workspace_size, executor)`` then
``aclnnXxx(workspace, workspace_size, executor, stream=None) -> status``. Statuses are CANN's (docs/conventions.md §6);
``aclGetRecentErrMsg()`` returns the message of the last failure.

Built from the op registry like npu_emu.ops: an op family is imported on first use of one of its names, so
``import npu_emu.aclnn`` loads no kernel module.
"""

from npu_emu.frontend import registry as _registry

_OWN = {"aclGetRecentErrMsg": "npu_emu.frontend.core:recent_error"}


def _index():
    return {**_OWN, **_registry.index("aclnn")}


def __getattr__(name):
    if name == "__all__":
        value = list(_index())
        globals()[name] = value
        return value
    ref = _index().get(name) if not name.startswith("__") else None
    if ref is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = _registry.load(ref)
    globals()[name] = value  # later lookups are plain attribute reads
    return value


def __dir__():
    return sorted(set(globals()) | set(_index()))
