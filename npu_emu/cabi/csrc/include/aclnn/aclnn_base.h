/* npu-emu C ABI: what every aclnnop header includes. */
#ifndef NPU_EMU_ACLNN_BASE_H_
#define NPU_EMU_ACLNN_BASE_H_

#include "acl_meta.h"

#ifndef ACLNN_API
#define ACLNN_API __attribute__((visibility("default")))
#endif

#define ACLNN_SUCCESS 0
#define ACLNN_ERR_PARAM_NULLPTR 161001
#define ACLNN_ERR_PARAM_INVALID 161002
#define ACLNN_ERR_RUNTIME_ERROR 361001
#define ACLNN_ERR_INNER 561000
#define ACLNN_ERR_INNER_NULLPTR 561103

#endif
