"""aclnn status codes and the error every public entry raises.

Codes: hicann/opbase include/nnopbase/opdev/op_errno.h (docs/conventions.md §6).
"""

ACLNN_SUCCESS = 0
ACLNN_ERR_PARAM_NULLPTR = 161001
ACLNN_ERR_PARAM_INVALID = 161002
ACLNN_ERR_RUNTIME_ERROR = 361001
ACLNN_ERR_INNER = 561000
ACLNN_ERR_INNER_TILING_ERROR = 561002
ACLNN_ERR_INNER_FIND_KERNEL_ERROR = 561003
ACLNN_ERR_INNER_CREATE_EXECUTOR = 561101
ACLNN_ERR_INNER_NULLPTR = 561103

STATUS_NAMES = {
    ACLNN_SUCCESS: "ACLNN_SUCCESS",
    ACLNN_ERR_PARAM_NULLPTR: "ACLNN_ERR_PARAM_NULLPTR",
    ACLNN_ERR_PARAM_INVALID: "ACLNN_ERR_PARAM_INVALID",
    ACLNN_ERR_RUNTIME_ERROR: "ACLNN_ERR_RUNTIME_ERROR",
    ACLNN_ERR_INNER: "ACLNN_ERR_INNER",
    ACLNN_ERR_INNER_TILING_ERROR: "ACLNN_ERR_INNER_TILING_ERROR",
    ACLNN_ERR_INNER_FIND_KERNEL_ERROR: "ACLNN_ERR_INNER_FIND_KERNEL_ERROR",
    ACLNN_ERR_INNER_CREATE_EXECUTOR: "ACLNN_ERR_INNER_CREATE_EXECUTOR",
    ACLNN_ERR_INNER_NULLPTR: "ACLNN_ERR_INNER_NULLPTR",
}


class AclnnError(ValueError):
    """A rejected call. ``status`` is the aclnn code the GetWorkspaceSize phase would return."""

    def __init__(self, status, message):
        self.status = int(status)
        self.message = str(message)
        name = STATUS_NAMES.get(self.status, "ACLNN_ERR")
        super().__init__(f"[{self.status} {name}] {self.message}")

    def __reduce__(self):
        return (type(self), (self.status, self.message))


def invalid(message):
    return AclnnError(ACLNN_ERR_PARAM_INVALID, message)


def nullptr(name):
    return AclnnError(ACLNN_ERR_PARAM_NULLPTR, f"{name} is None (a null pointer in aclnn); pass an array")
