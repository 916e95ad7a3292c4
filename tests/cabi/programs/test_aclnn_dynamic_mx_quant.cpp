// DynamicMxQuant (bf16 -> FLOAT8_E4M3FN along the last axis) and GroupedDynamicMxQuant (bf16 -> E4M3FN, two
// row groups), written like CANN's examples/arch35/test_aclnn_dynamic_mx_quant.cpp. Prints inputs and outputs as hex.
#include <memory>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_dynamic_mx_quant.h"
#include "aclnnop/aclnn_grouped_dynamic_mx_quant.h"
#include "common.h"

// bf16 bits with exponents 2^-8 .. 2^7 and both signs, from LCG bytes
static std::vector<uint16_t> Bf16Input(size_t n, uint32_t seed)
{
    std::vector<uint8_t> b = LcgBytes(2 * n, seed);
    std::vector<uint16_t> x(n);
    for (size_t i = 0; i < n; i++) {
        uint16_t bits = static_cast<uint16_t>(b[2 * i] | (b[2 * i + 1] << 8));
        x[i] = static_cast<uint16_t>((bits & 0x87ffu) | 0x3b80u);
    }
    return x;
}

static int RunWorkspace(aclnnStatus ret, const char* name, uint64_t workspaceSize, void** workspaceAddr)
{
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("%sGetWorkspaceSize failed. ERROR: %d\n", name, ret); return ret);
    *workspaceAddr = nullptr;
    if (workspaceSize > 0) {
        auto r = aclrtMalloc(workspaceAddr, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
        CHECK_RET(r == ACL_SUCCESS, LOG_PRINT("allocate workspace failed. ERROR: %d\n", r); return r);
    }
    return 0;
}

static int DynamicMxQuant(aclrtStream stream)
{
    std::vector<int64_t> xShape = {2, 64};
    std::vector<int64_t> yOutShape = {2, 64};
    std::vector<int64_t> mxscaleOutShape = {2, 1, 2};
    std::vector<uint16_t> xHostData = Bf16Input(128, 5);
    std::vector<uint8_t> yOutHostData(128, 0);
    std::vector<uint8_t> mxscaleOutHostData(4, 0);
    void* xDeviceAddr = nullptr;
    void* yOutDeviceAddr = nullptr;
    void* mxscaleOutDeviceAddr = nullptr;
    aclTensor* x = nullptr;
    aclTensor* yOut = nullptr;
    aclTensor* mxscaleOut = nullptr;
    int64_t axis = -1;
    char* roundModeOptional = const_cast<char*>("rint");
    int64_t dstType = 36;
    int64_t blocksize = 32;
    int64_t scaleAlg = 0;
    auto ret = CreateAclTensor(xHostData, xShape, &xDeviceAddr, aclDataType::ACL_BF16, &x);
    std::unique_ptr<aclTensor, aclnnStatus (*)(const aclTensor*)> xTensorPtr(x, aclDestroyTensor);
    std::unique_ptr<void, aclError (*)(void*)> xDeviceAddrPtr(xDeviceAddr, aclrtFree);
    CHECK_RET(ret == ACL_SUCCESS, return ret);
    ret = CreateAclTensor(yOutHostData, yOutShape, &yOutDeviceAddr, aclDataType::ACL_FLOAT8_E4M3FN, &yOut);
    std::unique_ptr<aclTensor, aclnnStatus (*)(const aclTensor*)> yOutTensorPtr(yOut, aclDestroyTensor);
    std::unique_ptr<void, aclError (*)(void*)> yOutDeviceAddrPtr(yOutDeviceAddr, aclrtFree);
    CHECK_RET(ret == ACL_SUCCESS, return ret);
    ret = CreateAclTensor(mxscaleOutHostData, mxscaleOutShape, &mxscaleOutDeviceAddr, aclDataType::ACL_FLOAT8_E8M0,
                          &mxscaleOut);
    std::unique_ptr<aclTensor, aclnnStatus (*)(const aclTensor*)> mxscaleOutTensorPtr(mxscaleOut, aclDestroyTensor);
    std::unique_ptr<void, aclError (*)(void*)> mxscaleOutDeviceAddrPtr(mxscaleOutDeviceAddr, aclrtFree);
    CHECK_RET(ret == ACL_SUCCESS, return ret);

    uint64_t workspaceSize = 0;
    aclOpExecutor* executor;
    void* workspaceAddr = nullptr;
    ret = aclnnDynamicMxQuantGetWorkspaceSize(x, axis, roundModeOptional, dstType, blocksize, scaleAlg, yOut,
                                              mxscaleOut, &workspaceSize, &executor);
    ret = RunWorkspace(ret, "aclnnDynamicMxQuant", workspaceSize, &workspaceAddr);
    CHECK_RET(ret == ACL_SUCCESS, return ret);
    std::unique_ptr<void, aclError (*)(void*)> workspaceAddrPtr(workspaceAddr, aclrtFree);
    ret = aclnnDynamicMxQuant(workspaceAddr, workspaceSize, executor, stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnDynamicMxQuant failed. ERROR: %d\n", ret); return ret);
    ret = aclrtSynchronizeStream(stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSynchronizeStream failed. ERROR: %d\n", ret); return ret);

    PrintHex("mx_x", xHostData.data(), xHostData.size() * 2);
    ret = PrintDevice("mx_y", yOutDeviceAddr, GetShapeSize(yOutShape));
    CHECK_RET(ret == ACL_SUCCESS, return ret);
    return PrintDevice("mx_scale", mxscaleOutDeviceAddr, GetShapeSize(mxscaleOutShape));
}

static int GroupedDynamicMxQuant(aclrtStream stream)
{
    // x [m, n] quantised along m in blocks of 32 rows; groupIndex holds each group's end row
    std::vector<int64_t> xShape = {64, 32};
    std::vector<int64_t> groupIndexShape = {2};
    std::vector<int64_t> yShape = {64, 32};
    std::vector<int64_t> mxscaleShape = {64 / 64 + 2, 32, 2};
    std::vector<uint16_t> xHostData = Bf16Input(64 * 32, 9);
    std::vector<int32_t> groupIndexHostData = {16, 64};
    std::vector<uint8_t> yHostData(64 * 32, 0);
    std::vector<uint8_t> mxscaleHostData(GetShapeSize(mxscaleShape), 0);
    void* xDeviceAddr = nullptr;
    void* groupIndexDeviceAddr = nullptr;
    void* yDeviceAddr = nullptr;
    void* mxscaleDeviceAddr = nullptr;
    aclTensor* x = nullptr;
    aclTensor* groupIndex = nullptr;
    aclTensor* y = nullptr;
    aclTensor* mxscale = nullptr;
    auto ret = CreateAclTensor(xHostData, xShape, &xDeviceAddr, aclDataType::ACL_BF16, &x);
    CHECK_RET(ret == ACL_SUCCESS, return ret);
    ret = CreateAclTensor(groupIndexHostData, groupIndexShape, &groupIndexDeviceAddr, aclDataType::ACL_INT32,
                          &groupIndex);
    CHECK_RET(ret == ACL_SUCCESS, return ret);
    ret = CreateAclTensor(yHostData, yShape, &yDeviceAddr, aclDataType::ACL_FLOAT8_E4M3FN, &y);
    CHECK_RET(ret == ACL_SUCCESS, return ret);
    ret = CreateAclTensor(mxscaleHostData, mxscaleShape, &mxscaleDeviceAddr, aclDataType::ACL_FLOAT8_E8M0, &mxscale);
    CHECK_RET(ret == ACL_SUCCESS, return ret);

    uint64_t workspaceSize = 0;
    aclOpExecutor* executor;
    void* workspaceAddr = nullptr;
    char* roundMode = const_cast<char*>("rint");
    ret = aclnnGroupedDynamicMxQuantGetWorkspaceSize(x, groupIndex, roundMode, 36, 32, y, mxscale, &workspaceSize,
                                                     &executor);
    ret = RunWorkspace(ret, "aclnnGroupedDynamicMxQuant", workspaceSize, &workspaceAddr);
    CHECK_RET(ret == ACL_SUCCESS, return ret);
    ret = aclnnGroupedDynamicMxQuant(workspaceAddr, workspaceSize, executor, stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnGroupedDynamicMxQuant failed. ERROR: %d\n", ret); return ret);
    ret = aclrtSynchronizeStream(stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSynchronizeStream failed. ERROR: %d\n", ret); return ret);

    PrintHex("grouped_x", xHostData.data(), xHostData.size() * 2);
    ret = PrintDevice("grouped_y", yDeviceAddr, GetShapeSize(yShape));
    CHECK_RET(ret == ACL_SUCCESS, return ret);
    ret = PrintDevice("grouped_scale", mxscaleDeviceAddr, GetShapeSize(mxscaleShape));
    CHECK_RET(ret == ACL_SUCCESS, return ret);
    aclDestroyTensor(x);
    aclDestroyTensor(groupIndex);
    aclDestroyTensor(y);
    aclDestroyTensor(mxscale);
    aclrtFree(xDeviceAddr);
    aclrtFree(groupIndexDeviceAddr);
    aclrtFree(yDeviceAddr);
    aclrtFree(mxscaleDeviceAddr);
    if (workspaceSize > 0) {
        aclrtFree(workspaceAddr);
    }
    return 0;
}

int main()
{
    int32_t deviceId = 0;
    aclrtStream stream;
    auto ret = Init(deviceId, &stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("Init acl failed. ERROR: %d\n", ret); return ret);
    ret = DynamicMxQuant(stream);
    CHECK_RET(ret == ACL_SUCCESS, Finalize(deviceId, stream); return ret);
    ret = GroupedDynamicMxQuant(stream);
    CHECK_RET(ret == ACL_SUCCESS, Finalize(deviceId, stream); return ret);
    Finalize(deviceId, stream);
    return 0;
}
