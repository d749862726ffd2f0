/* Host overhead per dispatch in C: the baseline of benchmarks/vk_dispatch_overhead.py.
 *
 * Loads libvulkan.so.1 with dlopen (no Vulkan headers needed, so it also builds where only the
 * loader is installed), creates a device on the chosen physical device, records one command buffer
 * that dispatches an empty kernel (SPIR-V read from argv[1]) once, then times N iterations of
 * vkResetFences + vkQueueSubmit + vkWaitForFences, the same loop hydroplane.vk's Recording.run() does.
 * Usage: vk_dispatch_loop KERNEL.spv ITERATIONS [DEVICE_INDEX]; prints "ns_per_dispatch <value>".
 * Build with -DHP_CHECK_HEADER to compare the declarations below with <vulkan/vulkan.h>.
 */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef void *Handle;
typedef int32_t Result;
typedef void (*VoidFn)(void);

typedef struct { int32_t sType; const void *pNext; const char *pApplicationName; uint32_t applicationVersion;
                 const char *pEngineName; uint32_t engineVersion; uint32_t apiVersion; } HpApplicationInfo;
typedef struct { int32_t sType; const void *pNext; uint32_t flags; const HpApplicationInfo *pApplicationInfo;
                 uint32_t enabledLayerCount; const char *const *ppEnabledLayerNames;
                 uint32_t enabledExtensionCount; const char *const *ppEnabledExtensionNames; } HpInstanceCreateInfo;
typedef struct { uint32_t queueFlags; uint32_t queueCount; uint32_t timestampValidBits;
                 uint32_t minImageTransferGranularity[3]; } HpQueueFamilyProperties;
typedef struct { int32_t sType; const void *pNext; uint32_t flags; uint32_t queueFamilyIndex; uint32_t queueCount;
                 const float *pQueuePriorities; } HpDeviceQueueCreateInfo;
typedef struct { int32_t sType; const void *pNext; uint32_t flags; uint32_t queueCreateInfoCount;
                 const HpDeviceQueueCreateInfo *pQueueCreateInfos; uint32_t enabledLayerCount;
                 const char *const *ppEnabledLayerNames; uint32_t enabledExtensionCount;
                 const char *const *ppEnabledExtensionNames; const void *pEnabledFeatures; } HpDeviceCreateInfo;
typedef struct { int32_t sType; const void *pNext; uint32_t flags; size_t codeSize; const uint32_t *pCode; }
    HpShaderModuleCreateInfo;
typedef struct { int32_t sType; const void *pNext; uint32_t flags; uint32_t setLayoutCount; const Handle *pSetLayouts;
                 uint32_t pushConstantRangeCount; const void *pPushConstantRanges; } HpPipelineLayoutCreateInfo;
typedef struct { int32_t sType; const void *pNext; uint32_t flags; uint32_t stage; Handle module; const char *pName;
                 const void *pSpecializationInfo; } HpPipelineShaderStageCreateInfo;
typedef struct { int32_t sType; const void *pNext; uint32_t flags; HpPipelineShaderStageCreateInfo stage;
                 Handle layout; Handle basePipelineHandle; int32_t basePipelineIndex; } HpComputePipelineCreateInfo;
typedef struct { int32_t sType; const void *pNext; uint32_t flags; uint32_t queueFamilyIndex; } HpCommandPoolCreateInfo;
typedef struct { int32_t sType; const void *pNext; Handle commandPool; int32_t level; uint32_t commandBufferCount; }
    HpCommandBufferAllocateInfo;
typedef struct { int32_t sType; const void *pNext; uint32_t flags; const void *pInheritanceInfo; }
    HpCommandBufferBeginInfo;
typedef struct { int32_t sType; const void *pNext; uint32_t waitSemaphoreCount; const Handle *pWaitSemaphores;
                 const uint32_t *pWaitDstStageMask; uint32_t commandBufferCount; const Handle *pCommandBuffers;
                 uint32_t signalSemaphoreCount; const Handle *pSignalSemaphores; } HpSubmitInfo;
typedef struct { int32_t sType; const void *pNext; uint32_t flags; } HpFenceCreateInfo;

enum { ST_APPLICATION_INFO = 0, ST_INSTANCE_CREATE_INFO = 1, ST_DEVICE_QUEUE_CREATE_INFO = 2,
       ST_DEVICE_CREATE_INFO = 3, ST_SUBMIT_INFO = 4, ST_FENCE_CREATE_INFO = 8, ST_SHADER_MODULE_CREATE_INFO = 16,
       ST_PIPELINE_SHADER_STAGE_CREATE_INFO = 18, ST_COMPUTE_PIPELINE_CREATE_INFO = 29,
       ST_PIPELINE_LAYOUT_CREATE_INFO = 30, ST_COMMAND_POOL_CREATE_INFO = 39, ST_COMMAND_BUFFER_ALLOCATE_INFO = 40,
       ST_COMMAND_BUFFER_BEGIN_INFO = 42, QUEUE_COMPUTE = 2, STAGE_COMPUTE = 0x20, BIND_POINT_COMPUTE = 1,
       API_1_3 = (1 << 22) | (3 << 12) };

#ifdef HP_CHECK_HEADER
#include <stddef.h>
#include <vulkan/vulkan.h>
#define SAME(ours, theirs) _Static_assert(sizeof(ours) == sizeof(theirs), #ours " size differs from " #theirs)
SAME(HpApplicationInfo, VkApplicationInfo); SAME(HpInstanceCreateInfo, VkInstanceCreateInfo);
SAME(HpQueueFamilyProperties, VkQueueFamilyProperties); SAME(HpDeviceQueueCreateInfo, VkDeviceQueueCreateInfo);
SAME(HpDeviceCreateInfo, VkDeviceCreateInfo); SAME(HpShaderModuleCreateInfo, VkShaderModuleCreateInfo);
SAME(HpPipelineLayoutCreateInfo, VkPipelineLayoutCreateInfo);
SAME(HpPipelineShaderStageCreateInfo, VkPipelineShaderStageCreateInfo);
SAME(HpComputePipelineCreateInfo, VkComputePipelineCreateInfo);
SAME(HpCommandPoolCreateInfo, VkCommandPoolCreateInfo); SAME(HpCommandBufferAllocateInfo, VkCommandBufferAllocateInfo);
SAME(HpCommandBufferBeginInfo, VkCommandBufferBeginInfo); SAME(HpSubmitInfo, VkSubmitInfo);
SAME(HpFenceCreateInfo, VkFenceCreateInfo);
_Static_assert(offsetof(HpComputePipelineCreateInfo, layout) == offsetof(VkComputePipelineCreateInfo, layout), "layout");
_Static_assert(offsetof(HpSubmitInfo, pCommandBuffers) == offsetof(VkSubmitInfo, pCommandBuffers), "submit");
_Static_assert((int)ST_COMPUTE_PIPELINE_CREATE_INFO == (int)VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO, "sType");
_Static_assert((int)ST_COMMAND_BUFFER_BEGIN_INFO == (int)VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO, "sType");
_Static_assert((int)ST_PIPELINE_LAYOUT_CREATE_INFO == (int)VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO, "sType");
_Static_assert((int)ST_COMMAND_BUFFER_ALLOCATE_INFO == (int)VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, "sType");
_Static_assert((int)ST_SHADER_MODULE_CREATE_INFO == (int)VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, "sType");
_Static_assert((int)ST_PIPELINE_SHADER_STAGE_CREATE_INFO == (int)VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, "sType");
_Static_assert((int)ST_COMMAND_POOL_CREATE_INFO == (int)VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO, "sType");
_Static_assert((int)ST_FENCE_CREATE_INFO == (int)VK_STRUCTURE_TYPE_FENCE_CREATE_INFO, "sType");
#endif

static VoidFn (*get_proc)(Handle, const char *);
static Handle instance;

static VoidFn need(const char *name) {
    VoidFn fn = get_proc(instance, name);
    if (!fn) { fprintf(stderr, "vk_dispatch_loop: no entry point %s\n", name); exit(2); }
    return fn;
}
#define CALL(type, name) ((type)need(name))
#define OK(expr) do { Result r_ = (expr); if (r_ < 0) { fprintf(stderr, "%s failed: %d\n", #expr, r_); exit(3); } } while (0)

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: %s KERNEL.spv ITERATIONS [DEVICE_INDEX]\n", argv[0]); return 1; }
    long iterations = atol(argv[2]);
    uint32_t device_index = argc > 3 ? (uint32_t)atoi(argv[3]) : 0;
    FILE *f = fopen(argv[1], "rb");
    if (!f) { perror(argv[1]); return 1; }
    static uint32_t code[1 << 16];
    size_t words = fread(code, 4, 1 << 16, f);
    fclose(f);
    void *lib = dlopen("libvulkan.so.1", RTLD_NOW);
    if (!lib) { fprintf(stderr, "dlopen libvulkan.so.1: %s\n", dlerror()); return 2; }
    get_proc = (VoidFn (*)(Handle, const char *))dlsym(lib, "vkGetInstanceProcAddr");

    HpApplicationInfo app = {ST_APPLICATION_INFO, NULL, "vk_dispatch_loop", 1, "hydroplane", 1, API_1_3};
    HpInstanceCreateInfo ici = {ST_INSTANCE_CREATE_INFO, NULL, 0, &app, 0, NULL, 0, NULL};
    OK(CALL(Result (*)(const HpInstanceCreateInfo *, const void *, Handle *), "vkCreateInstance")(&ici, NULL, &instance));
    uint32_t count = 16;
    Handle physical[16];
    OK(CALL(Result (*)(Handle, uint32_t *, Handle *), "vkEnumeratePhysicalDevices")(instance, &count, physical));
    if (device_index >= count) { fprintf(stderr, "no device %u (%u found)\n", device_index, count); return 2; }
    Handle pd = physical[device_index];
    uint32_t nfam = 16;
    HpQueueFamilyProperties fams[16];
    CALL(void (*)(Handle, uint32_t *, HpQueueFamilyProperties *), "vkGetPhysicalDeviceQueueFamilyProperties")(pd, &nfam, fams);
    uint32_t family = 0;
    while (family < nfam && !(fams[family].queueFlags & QUEUE_COMPUTE)) family++;
    float priority = 1.0f;
    HpDeviceQueueCreateInfo qci = {ST_DEVICE_QUEUE_CREATE_INFO, NULL, 0, family, 1, &priority};
    HpDeviceCreateInfo dci = {ST_DEVICE_CREATE_INFO, NULL, 0, 1, &qci, 0, NULL, 0, NULL, NULL};
    Handle device, queue, module, layout, pipeline, pool, cmd, fence;
    OK(CALL(Result (*)(Handle, const HpDeviceCreateInfo *, const void *, Handle *), "vkCreateDevice")(pd, &dci, NULL, &device));
    CALL(void (*)(Handle, uint32_t, uint32_t, Handle *), "vkGetDeviceQueue")(device, family, 0, &queue);
    HpShaderModuleCreateInfo smci = {ST_SHADER_MODULE_CREATE_INFO, NULL, 0, words * 4, code};
    OK(CALL(Result (*)(Handle, const HpShaderModuleCreateInfo *, const void *, Handle *), "vkCreateShaderModule")(device, &smci, NULL, &module));
    HpPipelineLayoutCreateInfo plci = {ST_PIPELINE_LAYOUT_CREATE_INFO, NULL, 0, 0, NULL, 0, NULL};
    OK(CALL(Result (*)(Handle, const HpPipelineLayoutCreateInfo *, const void *, Handle *), "vkCreatePipelineLayout")(device, &plci, NULL, &layout));
    HpComputePipelineCreateInfo cpci = {ST_COMPUTE_PIPELINE_CREATE_INFO, NULL, 0,
        {ST_PIPELINE_SHADER_STAGE_CREATE_INFO, NULL, 0, STAGE_COMPUTE, module, "main", NULL}, layout, NULL, -1};
    OK(CALL(Result (*)(Handle, Handle, uint32_t, const HpComputePipelineCreateInfo *, const void *, Handle *),
            "vkCreateComputePipelines")(device, NULL, 1, &cpci, NULL, &pipeline));
    HpCommandPoolCreateInfo cpoolci = {ST_COMMAND_POOL_CREATE_INFO, NULL, 2, family};
    OK(CALL(Result (*)(Handle, const HpCommandPoolCreateInfo *, const void *, Handle *), "vkCreateCommandPool")(device, &cpoolci, NULL, &pool));
    HpCommandBufferAllocateInfo cbai = {ST_COMMAND_BUFFER_ALLOCATE_INFO, NULL, pool, 0, 1};
    OK(CALL(Result (*)(Handle, const HpCommandBufferAllocateInfo *, Handle *), "vkAllocateCommandBuffers")(device, &cbai, &cmd));
    HpCommandBufferBeginInfo begin = {ST_COMMAND_BUFFER_BEGIN_INFO, NULL, 0, NULL};
    OK(CALL(Result (*)(Handle, const HpCommandBufferBeginInfo *), "vkBeginCommandBuffer")(cmd, &begin));
    CALL(void (*)(Handle, int32_t, Handle), "vkCmdBindPipeline")(cmd, BIND_POINT_COMPUTE, pipeline);
    CALL(void (*)(Handle, uint32_t, uint32_t, uint32_t), "vkCmdDispatch")(cmd, 1, 1, 1);
    OK(CALL(Result (*)(Handle), "vkEndCommandBuffer")(cmd));
    HpFenceCreateInfo fci = {ST_FENCE_CREATE_INFO, NULL, 0};
    OK(CALL(Result (*)(Handle, const HpFenceCreateInfo *, const void *, Handle *), "vkCreateFence")(device, &fci, NULL, &fence));

    Result (*reset)(Handle, uint32_t, const Handle *) = CALL(Result (*)(Handle, uint32_t, const Handle *), "vkResetFences");
    Result (*submit)(Handle, uint32_t, const HpSubmitInfo *, Handle) =
        CALL(Result (*)(Handle, uint32_t, const HpSubmitInfo *, Handle), "vkQueueSubmit");
    Result (*wait)(Handle, uint32_t, const Handle *, uint32_t, uint64_t) =
        CALL(Result (*)(Handle, uint32_t, const Handle *, uint32_t, uint64_t), "vkWaitForFences");
    HpSubmitInfo si = {ST_SUBMIT_INFO, NULL, 0, NULL, NULL, 1, &cmd, 0, NULL};
    for (int warm = 0; warm < 20; warm++) {
        OK(reset(device, 1, &fence)); OK(submit(queue, 1, &si, fence)); OK(wait(device, 1, &fence, 1, UINT64_MAX));
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long i = 0; i < iterations; i++) {
        OK(reset(device, 1, &fence)); OK(submit(queue, 1, &si, fence)); OK(wait(device, 1, &fence, 1, UINT64_MAX));
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ns = (t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec);
    printf("ns_per_dispatch %.1f\n", ns / (double)iterations);

    CALL(void (*)(Handle, Handle, const void *), "vkDestroyFence")(device, fence, NULL);
    CALL(void (*)(Handle, Handle, const void *), "vkDestroyCommandPool")(device, pool, NULL);
    CALL(void (*)(Handle, Handle, const void *), "vkDestroyPipeline")(device, pipeline, NULL);
    CALL(void (*)(Handle, Handle, const void *), "vkDestroyPipelineLayout")(device, layout, NULL);
    CALL(void (*)(Handle, Handle, const void *), "vkDestroyShaderModule")(device, module, NULL);
    CALL(void (*)(Handle, const void *), "vkDestroyDevice")(device, NULL);
    CALL(void (*)(Handle, const void *), "vkDestroyInstance")(instance, NULL);
    return 0;
}
