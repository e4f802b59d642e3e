/* A fake libnvidia-ml.so.1 for m2g's probe tests (test/unit/test_probe.cpp).
 *
 * It exports exactly the NVML entry points src/discover/nvml.cpp looks up
 * with dlsym (for `m2g discover node` and m2g-nodeagent), with the
 * signatures of NVIDIA's public NVML API reference
 * (written here from the documentation, not copied from nvml.h), and answers
 * from environment variables read at each call, so one test process can
 * switch scenarios between probes:
 *
 *   FAKE_NVML_INIT_ERROR=N      nvmlInit_v2 returns NVML error N (9 = Driver
 *                               Not Loaded); default 0, success.
 *   FAKE_NVML_GPUS=N            number of GPUs (default 4; 0 is allowed).
 *   FAKE_NVML_BUSIDS=a,b,...    busId of GPU 0, 1, ... as NVML prints them
 *                               (default the GPUs of
 *                               test/fixtures/discover/nvl72-node.xml:
 *                               00000008:03:00.0,00000009:03:00.0,
 *                               00000018:03:00.0,00000019:03:00.0). GPUs past
 *                               the list get 00000000:4N:00.0.
 *   FAKE_NVML_NAME=text         every GPU's name (default "NVIDIA GB200").
 *   FAKE_NVML_DRIVER=text       driver version (default "570.133.20").
 *   FAKE_NVML_LOST_GPU=N        GPU N's nvmlDeviceGetPciInfo_v3 fails with
 *                               NVML_ERROR_GPU_IS_LOST (15).
 *   FAKE_NVML_FABRIC=WORD       nvmlDeviceGetGpuFabricInfo: "completed"
 *                               (default), "in_progress", "not_started",
 *                               "not_supported" (success, with that state),
 *                               "unsupported" (returns NVML_ERROR_NOT_SUPPORTED,
 *                               as on a GPU without fabric), "error" (returns
 *                               NVML_ERROR_UNKNOWN).
 *   FAKE_NVML_FABRIC_STATUS=N   the registration status when completed
 *                               (default 0, success).
 *   FAKE_NVML_CLUSTER_UUID=uuid cluster UUID, 36-character text (default
 *                               5f1b6c2e-8d3a-4b7e-9c41-2a6e0d7f3b90).
 *   FAKE_NVML_CLIQUE=N          clique id (default 7).
 *   FAKE_NVML_LINKS=N           NVLinks per GPU (default 18): links 0..N-1
 *                               answer nvmlDeviceGetNvLinkState, the others
 *                               return NVML_ERROR_NOT_SUPPORTED.
 *   FAKE_NVML_INACTIVE_LINKS=g:l,...  these links of these GPUs answer
 *                               NVML_FEATURE_DISABLED (e.g. "2:0,2:1": GPU 2
 *                               has two inactive links).
 *
 *
 * Power management (all values NVML's milliwatts; the variables are watts):
 *
 *   FAKE_NVML_DEFAULT_LIMIT_W=W nvmlDeviceGetPowerManagementDefaultLimit
 *                               (default 1200).
 *   FAKE_NVML_MIN_LIMIT_W=W     nvmlDeviceGetPowerManagementLimitConstraints'
 *   FAKE_NVML_MAX_LIMIT_W=W     minimum and maximum (defaults 200 and 1200).
 *                               nvmlDeviceSetPowerManagementLimit outside
 *                               [min, max] returns
 *                               NVML_ERROR_INVALID_ARGUMENT (2).
 *   FAKE_NVML_SET_LIMIT_ERROR=N every nvmlDeviceSetPowerManagementLimit
 *                               returns NVML error N (4 = No Permission),
 *                               changing nothing.
 *   FAKE_NVML_STATE_DIR=dir     the limits persist across processes, as a
 *                               driver keeps them: <dir>/<i>.limit holds GPU
 *                               i's current limit in mW as decimal text
 *                               (absent, empty or not a number: the default
 *                               limit), replaced atomically on each set.
 *                               Without it, limits are kept in this
 *                               process's memory (from the default).
 *                               nvmlDeviceGetPowerManagementLimit and
 *                               nvmlDeviceGetEnforcedPowerLimit return the
 *                               current limit.
 *   FAKE_NVML_JOBMAP_DIR=dir    a dcgm-exporter HPC job mapping directory
 *                               (src/core/obs/telemetry.hpp dcgm_map_add:
 *                               file <dir>/<i> lists the job ids on GPU i,
 *                               one per line). GPU i is busy when that file
 *                               lists a job that is not in
 *                               FAKE_NVML_IDLE_JOBS; without the variable
 *                               every GPU is idle.
 *   FAKE_NVML_IDLE_JOBS=file    job ids, one per line, whose GPUs run
 *                               nothing (Slurm suspended them: their
 *                               processes are stopped); test/fake-bms
 *                               writes it from squeue.
 *   FAKE_NVML_BUSY_W=W          nvmlDeviceGetPowerUsage of a busy GPU:
 *                               min(limit, W), default 1000 W.
 *   FAKE_NVML_IDLE_W=W          of an idle GPU: min(limit, W), default 90 W.
 *
 * GPU i's UUID is GPU-8c1d7a2e-0b3f-4c5d-9e6f-00000000000i (12 hex digits).
 * Calls other than nvmlInit_v2 and nvmlErrorString before a successful
 * nvmlInit_v2 return NVML_ERROR_UNINITIALIZED, as NVML does.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* NVIDIA's library is never built with sanitizers, so neither are the entry
 * points standing in for it: with clang's -fsanitize=function (part of
 * "undefined" since clang 17) each would carry its C type signature, which
 * the probe's C++ function pointers (opaque handle types of its own, as for
 * any library opened with dlopen) never match. The probe's own code stays
 * instrumented. */
#if defined(__clang__) && __clang_major__ >= 17
#pragma clang attribute push(__attribute__((no_sanitize("function"))), apply_to = function)
#endif

typedef int nvmlReturn_t;
typedef struct fake_device* nvmlDevice_t;
typedef int nvmlEnableState_t;
typedef unsigned char nvmlGpuFabricState_t;

typedef struct {
    char busIdLegacy[16];
    unsigned int domain;
    unsigned int bus;
    unsigned int device;
    unsigned int pciDeviceId;
    unsigned int pciSubSystemId;
    char busId[32];
} nvmlPciInfo_t;

typedef struct {
    unsigned char clusterUuid[16];
    nvmlReturn_t status;
    unsigned int cliqueId;
    nvmlGpuFabricState_t state;
} nvmlGpuFabricInfo_t;

enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NO_PERMISSION = 4,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_GPU_IS_LOST = 15,
    NVML_ERROR_UNKNOWN = 999,
};

#define FAKE_MAX_GPUS 64
#define FAKE_MAX_LINKS 18

struct fake_device {
    unsigned index;
};

static struct fake_device devices[FAKE_MAX_GPUS];
static int init_count;

static const char* env_or(const char* name, const char* fallback)
{
    const char* v = getenv(name);
    return v && *v ? v : fallback;
}

static long env_long(const char* name, long fallback)
{
    const char* v = getenv(name);
    return v && *v ? strtol(v, NULL, 0) : fallback;
}

static unsigned gpu_count(void)
{
    long n = env_long("FAKE_NVML_GPUS", 4);
    if (n < 0)
        n = 0;
    if (n > FAKE_MAX_GPUS)
        n = FAKE_MAX_GPUS;
    return (unsigned)n;
}

static int device_index(nvmlDevice_t d)
{
    if (!d || d < devices || d >= devices + FAKE_MAX_GPUS || d->index >= gpu_count())
        return -1;
    return (int)d->index;
}

/* Field `which` of a comma-separated list into out; 0 when absent. */
static int list_item(const char* list, unsigned which, char* out, size_t size)
{
    const char* p = list;
    for (unsigned i = 0; i < which && p; ++i) {
        p = strchr(p, ',');
        if (p)
            ++p;
    }
    if (!p || !*p)
        return 0;
    size_t n = strcspn(p, ",");
    if (n == 0 || n >= size)
        return 0;
    memcpy(out, p, n);
    out[n] = '\0';
    return 1;
}

static void bus_id(unsigned i, char* out, size_t size)
{
    const char* list =
        env_or("FAKE_NVML_BUSIDS", "00000008:03:00.0,00000009:03:00.0,00000018:03:00.0,00000019:03:00.0");
    if (!list_item(list, i, out, size))
        snprintf(out, size, "00000000:%02X:00.0", 0x40 + i);
}

static int link_inactive(unsigned gpu, unsigned link)
{
    const char* p = getenv("FAKE_NVML_INACTIVE_LINKS");
    while (p && *p) {
        unsigned g, l;
        if (sscanf(p, "%u:%u", &g, &l) == 2 && g == gpu && l == link)
            return 1;
        p = strchr(p, ',');
        if (p)
            ++p;
    }
    return 0;
}

nvmlReturn_t nvmlInit_v2(void)
{
    long e = env_long("FAKE_NVML_INIT_ERROR", 0);
    if (e != 0)
        return (nvmlReturn_t)e;
    for (unsigned i = 0; i < FAKE_MAX_GPUS; ++i)
        devices[i].index = i;
    ++init_count;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlShutdown(void)
{
    if (init_count == 0)
        return NVML_ERROR_UNINITIALIZED;
    --init_count;
    return NVML_SUCCESS;
}

const char* nvmlErrorString(nvmlReturn_t r)
{
    switch (r) {
    case 0: return "Success";
    case 1: return "Uninitialized";
    case 2: return "Invalid Argument";
    case 3: return "Not Supported";
    case 4: return "Insufficient Permissions";
    case 6: return "Not Found";
    case 7: return "Insufficient Size";
    case 9: return "Driver Not Loaded";
    case 12: return "NVML Shared Library Not Found";
    case 15: return "GPU is lost";
    case 18: return "No data";
    }
    return "Unknown Error";
}

nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length)
{
    if (!init_count)
        return NVML_ERROR_UNINITIALIZED;
    const char* v = env_or("FAKE_NVML_DRIVER", "570.133.20");
    if (!version)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (strlen(v) + 1 > length)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    strcpy(version, v);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count)
{
    if (!init_count)
        return NVML_ERROR_UNINITIALIZED;
    if (!count)
        return NVML_ERROR_INVALID_ARGUMENT;
    *count = gpu_count();
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device)
{
    if (!init_count)
        return NVML_ERROR_UNINITIALIZED;
    if (!device || index >= gpu_count())
        return NVML_ERROR_INVALID_ARGUMENT;
    *device = &devices[index];
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length)
{
    if (!init_count)
        return NVML_ERROR_UNINITIALIZED;
    if (device_index(device) < 0 || !name)
        return NVML_ERROR_INVALID_ARGUMENT;
    const char* v = env_or("FAKE_NVML_NAME", "NVIDIA GB200");
    if (strlen(v) + 1 > length)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    strcpy(name, v);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length)
{
    if (!init_count)
        return NVML_ERROR_UNINITIALIZED;
    int i = device_index(device);
    if (i < 0 || !uuid)
        return NVML_ERROR_INVALID_ARGUMENT;
    char buf[96];
    snprintf(buf, sizeof buf, "GPU-8c1d7a2e-0b3f-4c5d-9e6f-%012x", (unsigned)i);
    if (strlen(buf) + 1 > length)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    strcpy(uuid, buf);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci)
{
    if (!init_count)
        return NVML_ERROR_UNINITIALIZED;
    int i = device_index(device);
    if (i < 0 || !pci)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (env_long("FAKE_NVML_LOST_GPU", -1) == i)
        return NVML_ERROR_GPU_IS_LOST;
    memset(pci, 0, sizeof *pci);
    bus_id((unsigned)i, pci->busId, sizeof pci->busId);
    unsigned domain = 0, bus = 0, dev = 0, fn = 0;
    sscanf(pci->busId, "%x:%x:%x.%x", &domain, &bus, &dev, &fn);
    pci->domain = domain;
    pci->bus = bus;
    pci->device = dev;
    snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%04X:%02X:%02X.%X", domain & 0xffff, bus & 0xff, dev & 0x1f,
             fn & 7);
    pci->pciDeviceId = 0x294110de; /* GB200: device 0x2941, vendor 0x10de */
    pci->pciSubSystemId = 0x20ed10de;
    return NVML_SUCCESS;
}

static int parse_uuid(const char* text, unsigned char out[16])
{
    unsigned n = 0;
    for (const char* p = text; *p; ++p) {
        if (*p == '-')
            continue;
        unsigned v;
        if (n >= 32 || sscanf(p, "%1x", &v) != 1)
            return 0;
        if (n % 2 == 0)
            out[n / 2] = (unsigned char)(v << 4);
        else
            out[n / 2] |= (unsigned char)v;
        ++n;
    }
    return n == 32;
}

nvmlReturn_t nvmlDeviceGetGpuFabricInfo(nvmlDevice_t device, nvmlGpuFabricInfo_t* info)
{
    if (!init_count)
        return NVML_ERROR_UNINITIALIZED;
    if (device_index(device) < 0 || !info)
        return NVML_ERROR_INVALID_ARGUMENT;
    const char* mode = env_or("FAKE_NVML_FABRIC", "completed");
    if (strcmp(mode, "unsupported") == 0)
        return NVML_ERROR_NOT_SUPPORTED;
    if (strcmp(mode, "error") == 0)
        return NVML_ERROR_UNKNOWN;
    memset(info, 0, sizeof *info);
    if (strcmp(mode, "not_supported") == 0)
        info->state = 0;
    else if (strcmp(mode, "not_started") == 0)
        info->state = 1;
    else if (strcmp(mode, "in_progress") == 0)
        info->state = 2;
    else
        info->state = 3;
    if (info->state == 3) {
        info->status = (nvmlReturn_t)env_long("FAKE_NVML_FABRIC_STATUS", 0);
        if (!parse_uuid(env_or("FAKE_NVML_CLUSTER_UUID", "5f1b6c2e-8d3a-4b7e-9c41-2a6e0d7f3b90"), info->clusterUuid))
            return NVML_ERROR_UNKNOWN;
        info->cliqueId = (unsigned)env_long("FAKE_NVML_CLIQUE", 7);
    }
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link, nvmlEnableState_t* isActive)
{
    if (!init_count)
        return NVML_ERROR_UNINITIALIZED;
    int i = device_index(device);
    if (i < 0 || !isActive || link >= FAKE_MAX_LINKS)
        return NVML_ERROR_INVALID_ARGUMENT;
    if ((long)link >= env_long("FAKE_NVML_LINKS", FAKE_MAX_LINKS))
        return NVML_ERROR_NOT_SUPPORTED;
    *isActive = link_inactive((unsigned)i, link) ? 0 : 1;
    return NVML_SUCCESS;
}

/* ---- power management ---------------------------------------------------- */

static unsigned memory_limit_mw[FAKE_MAX_GPUS]; /* 0: the default */

static unsigned watts_env_mw(const char* name, long fallback_w)
{
    long w = env_long(name, fallback_w);
    if (w < 0)
        w = 0;
    if (w > 4000000)
        w = 4000000;
    return (unsigned)w * 1000u;
}

static unsigned default_limit_mw(void) { return watts_env_mw("FAKE_NVML_DEFAULT_LIMIT_W", 1200); }
static unsigned min_limit_mw(void) { return watts_env_mw("FAKE_NVML_MIN_LIMIT_W", 200); }
static unsigned max_limit_mw(void) { return watts_env_mw("FAKE_NVML_MAX_LIMIT_W", 1200); }

static void limit_path(unsigned i, char* out, size_t size)
{
    snprintf(out, size, "%s/%u.limit", getenv("FAKE_NVML_STATE_DIR"), i);
}

static unsigned current_limit_mw(unsigned i)
{
    const char* dir = getenv("FAKE_NVML_STATE_DIR");
    if (!dir || !*dir)
        return memory_limit_mw[i] ? memory_limit_mw[i] : default_limit_mw();
    char path[4096];
    limit_path(i, path, sizeof path);
    FILE* f = fopen(path, "r");
    if (!f)
        return default_limit_mw();
    unsigned long mw = 0;
    int got = fscanf(f, "%lu", &mw);
    fclose(f);
    return got == 1 && mw > 0 && mw <= 0xffffffffUL ? (unsigned)mw : default_limit_mw();
}

/* 0 on success, else an NVML error. */
static nvmlReturn_t store_limit_mw(unsigned i, unsigned mw)
{
    const char* dir = getenv("FAKE_NVML_STATE_DIR");
    if (!dir || !*dir) {
        memory_limit_mw[i] = mw;
        return NVML_SUCCESS;
    }
    char path[4096], tmp[4200];
    limit_path(i, path, sizeof path);
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    FILE* f = fopen(tmp, "w");
    if (!f)
        return errno == EACCES ? NVML_ERROR_NO_PERMISSION : NVML_ERROR_UNKNOWN;
    int bad = fprintf(f, "%u\n", mw) < 0;
    bad |= fclose(f) != 0;
    if (bad || rename(tmp, path) != 0) {
        unlink(tmp);
        return NVML_ERROR_UNKNOWN;
    }
    return NVML_SUCCESS;
}

/* Whether job id `id` is listed in FAKE_NVML_IDLE_JOBS. */
static int job_idle(const char* id)
{
    const char* path = getenv("FAKE_NVML_IDLE_JOBS");
    if (!path || !*path)
        return 0;
    FILE* f = fopen(path, "r");
    if (!f)
        return 0;
    char line[64];
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) {
        line[strcspn(line, " \t\r\n")] = 0;
        found = line[0] && strcmp(line, id) == 0;
    }
    fclose(f);
    return found;
}

static int gpu_busy(unsigned i)
{
    const char* dir = getenv("FAKE_NVML_JOBMAP_DIR");
    if (!dir || !*dir)
        return 0;
    char path[4096];
    snprintf(path, sizeof path, "%s/%u", dir, i);
    FILE* f = fopen(path, "r");
    if (!f)
        return 0;
    char line[64];
    int busy = 0;
    while (!busy && fgets(line, sizeof line, f)) {
        line[strcspn(line, " \t\r\n")] = 0;
        busy = line[0] && !job_idle(line);
    }
    fclose(f);
    return busy;
}

/* The checks every power call starts with: GPU index, or -1 with *rc set. */
static int power_device(nvmlDevice_t device, const void* out, nvmlReturn_t* rc)
{
    if (!init_count) {
        *rc = NVML_ERROR_UNINITIALIZED;
        return -1;
    }
    int i = device_index(device);
    if (i < 0 || !out) {
        *rc = NVML_ERROR_INVALID_ARGUMENT;
        return -1;
    }
    return i;
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int* power)
{
    nvmlReturn_t rc = NVML_SUCCESS;
    int i = power_device(device, power, &rc);
    if (i < 0)
        return rc;
    unsigned limit = current_limit_mw((unsigned)i);
    unsigned draw =
        gpu_busy((unsigned)i) ? watts_env_mw("FAKE_NVML_BUSY_W", 1000) : watts_env_mw("FAKE_NVML_IDLE_W", 90);
    *power = draw < limit ? draw : limit;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvmlDevice_t device, unsigned int* limit)
{
    nvmlReturn_t rc = NVML_SUCCESS;
    int i = power_device(device, limit, &rc);
    if (i < 0)
        return rc;
    *limit = current_limit_mw((unsigned)i);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t device, unsigned int* limit)
{
    return nvmlDeviceGetPowerManagementLimit(device, limit);
}

nvmlReturn_t nvmlDeviceGetPowerManagementDefaultLimit(nvmlDevice_t device, unsigned int* defaultLimit)
{
    nvmlReturn_t rc = NVML_SUCCESS;
    int i = power_device(device, defaultLimit, &rc);
    if (i < 0)
        return rc;
    *defaultLimit = default_limit_mw();
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPowerManagementLimitConstraints(nvmlDevice_t device, unsigned int* minLimit,
                                                          unsigned int* maxLimit)
{
    nvmlReturn_t rc = NVML_SUCCESS;
    int i = power_device(device, minLimit, &rc);
    if (i < 0)
        return rc;
    if (!maxLimit)
        return NVML_ERROR_INVALID_ARGUMENT;
    *minLimit = min_limit_mw();
    *maxLimit = max_limit_mw();
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceSetPowerManagementLimit(nvmlDevice_t device, unsigned int limit)
{
    nvmlReturn_t rc = NVML_SUCCESS;
    int i = power_device(device, &limit, &rc);
    if (i < 0)
        return rc;
    long e = env_long("FAKE_NVML_SET_LIMIT_ERROR", 0);
    if (e != 0)
        return (nvmlReturn_t)e;
    if (limit < min_limit_mw() || limit > max_limit_mw())
        return NVML_ERROR_INVALID_ARGUMENT;
    return store_limit_mw((unsigned)i, limit);
}

#if defined(__clang__) && __clang_major__ >= 17
#pragma clang attribute pop
#endif
