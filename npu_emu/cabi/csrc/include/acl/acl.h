/* npu-emu C ABI: the acl entry header (runtime and base types). */
#ifndef NPU_EMU_ACL_H_
#define NPU_EMU_ACL_H_

#include "acl_base.h"
#include "acl_rt.h"

#endif
