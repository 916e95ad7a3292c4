/* npu-emu C ABI: the calls between the generated aclnn wrappers (aclnn_ops.cpp) and runtime.cpp. Not for users. */
#ifndef NPU_EMU_CABI_INTERNAL_H_
#define NPU_EMU_CABI_INTERNAL_H_

#include <stdint.h>
#include "aclnn/aclnn_base.h"

enum { NPU_EMU_CABI_TENSOR = 0, NPU_EMU_CABI_INT = 1, NPU_EMU_CABI_DOUBLE = 2, NPU_EMU_CABI_BOOL = 3,
       NPU_EMU_CABI_STR = 4, NPU_EMU_CABI_TENSOR_LIST = 5,
       NPU_EMU_CABI_INT_ARRAY = 6 };

typedef struct {
    int kind;
    const void* p;
    int64_t i;
    double d;
} npu_emu_cabi_arg;

#ifdef __cplusplus
extern "C" {
#endif

aclnnStatus npu_emu_cabi_workspace(const char* op, int nargs, const npu_emu_cabi_arg* args,
                                   uint64_t* workspaceSize, aclOpExecutor** executor);
aclnnStatus npu_emu_cabi_run(const char* op, void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                             aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif
