// Four threads, each with its own stream, run SignBitsUnpack on their own inputs at the same time: the embedded
// interpreter is shared, each call takes the GIL. Prints each thread's input and output as hex.
#include <string>
#include <thread>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_sign_bits_unpack.h"
#include "common.h"

static const int kThreads = 4;

static void Worker(int id, std::string* log, int* status)
{
    aclrtStream stream = nullptr;
    *status = aclrtCreateStream(&stream);
    if (*status != ACL_SUCCESS) return;
    std::vector<uint8_t> selfHost = LcgBytes(8, 100 + id);
    std::vector<float> outHost(64, 0);
    void *selfAddr, *outAddr;
    aclTensor *self, *out;
    if ((*status = CreateAclTensor(selfHost, {8}, &selfAddr, aclDataType::ACL_UINT8, &self)) != 0) return;
    if ((*status = CreateAclTensor(outHost, {2, 32}, &outAddr, aclDataType::ACL_FLOAT, &out)) != 0) return;
    for (int round = 0; round < 3; round++) {
        uint64_t workspaceSize = 0;
        aclOpExecutor* executor;
        *status = aclnnSignBitsUnpackGetWorkspaceSize(self, 2, ACL_FLOAT, out, &workspaceSize, &executor);
        if (*status != 0) return;
        void* workspace = nullptr;
        if (workspaceSize > 0 && (*status = aclrtMalloc(&workspace, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST)) != 0)
            return;
        *status = aclnnSignBitsUnpack(workspace, workspaceSize, executor, stream);
        if (*status != 0) return;
        if ((*status = aclrtSynchronizeStream(stream)) != 0) return;
        if (workspace != nullptr) aclrtFree(workspace);
    }
    *status = aclrtMemcpy(outHost.data(), outHost.size() * 4, outAddr, outHost.size() * 4,
                          ACL_MEMCPY_DEVICE_TO_HOST);
    char buf[8];
    *log = "x" + std::to_string(id) + ":";
    for (auto b : selfHost) { snprintf(buf, sizeof(buf), "%02x", b); *log += buf; }
    *log += "\nout" + std::to_string(id) + ":";
    const unsigned char* p = reinterpret_cast<const unsigned char*>(outHost.data());
    for (size_t i = 0; i < outHost.size() * 4; i++) { snprintf(buf, sizeof(buf), "%02x", p[i]); *log += buf; }
    *log += "\n";
    aclDestroyTensor(self);
    aclDestroyTensor(out);
    aclrtFree(selfAddr);
    aclrtFree(outAddr);
    aclrtDestroyStream(stream);
}

int main()
{
    int32_t deviceId = 0;
    aclrtStream stream;
    auto ret = Init(deviceId, &stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("Init acl failed. ERROR: %d\n", ret); return ret);
    std::vector<std::thread> threads;
    std::vector<std::string> logs(kThreads);
    std::vector<int> status(kThreads, -1);
    for (int i = 0; i < kThreads; i++) threads.emplace_back(Worker, i, &logs[i], &status[i]);
    for (auto& t : threads) t.join();
    int failed = 0;
    for (int i = 0; i < kThreads; i++) {
        if (status[i] != 0) {
            LOG_PRINT("thread %d failed. ERROR: %d %s\n", i, status[i], aclGetRecentErrMsg());
            failed = 1;
        }
        printf("%s", logs[i].c_str());
    }
    Finalize(deviceId, stream);
    return failed;
}
