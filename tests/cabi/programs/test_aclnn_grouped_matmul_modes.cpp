// GroupedMatmul's quant modes through aclnnGroupedMatmulV4 / V5 with aclTensorList arguments
// (docs/ops/grouped_matmul.md §10, §11). argv[1] picks one:
//   mx:        MXFP8 (run with NPU_EMU_SOC=ascend950pr): float8_e4m3fn x (M, K) and weight (E, K, N), FLOAT8_E8M0
//              scale (E, ceil(K/64), N, 2) and per-token scale (M, ceil(K/64), 2), y bfloat16; V4.
//   antiquant: W8A16 (A2/A3): float16 x, int8 weight (E, K, N), float16 antiquant scale / offset (E, N), y float16;
//              V5 with an aclIntArray tuning config.
// Prints inputs and y as hex; the test computes the same call with npu_emu.ops and compares the bytes.
#include <cstring>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_grouped_matmul_v4.h"
#include "aclnnop/aclnn_grouped_matmul_v5.h"
#include "common.h"

static aclTensorList* One(aclTensor* t) { return aclCreateTensorList(&t, 1); }

static int Launch(bool v5, aclTensorList* x, aclTensorList* w, aclTensorList* scale, aclTensorList* aqScale,
                  aclTensorList* aqOffset, aclTensorList* pts, aclTensor* gl, int64_t groupListType,
                  aclTensorList* y, aclrtStream stream)
{
    uint64_t wsSize = 0;
    aclOpExecutor* ex;
    int64_t tuningHost[1] = {0};
    aclIntArray* tuning = aclCreateIntArray(tuningHost, 1);
    auto ret = v5 ? aclnnGroupedMatmulV5GetWorkspaceSize(x, w, nullptr, scale, nullptr, aqScale, aqOffset, pts, gl,
                                                         nullptr, nullptr, nullptr, 3, 0, groupListType, 0, tuning,
                                                         y, nullptr, nullptr, &wsSize, &ex)
                  : aclnnGroupedMatmulV4GetWorkspaceSize(x, w, nullptr, scale, nullptr, aqScale, aqOffset, pts, gl,
                                                         nullptr, nullptr, nullptr, 3, 0, groupListType, 0, y,
                                                         nullptr, nullptr, &wsSize, &ex);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("GetWorkspaceSize failed. ERROR: %d\n%s\n", ret, aclGetRecentErrMsg());
              return ret);
    void* wsAddr = nullptr;
    if (wsSize > 0) aclrtMalloc(&wsAddr, wsSize, ACL_MEM_MALLOC_HUGE_FIRST);
    ret = v5 ? aclnnGroupedMatmulV5(wsAddr, wsSize, ex, stream) : aclnnGroupedMatmulV4(wsAddr, wsSize, ex, stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("launch failed. ERROR: %d\n%s\n", ret, aclGetRecentErrMsg());
              return ret);
    ret = aclrtSynchronizeStream(stream);
    if (wsAddr != nullptr) aclrtFree(wsAddr);
    aclDestroyIntArray(tuning);
    return ret;
}

int main(int argc, char** argv)
{
    const bool mx = argc > 1 && std::strcmp(argv[1], "mx") == 0;
    int32_t deviceId = 0;
    aclrtStream stream;
    auto ret = Init(deviceId, &stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("Init acl failed. ERROR: %d\n", ret); return ret);

    const int64_t e = 3, m = 20, n = 16;
    const int64_t k = mx ? 96 : 32;
    std::vector<int64_t> glHost = {6, 0, 11};          // counts: rows 17.. belong to no group (y keeps zeros)
    std::vector<uint16_t> yHost(m * n, 0);
    void *xAddr, *wAddr, *glAddr, *yAddr, *sAddr, *pAddr;
    aclTensor *xT, *wT, *glT, *yT, *sT, *pT;
    CHECK_RET(CreateAclTensor(glHost, {e}, &glAddr, aclDataType::ACL_INT64, &glT) == 0, return 1);
    // y: bfloat16 (mx) or float16 (antiquant), zeros before the call
    CHECK_RET(CreateAclTensor(yHost, {m, n}, &yAddr, mx ? aclDataType::ACL_BF16 : aclDataType::ACL_FLOAT16, &yT) == 0,
              return 1);
    if (mx) {
        const int64_t kp = (k + 63) / 64;
        std::vector<uint8_t> xb = LcgBytes(m * k, 81), wb = LcgBytes(e * k * n, 82);
        for (auto& b : xb) b = (b & 0x80) | (b & 0x3F);   // float8_e4m3fn codes below 2^0: no NaN (0x7F / 0xFF)
        for (auto& b : wb) b = (b & 0x80) | (b & 0x3F);
        std::vector<uint8_t> sb = LcgBytes(e * kp * n * 2, 83), pb = LcgBytes(m * kp * 2, 84);
        for (auto& b : sb) b = 120 + b % 14;              // E8M0 codes 120..133: 2^-7 .. 2^6
        for (auto& b : pb) b = 120 + b % 14;
        CHECK_RET(CreateAclTensor(xb, {m, k}, &xAddr, aclDataType::ACL_FLOAT8_E4M3FN, &xT) == 0, return 1);
        CHECK_RET(CreateAclTensor(wb, {e, k, n}, &wAddr, aclDataType::ACL_FLOAT8_E4M3FN, &wT) == 0, return 1);
        CHECK_RET(CreateAclTensor(sb, {e, kp, n, 2}, &sAddr, aclDataType::ACL_FLOAT8_E8M0, &sT) == 0, return 1);
        CHECK_RET(CreateAclTensor(pb, {m, kp, 2}, &pAddr, aclDataType::ACL_FLOAT8_E8M0, &pT) == 0, return 1);
        aclTensorList *xl = One(xT), *wl = One(wT), *sl = One(sT), *pl = One(pT), *yl = One(yT);
        ret = Launch(false, xl, wl, sl, nullptr, nullptr, pl, glT, 1, yl, stream);
        CHECK_RET(ret == ACL_SUCCESS, return ret);
        PrintHex("x", xb.data(), xb.size());
        PrintHex("weight", wb.data(), wb.size());
        PrintHex("scale", sb.data(), sb.size());
        PrintHex("per_token_scale", pb.data(), pb.size());
        for (auto l : {xl, wl, sl, pl, yl}) aclDestroyTensorList(l);   // and their tensors
    } else {
        // float16 bits from LCG bytes: x in [2^-3, 2^5), scale in [2^-10, 2^-5), offset in [2^-3, 2^2)
        auto halfs = [](size_t cnt, uint32_t seed, int e0, int span) {
            std::vector<uint8_t> b = LcgBytes(cnt * 4, seed);
            std::vector<uint16_t> h(cnt);
            for (size_t i = 0; i < cnt; i++) {
                h[i] = static_cast<uint16_t>(((b[4 * i] & 0x80) << 8) | ((e0 + b[4 * i + 1] % span) << 10) |
                                             ((b[4 * i + 3] & 3) << 8) | b[4 * i + 2]);
            }
            return h;
        };
        std::vector<uint16_t> xh = halfs(m * k, 91, 12, 8);
        std::vector<uint16_t> sh = halfs(e * n, 92, 5, 5), oh = halfs(e * n, 93, 12, 5);
        for (auto& v : sh) v &= 0x7FFF;                   // positive scales
        std::vector<uint8_t> wb = LcgBytes(e * k * n, 94);
        std::vector<int8_t> wHost(wb.begin(), wb.end());
        CHECK_RET(CreateAclTensor(xh, {m, k}, &xAddr, aclDataType::ACL_FLOAT16, &xT) == 0, return 1);
        CHECK_RET(CreateAclTensor(wHost, {e, k, n}, &wAddr, aclDataType::ACL_INT8, &wT) == 0, return 1);
        CHECK_RET(CreateAclTensor(sh, {e, n}, &sAddr, aclDataType::ACL_FLOAT16, &sT) == 0, return 1);
        CHECK_RET(CreateAclTensor(oh, {e, n}, &pAddr, aclDataType::ACL_FLOAT16, &pT) == 0, return 1);
        aclTensorList *xl = One(xT), *wl = One(wT), *sl = One(sT), *ol = One(pT), *yl = One(yT);
        ret = Launch(true, xl, wl, nullptr, sl, ol, nullptr, glT, 1, yl, stream);
        CHECK_RET(ret == ACL_SUCCESS, return ret);
        PrintHex("x", xh.data(), xh.size() * 2);
        PrintHex("weight", wHost.data(), wHost.size());
        PrintHex("antiquant_scale", sh.data(), sh.size() * 2);
        PrintHex("antiquant_offset", oh.data(), oh.size() * 2);
        for (auto l : {xl, wl, sl, ol, yl}) aclDestroyTensorList(l);
    }
    PrintHex("group_list", glHost.data(), glHost.size() * 8);
    ret = PrintDevice("y", yAddr, yHost.size() * 2);
    CHECK_RET(ret == ACL_SUCCESS, return ret);
    aclDestroyTensor(glT);
    for (auto a : {xAddr, wAddr, glAddr, yAddr, sAddr, pAddr}) aclrtFree(a);
    Finalize(deviceId, stream);
    return 0;
}
