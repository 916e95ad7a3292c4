// GatherDequantInt8 (npu-emu's aclnn form of the sample op): uint8 table rows gathered by int32 indices and
// dequantised to float16 with per-row scale and zero point. Prints inputs and output as hex.
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_gather_dequant_int8.h"
#include "common.h"

int main()
{
    int32_t deviceId = 0;
    aclrtStream stream;
    auto ret = Init(deviceId, &stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("Init acl failed. ERROR: %d\n", ret); return ret);

    const int64_t vocab = 16, emb = 256;
    std::vector<uint8_t> tableHost = LcgBytes(vocab * emb, 51);
    std::vector<uint8_t> pick = LcgBytes(8, 52);
    std::vector<int32_t> indicesHost(8);
    for (size_t i = 0; i < indicesHost.size(); i++) indicesHost[i] = pick[i] % vocab;
    std::vector<uint8_t> sz = LcgBytes(2 * vocab, 53);
    std::vector<uint16_t> scaleHost(vocab), zeroHost(vocab);
    for (int64_t i = 0; i < vocab; i++) {
        scaleHost[i] = static_cast<uint16_t>(0x1c00u | (sz[i] << 2));   // float16 around 0.004 .. 0.008
        zeroHost[i] = static_cast<uint16_t>(0x5000u | (sz[vocab + i] << 1));  // float16 around 32 .. 48
    }
    std::vector<uint16_t> outHost(8 * emb, 0);
    void *tableAddr, *indicesAddr, *scaleAddr, *zeroAddr, *outAddr;
    aclTensor *table, *indices, *scale, *zeroPoint, *out;
    CHECK_RET(CreateAclTensor(tableHost, {vocab, emb}, &tableAddr, aclDataType::ACL_UINT8, &table) == 0, return 1);
    CHECK_RET(CreateAclTensor(indicesHost, {2, 4}, &indicesAddr, aclDataType::ACL_INT32, &indices) == 0, return 1);
    CHECK_RET(CreateAclTensor(scaleHost, {vocab}, &scaleAddr, aclDataType::ACL_FLOAT16, &scale) == 0, return 1);
    CHECK_RET(CreateAclTensor(zeroHost, {vocab}, &zeroAddr, aclDataType::ACL_FLOAT16, &zeroPoint) == 0, return 1);
    CHECK_RET(CreateAclTensor(outHost, {2, 4, emb}, &outAddr, aclDataType::ACL_FLOAT16, &out) == 0, return 1);

    uint64_t workspaceSize = 0;
    aclOpExecutor* executor;
    ret = aclnnGatherDequantInt8GetWorkspaceSize(table, indices, scale, zeroPoint, out, &workspaceSize, &executor);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnGatherDequantInt8GetWorkspaceSize failed. ERROR: %d\n%s\n", ret,
                                            aclGetRecentErrMsg());
              return ret);
    void* workspaceAddr = nullptr;
    if (workspaceSize > 0) {
        ret = aclrtMalloc(&workspaceAddr, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
        CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("allocate workspace failed. ERROR: %d\n", ret); return ret);
    }
    ret = aclnnGatherDequantInt8(workspaceAddr, workspaceSize, executor, stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnGatherDequantInt8 failed. ERROR: %d\n", ret); return ret);
    ret = aclrtSynchronizeStream(stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSynchronizeStream failed. ERROR: %d\n", ret); return ret);

    PrintHex("table", tableHost.data(), tableHost.size());
    PrintHex("indices", indicesHost.data(), indicesHost.size() * 4);
    PrintHex("scale", scaleHost.data(), scaleHost.size() * 2);
    PrintHex("zero_point", zeroHost.data(), zeroHost.size() * 2);
    ret = PrintDevice("out", outAddr, outHost.size() * 2);
    CHECK_RET(ret == ACL_SUCCESS, return ret);

    for (auto t : {table, indices, scale, zeroPoint, out}) aclDestroyTensor(t);
    for (auto a : {tableAddr, indicesAddr, scaleAddr, zeroAddr, outAddr}) aclrtFree(a);
    if (workspaceSize > 0) aclrtFree(workspaceAddr);
    Finalize(deviceId, stream);
    return 0;
}
