// Sparse4to2QuantMatmulWeightNz: aclnnTransSparse4to2Para compresses a 2:4 sparse int8 weight on the host (it
// returns new[] arrays and their dims), the program uploads them as tensors whose storage shape is those dims, then
// runs the op (-> bfloat16). Prints inputs and output as hex.
#include <memory>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_sparse4to2quant_matmul_weight_nz.h"
#include "common.h"

template <typename T>
static int CreateStoredTensor(const T* data, const std::vector<int64_t>& viewShape, const int64_t* storageDims,
                              uint64_t storageDimsNum, void** deviceAddr, aclDataType dataType, aclTensor** tensor)
{
    int64_t n = 1;
    for (uint64_t i = 0; i < storageDimsNum; i++) n *= storageDims[i];
    auto size = static_cast<size_t>(n) * sizeof(T);
    auto ret = aclrtMalloc(deviceAddr, size, ACL_MEM_MALLOC_HUGE_FIRST);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtMalloc failed. ERROR: %d\n", ret); return ret);
    ret = aclrtMemcpy(*deviceAddr, size, data, size, ACL_MEMCPY_HOST_TO_DEVICE);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtMemcpy failed. ERROR: %d\n", ret); return ret);
    std::vector<int64_t> strides(viewShape.size(), 1);
    for (int64_t i = static_cast<int64_t>(viewShape.size()) - 2; i >= 0; i--)
        strides[i] = viewShape[i + 1] * strides[i + 1];
    *tensor = aclCreateTensor(viewShape.data(), viewShape.size(), dataType, strides.data(), 0,
                              aclFormat::ACL_FORMAT_ND, storageDims, storageDimsNum, *deviceAddr);
    return 0;
}

int main()
{
    int32_t deviceId = 0;
    aclrtStream stream;
    auto ret = Init(deviceId, &stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("Init acl failed. ERROR: %d\n", ret); return ret);

    const int64_t m = 8, k = 128, n = 32;
    std::vector<uint8_t> xb = LcgBytes(m * k, 61);
    std::vector<int8_t> xHost(xb.begin(), xb.end());
    // dense weight [n, k] with two zeros in every group of four along k
    std::vector<uint8_t> wb = LcgBytes(n * k, 62);
    std::vector<int8_t> weightHost(n * k);
    for (int64_t i = 0; i < n * k; i++) weightHost[i] = (i % 4 == 1 || i % 4 == 2) ? 0 : static_cast<int8_t>(wb[i]);
    std::vector<uint8_t> sb = LcgBytes(m + n, 63);
    std::vector<float> xScaleHost(m), weightScaleHost(n);
    for (int64_t i = 0; i < m; i++) xScaleHost[i] = 0.01f + 0.005f * (sb[i] % 16);
    for (int64_t i = 0; i < n; i++) weightScaleHost[i] = 0.01f + 0.005f * (sb[m + i] % 16);

    std::vector<int64_t> weightShape = {n, k};
    aclIntArray* weightShapeArray = aclCreateIntArray(weightShape.data(), weightShape.size());
    int8_t* sparseWeightHost = nullptr;
    uint8_t* indexHost = nullptr;
    int64_t* sparseWeightDims = nullptr;
    int64_t* indexDims = nullptr;
    uint64_t sparseWeightDimsNum = 0, indexDimsNum = 0;
    ret = aclnnTransSparse4to2Para(weightHost.data(), weightShapeArray, &sparseWeightHost, &sparseWeightDims,
                                   &sparseWeightDimsNum, &indexHost, &indexDims, &indexDimsNum);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnTransSparse4to2Para failed. ERROR: %d\n", ret); return ret);
    std::unique_ptr<int8_t[]> sparseWeightHostPtr(sparseWeightHost);
    std::unique_ptr<uint8_t[]> indexHostPtr(indexHost);
    std::unique_ptr<int64_t[]> sparseWeightDimsPtr(sparseWeightDims);
    std::unique_ptr<int64_t[]> indexDimsPtr(indexDims);
    aclDestroyIntArray(weightShapeArray);

    void *xAddr, *sparseWeightAddr, *indexAddr, *xScaleAddr, *weightScaleAddr, *outAddr;
    aclTensor *x, *sparseWeight, *index, *xScale, *weightScale, *out;
    std::vector<uint16_t> outHost(m * n, 0);
    CHECK_RET(CreateAclTensor(xHost, {m, k}, &xAddr, aclDataType::ACL_INT8, &x) == 0, return 1);
    CHECK_RET(CreateStoredTensor(sparseWeightHost, weightShape, sparseWeightDims, sparseWeightDimsNum,
                                 &sparseWeightAddr, aclDataType::ACL_INT8, &sparseWeight) == 0, return 1);
    CHECK_RET(CreateStoredTensor(indexHost, {n, (k + 7) / 8}, indexDims, indexDimsNum, &indexAddr,
                                 aclDataType::ACL_UINT8, &index) == 0, return 1);
    CHECK_RET(CreateAclTensor(xScaleHost, {m}, &xScaleAddr, aclDataType::ACL_FLOAT, &xScale) == 0, return 1);
    CHECK_RET(CreateAclTensor(weightScaleHost, {n}, &weightScaleAddr, aclDataType::ACL_FLOAT, &weightScale) == 0,
              return 1);
    CHECK_RET(CreateAclTensor(outHost, {m, n}, &outAddr, aclDataType::ACL_BF16, &out) == 0, return 1);

    uint64_t workspaceSize = 0;
    aclOpExecutor* executor;
    ret = aclnnSparse4to2QuantMatmulWeightNzGetWorkspaceSize(x, sparseWeight, index, xScale, weightScale, nullptr,
                                                             out, &workspaceSize, &executor);
    CHECK_RET(ret == ACL_SUCCESS,
              LOG_PRINT("aclnnSparse4to2QuantMatmulWeightNzGetWorkspaceSize failed. ERROR: %d\n%s\n", ret,
                        aclGetRecentErrMsg());
              return ret);
    void* workspaceAddr = nullptr;
    if (workspaceSize > 0) {
        ret = aclrtMalloc(&workspaceAddr, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
        CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("allocate workspace failed. ERROR: %d\n", ret); return ret);
    }
    ret = aclnnSparse4to2QuantMatmulWeightNz(workspaceAddr, workspaceSize, executor, stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnSparse4to2QuantMatmulWeightNz failed. ERROR: %d\n", ret);
              return ret);
    ret = aclrtSynchronizeStream(stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSynchronizeStream failed. ERROR: %d\n", ret); return ret);

    PrintHex("x", xHost.data(), xHost.size());
    PrintHex("weight", weightHost.data(), weightHost.size());
    PrintHex("x_scale", xScaleHost.data(), xScaleHost.size() * 4);
    PrintHex("weight_scale", weightScaleHost.data(), weightScaleHost.size() * 4);
    ret = PrintDevice("out", outAddr, outHost.size() * 2);
    CHECK_RET(ret == ACL_SUCCESS, return ret);

    for (auto t : {x, sparseWeight, index, xScale, weightScale, out}) aclDestroyTensor(t);
    for (auto a : {xAddr, sparseWeightAddr, indexAddr, xScaleAddr, weightScaleAddr, outAddr}) aclrtFree(a);
    if (workspaceSize > 0) aclrtFree(workspaceAddr);
    Finalize(deviceId, stream);
    return 0;
}
