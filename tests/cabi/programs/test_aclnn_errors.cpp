// Bad calls: each case prints "<case>=<status>"; the program must end normally (no crash in the shim).
#include <cstring>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_gather_dequant_int8.h"
#include "aclnnop/aclnn_permute.h"
#include "aclnnop/aclnn_sparse4to2quant_matmul_weight_nz.h"
#include "aclnnop/aclnn_trans_matmul_weight.h"
#include "aclnnop/aclnn_sign_bits_unpack.h"
#include "common.h"

#define REPORT(name, expr)                                  \
    do {                                                    \
        int status_ = static_cast<int>(expr);               \
        printf("%s=%d\n", name, status_);                   \
        if (status_ != 0) printf("#%s: %s\n", name, aclGetRecentErrMsg()); \
    } while (0)

int main()
{
    int32_t deviceId = 0;
    aclrtStream stream;
    auto ret = Init(deviceId, &stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("Init acl failed. ERROR: %d\n", ret); return ret);

    std::vector<uint8_t> selfHost = LcgBytes(8, 1);
    std::vector<float> outHost(64, 0);
    void *selfAddr, *outAddr, *intAddr;
    aclTensor *self, *out, *outInt32;
    CreateAclTensor(selfHost, {8}, &selfAddr, aclDataType::ACL_UINT8, &self);
    CreateAclTensor(outHost, {2, 32}, &outAddr, aclDataType::ACL_FLOAT, &out);
    CreateAclTensor(std::vector<int32_t>(64, 0), {2, 32}, &intAddr, aclDataType::ACL_INT32, &outInt32);
    uint64_t ws = 0;
    aclOpExecutor* ex = nullptr;

    // aclnn argument checks
    REPORT("null_tensor", aclnnSignBitsUnpackGetWorkspaceSize(nullptr, 2, ACL_FLOAT, out, &ws, &ex));
    REPORT("null_out", aclnnSignBitsUnpackGetWorkspaceSize(self, 2, ACL_FLOAT, nullptr, &ws, &ex));
    REPORT("wrong_dtype", aclnnSignBitsUnpackGetWorkspaceSize(self, 2, ACL_FLOAT, outInt32, &ws, &ex));
    REPORT("bad_dtype_arg", aclnnSignBitsUnpackGetWorkspaceSize(self, 2, static_cast<aclDataType>(99), out, &ws,
                                                                &ex));
    REPORT("null_workspace_size_ptr", aclnnSignBitsUnpackGetWorkspaceSize(self, 2, ACL_FLOAT, out, nullptr, &ex));
    std::vector<int64_t> big = {4096};
    aclTensor* tooBig = aclCreateTensor(big.data(), 1, ACL_UINT8, nullptr, 0, ACL_FORMAT_ND, big.data(), 1, selfAddr);
    REPORT("view_past_allocation", aclnnSignBitsUnpackGetWorkspaceSize(tooBig, 2, ACL_FLOAT, out, &ws, &ex));
    aclTensor* gone = aclCreateTensor(big.data(), 1, ACL_UINT8, nullptr, 0, ACL_FORMAT_ND, big.data(), 1, selfAddr);
    aclDestroyTensor(gone);
    REPORT("destroyed_tensor", aclnnSignBitsUnpackGetWorkspaceSize(gone, 2, ACL_FLOAT, out, &ws, &ex));
    aclTensor* nz = aclCreateTensor(big.data(), 1, ACL_UINT8, nullptr, 0, ACL_FORMAT_FRACTAL_NZ, big.data(), 1,
                                    selfAddr);
    REPORT("unsupported_format", aclnnSignBitsUnpackGetWorkspaceSize(nz, 2, ACL_FLOAT, out, &ws, &ex));
    REPORT("null_executor", aclnnSignBitsUnpack(nullptr, 0, nullptr, stream));

    // workspace checks of the second phase; the output must stay untouched by a refused launch
    REPORT("get_workspace", aclnnSignBitsUnpackGetWorkspaceSize(self, 2, ACL_FLOAT, out, &ws, &ex));
    printf("workspace_size=%llu\n", static_cast<unsigned long long>(ws));
    void* shortWs = nullptr;
    aclrtMalloc(&shortWs, ws / 2, ACL_MEM_MALLOC_HUGE_FIRST);
    REPORT("null_workspace", aclnnSignBitsUnpack(nullptr, ws, ex, stream));
    REPORT("short_workspace_size", aclnnSignBitsUnpack(shortWs, ws - 1, ex, stream));
    REPORT("short_workspace_allocation", aclnnSignBitsUnpack(shortWs, ws, ex, stream));
    PrintDevice("out_after_refused", outAddr, 64 * 4);
    REPORT("bad_stream", aclnnSignBitsUnpack(shortWs, ws, ex, reinterpret_cast<aclrtStream>(&ws)));
    void* fullWs = nullptr;
    aclrtMalloc(&fullWs, ws, ACL_MEM_MALLOC_HUGE_FIRST);
    REPORT("run", aclnnSignBitsUnpack(fullWs, ws, ex, stream));
    REPORT("executor_reused", aclnnSignBitsUnpack(fullWs, ws, ex, stream));
    REPORT("synchronize", aclrtSynchronizeStream(stream));

    // a failure at launch: an index made invalid after the first phase (which saw valid ones) fails the second,
    // and the stream reports it once at the next synchronize
    {
        void *tAddr, *iAddr, *sAddr, *zAddr, *oAddr;
        aclTensor *t, *i, *sc, *z, *o;
        std::vector<int32_t> idx = {0, 1};
        CreateAclTensor(std::vector<uint8_t>(4 * 32, 7), {4, 32}, &tAddr, ACL_UINT8, &t);
        CreateAclTensor(idx, {2}, &iAddr, ACL_INT32, &i);
        CreateAclTensor(std::vector<uint16_t>(4, 0x3c00), {4}, &sAddr, ACL_FLOAT16, &sc);
        CreateAclTensor(std::vector<uint16_t>(4, 0), {4}, &zAddr, ACL_FLOAT16, &z);
        CreateAclTensor(std::vector<uint16_t>(2 * 32, 0), {2, 32}, &oAddr, ACL_FLOAT16, &o);
        uint64_t gws = 0;
        aclOpExecutor* gex = nullptr;
        REPORT("gather_get_workspace", aclnnGatherDequantInt8GetWorkspaceSize(t, i, sc, z, o, &gws, &gex));
        idx[1] = 9;
        aclrtMemcpy(iAddr, 8, idx.data(), 8, ACL_MEMCPY_HOST_TO_DEVICE);
        void* gw = nullptr;
        if (gws > 0) aclrtMalloc(&gw, gws, ACL_MEM_MALLOC_HUGE_FIRST);
        REPORT("launch_failure", aclnnGatherDequantInt8(gw, gws, gex, stream));
        REPORT("synchronize_after_failure", aclrtSynchronizeStream(stream));
        REPORT("synchronize_again", aclrtSynchronizeStream(stream));
        for (auto x : {t, i, sc, z, o}) aclDestroyTensor(x);
        for (auto a : {tAddr, iAddr, sAddr, zAddr, oAddr}) aclrtFree(a);
        if (gw != nullptr) aclrtFree(gw);
    }

    // the data-movement helpers
    {
        std::vector<int64_t> shape = {40, 40};
        aclIntArray* shapeArray = aclCreateIntArray(shape.data(), shape.size());
        uint64_t elements = 0;
        REPORT("weight_size_null", aclnnCalculateMatmulWeightSizeV2(nullptr, ACL_INT8, &elements));
        REPORT("weight_size_bad_dtype", aclnnCalculateMatmulWeightSizeV2(shapeArray, ACL_INT32, &elements));
        REPORT("weight_size", aclnnCalculateMatmulWeightSizeV2(shapeArray, ACL_INT8, &elements));
        printf("weight_elements=%llu\n", static_cast<unsigned long long>(elements));   // 48 x 64
        void* wAddr;
        aclTensor* w;
        // sized for the ND weight, not for its FRACTAL_NZ storage
        CreateAclTensor(std::vector<int8_t>(40 * 40, 1), shape, &wAddr, ACL_INT8, &w);
        uint64_t tws = 0;
        aclOpExecutor* tex = nullptr;
        REPORT("trans_weight_short_allocation", aclnnTransMatmulWeightGetWorkspaceSize(w, &tws, &tex));
        std::vector<int64_t> badDims = {0, 0};
        aclIntArray* dims = aclCreateIntArray(badDims.data(), badDims.size());
        REPORT("permute_bad_dims", aclnnPermuteGetWorkspaceSize(w, dims, w, &tws, &tex));
        REPORT("permute_null", aclnnPermuteGetWorkspaceSize(w, nullptr, w, &tws, &tex));
        aclDestroyIntArray(dims);
        // a weight that is not 2:4 sparse (every value non-zero) cannot be compressed
        std::vector<int8_t> dense(32 * 64, 1);
        std::vector<int64_t> denseShape = {32, 64};
        aclIntArray* denseArray = aclCreateIntArray(denseShape.data(), denseShape.size());
        int8_t* sw = nullptr;
        uint8_t* ix = nullptr;
        int64_t *swDims = nullptr, *ixDims = nullptr;
        uint64_t swNum = 0, ixNum = 0;
        REPORT("sparse_not_sparse",
               aclnnTransSparse4to2Para(dense.data(), denseArray, &sw, &swDims, &swNum, &ix, &ixDims, &ixNum));
        REPORT("sparse_null", aclnnTransSparse4to2Para(nullptr, denseArray, &sw, &swDims, &swNum, &ix, &ixDims,
                                                       &ixNum));
        printf("sparse_outputs_untouched=%d\n", sw == nullptr && ix == nullptr && swNum == 0 ? 0 : 1);
        aclDestroyIntArray(denseArray);
        aclDestroyIntArray(shapeArray);
        aclDestroyTensor(w);
        aclrtFree(wAddr);
    }

    // runtime checks: nothing is written past an allocation
    void* small = nullptr;
    REPORT("malloc_small", aclrtMalloc(&small, 16, ACL_MEM_MALLOC_HUGE_FIRST));
    // aclrtMalloc(16) holds ALIGN_UP(16, 32) + 32 = 64 bytes, as on the device
    std::vector<uint8_t> host(128, 0xab);
    REPORT("memcpy_count_over_destmax", aclrtMemcpy(small, 16, host.data(), 32, ACL_MEMCPY_HOST_TO_DEVICE));
    REPORT("memcpy_into_padding", aclrtMemcpy(small, 64, host.data(), 64, ACL_MEMCPY_HOST_TO_DEVICE));
    REPORT("memcpy_past_allocation", aclrtMemcpy(small, 65, host.data(), 65, ACL_MEMCPY_HOST_TO_DEVICE));
    REPORT("memcpy_read_past_allocation", aclrtMemcpy(host.data(), 128, small, 128, ACL_MEMCPY_DEVICE_TO_HOST));
    void* aligned = nullptr;
    REPORT("malloc_align32", aclrtMallocAlign32(&aligned, 16, ACL_MEM_MALLOC_HUGE_FIRST));
    REPORT("memcpy_align32_past", aclrtMemcpy(aligned, 33, host.data(), 33, ACL_MEMCPY_HOST_TO_DEVICE));
    REPORT("free_align32", aclrtFree(aligned));
    REPORT("memcpy_null", aclrtMemcpy(nullptr, 16, host.data(), 16, ACL_MEMCPY_HOST_TO_DEVICE));
    REPORT("memcpy_host_as_device", aclrtMemcpy(host.data(), 16, small, 16, ACL_MEMCPY_HOST_TO_DEVICE));
    REPORT("memcpy_bad_kind", aclrtMemcpy(small, 16, host.data(), 16, static_cast<aclrtMemcpyKind>(9)));
    REPORT("memcpy_ok", aclrtMemcpy(small, 16, host.data(), 16, ACL_MEMCPY_HOST_TO_DEVICE));
    REPORT("malloc_null", aclrtMalloc(nullptr, 16, ACL_MEM_MALLOC_HUGE_FIRST));
    REPORT("free_foreign", aclrtFree(host.data()));
    REPORT("free_ok", aclrtFree(small));
    REPORT("free_twice", aclrtFree(small));
    REPORT("set_device_1", aclrtSetDevice(1));
    REPORT("destroy_stream_null", aclrtDestroyStream(nullptr));

    aclrtFree(shortWs);
    aclrtFree(fullWs);
    Finalize(deviceId, stream);
    printf("end=0\n");
    return 0;
}
