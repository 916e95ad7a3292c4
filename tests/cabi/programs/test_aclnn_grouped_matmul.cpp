// GroupedMatmul through aclnnGroupedMatmulV4 with aclTensorList arguments, as CANN's example does: int8 x (M, K),
// int8 weight (E, K, N), int64 group list (counts), y int32 (M, N); then the same with separated weights
// (a list of E (K, N) tensors). Prints inputs and outputs as hex.
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_grouped_matmul_v4.h"
#include "aclnnop/aclnn_grouped_matmul_v5.h"
#include "common.h"

static int RunV4(aclTensorList* x, aclTensorList* weight, aclTensor* groupList, aclTensorList* y,
                 aclrtStream stream)
{
    uint64_t workspaceSize = 0;
    aclOpExecutor* executor;
    auto ret = aclnnGroupedMatmulV4GetWorkspaceSize(x, weight, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                                    groupList, nullptr, nullptr, nullptr, 3, 0, 1, 0, y, nullptr,
                                                    nullptr, &workspaceSize, &executor);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnGroupedMatmulV4GetWorkspaceSize failed. ERROR: %d\n%s\n", ret,
                                            aclGetRecentErrMsg());
              return ret);
    void* workspaceAddr = nullptr;
    if (workspaceSize > 0) {
        ret = aclrtMalloc(&workspaceAddr, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
        CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("allocate workspace failed. ERROR: %d\n", ret); return ret);
    }
    ret = aclnnGroupedMatmulV4(workspaceAddr, workspaceSize, executor, stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnGroupedMatmulV4 failed. ERROR: %d\n%s\n", ret,
                                            aclGetRecentErrMsg());
              return ret);
    ret = aclrtSynchronizeStream(stream);
    if (workspaceAddr != nullptr) aclrtFree(workspaceAddr);
    return ret;
}

int main()
{
    int32_t deviceId = 0;
    aclrtStream stream;
    auto ret = Init(deviceId, &stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("Init acl failed. ERROR: %d\n", ret); return ret);

    const int64_t e = 3, m = 20, k = 32, n = 16;
    std::vector<uint8_t> xb = LcgBytes(m * k, 71), wb = LcgBytes(e * k * n, 72);
    std::vector<int8_t> xHost(xb.begin(), xb.end()), wHost(wb.begin(), wb.end());
    std::vector<int64_t> glHost = {6, 0, 11};          // counts: rows 17.. belong to no group
    std::vector<int32_t> yHost(m * n, 0);
    void *xAddr, *wAddr, *glAddr, *yAddr, *y2Addr;
    aclTensor *xT, *wT, *glT, *yT, *y2T;
    CHECK_RET(CreateAclTensor(xHost, {m, k}, &xAddr, aclDataType::ACL_INT8, &xT) == 0, return 1);
    CHECK_RET(CreateAclTensor(wHost, {e, k, n}, &wAddr, aclDataType::ACL_INT8, &wT) == 0, return 1);
    CHECK_RET(CreateAclTensor(glHost, {e}, &glAddr, aclDataType::ACL_INT64, &glT) == 0, return 1);
    CHECK_RET(CreateAclTensor(yHost, {m, n}, &yAddr, aclDataType::ACL_INT32, &yT) == 0, return 1);
    CHECK_RET(CreateAclTensor(yHost, {m, n}, &y2Addr, aclDataType::ACL_INT32, &y2T) == 0, return 1);

    aclTensorList* xList = aclCreateTensorList(&xT, 1);
    aclTensorList* wList = aclCreateTensorList(&wT, 1);
    aclTensorList* yList = aclCreateTensorList(&yT, 1);
    ret = RunV4(xList, wList, glT, yList, stream);
    CHECK_RET(ret == ACL_SUCCESS, return ret);

    // separated weights: E tensors (K, N) over the same memory
    std::vector<aclTensor*> ws(e);
    for (int64_t i = 0; i < e; i++) {
        std::vector<int64_t> shape = {k, n}, strides = {n, 1};
        ws[i] = aclCreateTensor(shape.data(), 2, aclDataType::ACL_INT8, strides.data(), i * k * n,
                                aclFormat::ACL_FORMAT_ND, std::vector<int64_t>{e, k, n}.data(), 3, wAddr);
    }
    aclTensor* x2T;
    void* x2Addr;
    CHECK_RET(CreateAclTensor(xHost, {m, k}, &x2Addr, aclDataType::ACL_INT8, &x2T) == 0, return 1);
    aclTensorList* x2List = aclCreateTensorList(&x2T, 1);
    aclTensorList* wsList = aclCreateTensorList(ws.data(), e);
    aclTensorList* y2List = aclCreateTensorList(&y2T, 1);
    ret = RunV4(x2List, wsList, glT, y2List, stream);
    CHECK_RET(ret == ACL_SUCCESS, return ret);

    // aclnnGroupedMatmulV5 with an aclIntArray tuning config, into a third y
    void* y3Addr;
    aclTensor* y3T;
    CHECK_RET(CreateAclTensor(yHost, {m, n}, &y3Addr, aclDataType::ACL_INT32, &y3T) == 0, return 1);
    aclTensorList* y3List = aclCreateTensorList(&y3T, 1);
    int64_t tuningHost[1] = {0};
    aclIntArray* tuning = aclCreateIntArray(tuningHost, 1);
    uint64_t ws5 = 0;
    aclOpExecutor* ex5;
    ret = aclnnGroupedMatmulV5GetWorkspaceSize(xList, wList, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, glT,
                                               nullptr, nullptr, nullptr, 3, 0, 1, 0, tuning, y3List, nullptr,
                                               nullptr, &ws5, &ex5);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnGroupedMatmulV5GetWorkspaceSize failed. ERROR: %d\n%s\n", ret,
                                            aclGetRecentErrMsg());
              return ret);
    void* ws5Addr = nullptr;
    if (ws5 > 0) aclrtMalloc(&ws5Addr, ws5, ACL_MEM_MALLOC_HUGE_FIRST);
    ret = aclnnGroupedMatmulV5(ws5Addr, ws5, ex5, stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnGroupedMatmulV5 failed. ERROR: %d\n", ret); return ret);
    aclrtSynchronizeStream(stream);
    if (ws5Addr != nullptr) aclrtFree(ws5Addr);
    ret = PrintDevice("y_v5", y3Addr, yHost.size() * 4);
    CHECK_RET(ret == ACL_SUCCESS, return ret);
    aclDestroyIntArray(tuning);
    aclDestroyTensorList(y3List);
    aclrtFree(y3Addr);

    PrintHex("x", xHost.data(), xHost.size());
    PrintHex("weight", wHost.data(), wHost.size());
    PrintHex("group_list", glHost.data(), glHost.size() * 8);
    ret = PrintDevice("y", yAddr, yHost.size() * 4);
    CHECK_RET(ret == ACL_SUCCESS, return ret);
    ret = PrintDevice("y_separated", y2Addr, yHost.size() * 4);
    CHECK_RET(ret == ACL_SUCCESS, return ret);

    // a destroyed list is refused with a status, not read
    aclDestroyTensorList(yList);
    uint64_t wsSize = 0;
    aclOpExecutor* ex;
    ret = aclnnGroupedMatmulV4GetWorkspaceSize(xList, wList, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                               glT, nullptr, nullptr, nullptr, 3, 0, 1, 0, yList, nullptr, nullptr,
                                               &wsSize, &ex);
    printf("stale_list_status:%d\n", ret);

    for (auto l : {xList, wList, x2List, wsList, y2List}) aclDestroyTensorList(l);   // and their tensors
    aclDestroyTensor(glT);
    for (auto a : {xAddr, wAddr, glAddr, yAddr, y2Addr, x2Addr}) aclrtFree(a);
    aclrtDestroyStream(stream);
    aclrtResetDevice(deviceId);
    aclFinalize();
    return 0;
}
