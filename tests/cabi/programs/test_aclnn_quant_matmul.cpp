// QuantMatmul family, written like CANN's quant matmul examples:
//   1. aclnnTransQuantParamV2 (float32 scale -> UINT64) and aclnnQuantMatmulV3 (int8 x int8 -> float16) with that
//      scale, both launched on one stream before a single synchronize;
//   2. aclnnQuantMatmulV4 with a per-token scale (-> float16);
//   3. aclnnQuantMatmulWeightNz with x2 in FRACTAL_NZ and per-token x per-channel float32 scales (-> bfloat16);
//   4. the weight given as [N, K]: aclnnPermute to [K, N] into memory sized by aclnnCalculateMatmulWeightSizeV2,
//      aclnnTransMatmulWeight to FRACTAL_NZ in place, then aclnnQuantMatmulV4 (-> float16).
// Prints inputs and outputs as hex.
#include <memory>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_quant_matmul_v3.h"
#include "aclnnop/aclnn_quant_matmul_v4.h"
#include "aclnnop/aclnn_permute.h"
#include "aclnnop/aclnn_quant_matmul_weight_nz.h"
#include "aclnnop/aclnn_trans_matmul_weight.h"
#include "aclnnop/aclnn_trans_quant_param_v2.h"
#include "common.h"

static const int64_t M = 16;
static const int64_t K = 64;
static const int64_t N = 32;

struct Device {
    std::vector<void*> addrs;
    std::vector<aclTensor*> tensors;
    ~Device()
    {
        for (auto t : tensors) aclDestroyTensor(t);
        for (auto a : addrs) aclrtFree(a);
    }
    template <typename T>
    aclTensor* Tensor(const std::vector<T>& host, const std::vector<int64_t>& shape, aclDataType dtype, void** addr)
    {
        aclTensor* t = nullptr;
        void* a = nullptr;
        if (CreateAclTensor(host, shape, &a, dtype, &t) != 0) return nullptr;
        addrs.push_back(a);
        tensors.push_back(t);
        if (addr != nullptr) *addr = a;
        return t;
    }
    void* Workspace(uint64_t size)
    {
        if (size == 0) return nullptr;
        void* a = nullptr;
        if (aclrtMalloc(&a, size, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) return nullptr;
        addrs.push_back(a);
        return a;
    }
};

static std::vector<int8_t> Int8Input(size_t n, uint32_t seed)
{
    std::vector<uint8_t> b = LcgBytes(n, seed);
    return std::vector<int8_t>(b.begin(), b.end());
}

static std::vector<float> ScaleInput(size_t n, uint32_t seed, float base, float step)
{
    std::vector<uint8_t> b = LcgBytes(n, seed);
    std::vector<float> s(n);
    for (size_t i = 0; i < n; i++) s[i] = base + step * static_cast<float>(b[i] % 16);
    return s;
}

static int TransQuantParamAndMatmulV3(aclrtStream stream)
{
    Device dev;
    std::vector<int8_t> x1Host = Int8Input(M * K, 21);
    std::vector<int8_t> x2Host = Int8Input(K * N, 22);
    std::vector<float> scaleHost = ScaleInput(N, 23, 1.0f / 4096, 1.0f / 4096);
    std::vector<uint64_t> scaleU64Host(N, 0);
    std::vector<uint16_t> outHost(M * N, 0);
    void* scaleU64Addr = nullptr;
    void* outAddr = nullptr;
    aclTensor* scale = dev.Tensor(scaleHost, {N}, aclDataType::ACL_FLOAT, nullptr);
    aclTensor* scaleU64 = dev.Tensor(scaleU64Host, {N}, aclDataType::ACL_UINT64, &scaleU64Addr);
    aclTensor* x1 = dev.Tensor(x1Host, {M, K}, aclDataType::ACL_INT8, nullptr);
    aclTensor* x2 = dev.Tensor(x2Host, {K, N}, aclDataType::ACL_INT8, nullptr);
    aclTensor* out = dev.Tensor(outHost, {M, N}, aclDataType::ACL_FLOAT16, &outAddr);
    CHECK_RET(scale && scaleU64 && x1 && x2 && out, LOG_PRINT("CreateAclTensor failed\n"); return 1);

    uint64_t workspaceSize = 0;
    aclOpExecutor* executor = nullptr;
    auto ret = aclnnTransQuantParamV2GetWorkspaceSize(scale, nullptr, scaleU64, &workspaceSize, &executor);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnTransQuantParamV2GetWorkspaceSize failed. ERROR: %d\n", ret);
              return ret);
    void* workspace = dev.Workspace(workspaceSize);
    ret = aclnnTransQuantParamV2(workspace, workspaceSize, executor, stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnTransQuantParamV2 failed. ERROR: %d\n", ret); return ret);

    // the second op reads what the first wrote, with no synchronize in between: the stream keeps the order
    ret = aclnnQuantMatmulV3GetWorkspaceSize(x1, x2, scaleU64, nullptr, nullptr, false, false, out, &workspaceSize,
                                             &executor);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnQuantMatmulV3GetWorkspaceSize failed. ERROR: %d\n", ret);
              return ret);
    workspace = dev.Workspace(workspaceSize);
    ret = aclnnQuantMatmulV3(workspace, workspaceSize, executor, stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnQuantMatmulV3 failed. ERROR: %d\n", ret); return ret);
    ret = aclrtSynchronizeStream(stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSynchronizeStream failed. ERROR: %d\n", ret); return ret);

    PrintHex("v3_x1", x1Host.data(), x1Host.size());
    PrintHex("v3_x2", x2Host.data(), x2Host.size());
    PrintHex("v3_scale", scaleHost.data(), scaleHost.size() * 4);
    ret = PrintDevice("v3_scale_u64", scaleU64Addr, N * 8);
    CHECK_RET(ret == ACL_SUCCESS, return ret);
    return PrintDevice("v3_out", outAddr, M * N * 2);
}

static int MatmulV4Pertoken(aclrtStream stream)
{
    Device dev;
    std::vector<int8_t> x1Host = Int8Input(M * K, 31);
    std::vector<int8_t> x2Host = Int8Input(K * N, 32);
    std::vector<float> scaleHost = ScaleInput(N, 33, 1.0f / 2048, 1.0f / 4096);
    std::vector<float> pertokenHost = ScaleInput(M, 34, 0.5f, 0.125f);
    std::vector<uint16_t> outHost(M * N, 0);
    void* outAddr = nullptr;
    aclTensor* x1 = dev.Tensor(x1Host, {M, K}, aclDataType::ACL_INT8, nullptr);
    aclTensor* x2 = dev.Tensor(x2Host, {K, N}, aclDataType::ACL_INT8, nullptr);
    aclTensor* scale = dev.Tensor(scaleHost, {N}, aclDataType::ACL_FLOAT, nullptr);
    aclTensor* pertoken = dev.Tensor(pertokenHost, {M}, aclDataType::ACL_FLOAT, nullptr);
    aclTensor* out = dev.Tensor(outHost, {M, N}, aclDataType::ACL_FLOAT16, &outAddr);
    CHECK_RET(x1 && x2 && scale && pertoken && out, LOG_PRINT("CreateAclTensor failed\n"); return 1);

    uint64_t workspaceSize = 0;
    aclOpExecutor* executor = nullptr;
    auto ret = aclnnQuantMatmulV4GetWorkspaceSize(x1, x2, scale, nullptr, pertoken, nullptr, false, false, out,
                                                  &workspaceSize, &executor);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnQuantMatmulV4GetWorkspaceSize failed. ERROR: %d\n", ret);
              return ret);
    void* workspace = dev.Workspace(workspaceSize);
    ret = aclnnQuantMatmulV4(workspace, workspaceSize, executor, stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnQuantMatmulV4 failed. ERROR: %d\n", ret); return ret);
    ret = aclrtSynchronizeStream(stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSynchronizeStream failed. ERROR: %d\n", ret); return ret);

    PrintHex("v4_x1", x1Host.data(), x1Host.size());
    PrintHex("v4_x2", x2Host.data(), x2Host.size());
    PrintHex("v4_scale", scaleHost.data(), scaleHost.size() * 4);
    PrintHex("v4_pertoken", pertokenHost.data(), pertokenHost.size() * 4);
    return PrintDevice("v4_out", outAddr, M * N * 2);
}

static int MatmulWeightNz(aclrtStream stream)
{
    Device dev;
    std::vector<int8_t> x1Host = Int8Input(M * K, 41);
    std::vector<int8_t> x2Host = Int8Input(K * N, 42);
    std::vector<float> scaleHost = ScaleInput(N, 43, 1.0f / 2048, 1.0f / 4096);
    std::vector<float> pertokenHost = ScaleInput(M, 44, 0.5f, 0.125f);
    std::vector<uint16_t> outHost(M * N, 0);
    // x2 [K, N] in FRACTAL_NZ: [N / 32, K / 16, 16, 32] fractals of 16 rows x 32 int8 columns
    const int64_t c0 = 32, n1 = N / c0, k1 = K / 16;
    std::vector<int8_t> x2NzHost(K * N, 0);
    for (int64_t j1 = 0; j1 < n1; j1++)
        for (int64_t i1 = 0; i1 < k1; i1++)
            for (int64_t i0 = 0; i0 < 16; i0++)
                for (int64_t j0 = 0; j0 < c0; j0++)
                    x2NzHost[((j1 * k1 + i1) * 16 + i0) * c0 + j0] = x2Host[(i1 * 16 + i0) * N + j1 * c0 + j0];
    std::vector<int64_t> x2Shape = {K, N};
    std::vector<int64_t> x2StorageShape = {n1, k1, 16, c0};
    std::vector<int64_t> x2Strides = {N, 1};
    void* x2Addr = nullptr;
    auto ret = aclrtMalloc(&x2Addr, x2NzHost.size(), ACL_MEM_MALLOC_HUGE_FIRST);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtMalloc failed. ERROR: %d\n", ret); return ret);
    dev.addrs.push_back(x2Addr);
    ret = aclrtMemcpy(x2Addr, x2NzHost.size(), x2NzHost.data(), x2NzHost.size(), ACL_MEMCPY_HOST_TO_DEVICE);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtMemcpy failed. ERROR: %d\n", ret); return ret);
    aclTensor* x2 = aclCreateTensor(x2Shape.data(), x2Shape.size(), aclDataType::ACL_INT8, x2Strides.data(), 0,
                                    aclFormat::ACL_FORMAT_FRACTAL_NZ, x2StorageShape.data(), x2StorageShape.size(),
                                    x2Addr);
    dev.tensors.push_back(x2);
    void* outAddr = nullptr;
    aclTensor* x1 = dev.Tensor(x1Host, {M, K}, aclDataType::ACL_INT8, nullptr);
    aclTensor* x1Scale = dev.Tensor(pertokenHost, {M}, aclDataType::ACL_FLOAT, nullptr);
    aclTensor* x2Scale = dev.Tensor(scaleHost, {N}, aclDataType::ACL_FLOAT, nullptr);
    aclTensor* out = dev.Tensor(outHost, {M, N}, aclDataType::ACL_BF16, &outAddr);
    CHECK_RET(x1 && x2 && x1Scale && x2Scale && out, LOG_PRINT("CreateAclTensor failed\n"); return 1);

    uint64_t workspaceSize = 0;
    aclOpExecutor* executor = nullptr;
    ret = aclnnQuantMatmulWeightNzGetWorkspaceSize(x1, x2, x1Scale, x2Scale, nullptr, nullptr, nullptr, nullptr,
                                                   nullptr, false, false, 0, out, &workspaceSize, &executor);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnQuantMatmulWeightNzGetWorkspaceSize failed. ERROR: %d\n", ret);
              LOG_PRINT("%s\n", aclGetRecentErrMsg()); return ret);
    void* workspace = dev.Workspace(workspaceSize);
    ret = aclnnQuantMatmulWeightNz(workspace, workspaceSize, executor, stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnQuantMatmulWeightNz failed. ERROR: %d\n", ret); return ret);
    ret = aclrtSynchronizeStream(stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSynchronizeStream failed. ERROR: %d\n", ret); return ret);

    PrintHex("nz_x1", x1Host.data(), x1Host.size());
    PrintHex("nz_x2", x2Host.data(), x2Host.size());
    PrintHex("nz_scale", scaleHost.data(), scaleHost.size() * 4);
    PrintHex("nz_pertoken", pertokenHost.data(), pertokenHost.size() * 4);
    return PrintDevice("nz_out", outAddr, M * N * 2);
}

static int RunStep(aclnnStatus ret, const char* name, uint64_t workspaceSize, aclOpExecutor* executor,
                   aclrtStream stream, Device& dev, aclnnStatus (*run)(void*, uint64_t, aclOpExecutor*, aclrtStream))
{
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("%sGetWorkspaceSize failed. ERROR: %d\n%s\n", name, ret,
                                            aclGetRecentErrMsg());
              return ret);
    ret = run(dev.Workspace(workspaceSize), workspaceSize, executor, stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("%s failed. ERROR: %d\n", name, ret); return ret);
    return 0;
}

static int PermuteTransWeightMatmulV4(aclrtStream stream)
{
    Device dev;
    std::vector<int8_t> x1Host = Int8Input(M * K, 51);
    std::vector<int8_t> x2tHost = Int8Input(N * K, 52);
    std::vector<float> scaleHost = ScaleInput(N, 53, 1.0f / 2048, 1.0f / 4096);
    std::vector<float> pertokenHost = ScaleInput(M, 54, 0.5f, 0.125f);
    std::vector<uint16_t> outHost(M * N, 0);
    aclTensor* x1 = dev.Tensor(x1Host, {M, K}, aclDataType::ACL_INT8, nullptr);
    aclTensor* x2t = dev.Tensor(x2tHost, {N, K}, aclDataType::ACL_INT8, nullptr);
    aclTensor* scale = dev.Tensor(scaleHost, {N}, aclDataType::ACL_FLOAT, nullptr);
    aclTensor* pertoken = dev.Tensor(pertokenHost, {M}, aclDataType::ACL_FLOAT, nullptr);
    void* outAddr = nullptr;
    aclTensor* out = dev.Tensor(outHost, {M, N}, aclDataType::ACL_FLOAT16, &outAddr);
    CHECK_RET(x1 && x2t && scale && pertoken && out, LOG_PRINT("CreateAclTensor failed\n"); return 1);

    std::vector<int64_t> x2Shape = {K, N};
    aclIntArray* x2ShapeArray = aclCreateIntArray(x2Shape.data(), x2Shape.size());
    uint64_t x2Elements = 0;
    auto ret = aclnnCalculateMatmulWeightSizeV2(x2ShapeArray, aclDataType::ACL_INT8, &x2Elements);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnCalculateMatmulWeightSizeV2 failed. ERROR: %d\n", ret); return ret);
    aclDestroyIntArray(x2ShapeArray);
    printf("weight_elements=%llu\n", static_cast<unsigned long long>(x2Elements));
    void* x2Addr = nullptr;
    ret = aclrtMalloc(&x2Addr, x2Elements, ACL_MEM_MALLOC_HUGE_FIRST);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtMalloc failed. ERROR: %d\n", ret); return ret);
    dev.addrs.push_back(x2Addr);
    std::vector<int64_t> x2Strides = {N, 1};
    std::vector<int64_t> x2Storage = {static_cast<int64_t>(x2Elements)};
    aclTensor* x2 = aclCreateTensor(x2Shape.data(), 2, aclDataType::ACL_INT8, x2Strides.data(), 0,
                                    aclFormat::ACL_FORMAT_ND, x2Storage.data(), 1, x2Addr);
    dev.tensors.push_back(x2);

    std::vector<int64_t> perm = {1, 0};
    aclIntArray* dims = aclCreateIntArray(perm.data(), perm.size());
    uint64_t workspaceSize = 0;
    aclOpExecutor* executor = nullptr;
    ret = aclnnPermuteGetWorkspaceSize(x2t, dims, x2, &workspaceSize, &executor);
    ret = RunStep(ret, "aclnnPermute", workspaceSize, executor, stream, dev, aclnnPermute);
    CHECK_RET(ret == ACL_SUCCESS, return ret);
    aclDestroyIntArray(dims);
    ret = aclnnTransMatmulWeightGetWorkspaceSize(x2, &workspaceSize, &executor);
    ret = RunStep(ret, "aclnnTransMatmulWeight", workspaceSize, executor, stream, dev, aclnnTransMatmulWeight);
    CHECK_RET(ret == ACL_SUCCESS, return ret);
    ret = aclnnQuantMatmulV4GetWorkspaceSize(x1, x2, scale, nullptr, pertoken, nullptr, false, false, out,
                                             &workspaceSize, &executor);
    ret = RunStep(ret, "aclnnQuantMatmulV4", workspaceSize, executor, stream, dev, aclnnQuantMatmulV4);
    CHECK_RET(ret == ACL_SUCCESS, return ret);
    ret = aclrtSynchronizeStream(stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSynchronizeStream failed. ERROR: %d\n", ret); return ret);

    aclFormat format;
    int64_t* storage = nullptr;
    uint64_t storageNum = 0;
    aclGetFormat(x2, &format);
    aclGetStorageShape(x2, &storage, &storageNum);
    printf("weight_format=%d\nweight_storage_dims=%llu\n", static_cast<int>(format),
           static_cast<unsigned long long>(storageNum));
    delete[] storage;
    PrintHex("tw_x1", x1Host.data(), x1Host.size());
    PrintHex("tw_x2t", x2tHost.data(), x2tHost.size());
    PrintHex("tw_scale", scaleHost.data(), scaleHost.size() * 4);
    PrintHex("tw_pertoken", pertokenHost.data(), pertokenHost.size() * 4);
    ret = PrintDevice("tw_weight_nz", x2Addr, x2Elements);
    CHECK_RET(ret == ACL_SUCCESS, return ret);
    return PrintDevice("tw_out", outAddr, M * N * 2);
}

int main()
{
    int32_t deviceId = 0;
    aclrtStream stream;
    auto ret = Init(deviceId, &stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("Init acl failed. ERROR: %d\n", ret); return ret);
    ret = TransQuantParamAndMatmulV3(stream);
    CHECK_RET(ret == ACL_SUCCESS, Finalize(deviceId, stream); return ret);
    ret = MatmulV4Pertoken(stream);
    CHECK_RET(ret == ACL_SUCCESS, Finalize(deviceId, stream); return ret);
    ret = MatmulWeightNz(stream);
    CHECK_RET(ret == ACL_SUCCESS, Finalize(deviceId, stream); return ret);
    ret = PermuteTransWeightMatmulV4(stream);
    CHECK_RET(ret == ACL_SUCCESS, Finalize(deviceId, stream); return ret);
    Finalize(deviceId, stream);
    return 0;
}
