/* A fake libcuda.so.1 for gpudoctor's runtime (check --deep) tests.
 *
 * The CUDA driver smoke test (gpudoctor/host/cuda_smoke.py) dlopens "libcuda.so.1" by name, as every CUDA
 * program does, so the loader finds this library first when its directory is on LD_LIBRARY_PATH. The tests
 * compile it once per session:
 *
 *   cc -shared -fPIC -O1 -o DIR/libcuda.so.1 fake_cuda.c
 *
 * Every exported function has the CUDA driver API's own name, signature and CUresult codes (cuda.h), so the
 * smoke test's ctypes calls, out-parameters and error-name lookups are exercised as on a real host. Only the
 * calls the smoke test makes are provided (plus cuCtxCreate_v2/cuCtxDestroy_v2, the other way to open a
 * context).
 *
 * A scenario scripts the host: items separated by commas, read at every cuInit from the file `scenario` in
 * this library's own directory (so that it reaches the library through gpudoctor's child processes, which
 * pass on no variable of the tests'), or from FAKE_CUDA_SCENARIO when that is set (a direct run).
 *
 *   ok               nothing changes: the default host, two GPUs and a CUDA 13.0 driver
 *   CODE             cuInit returns this CUresult, e.g. 802 (fabric manager down), 999, 100, 304
 *   hang             cuInit never returns (a wedged driver)
 *   devices=N        N GPUs (0-16); with 0, cuInit returns CUDA_ERROR_NO_DEVICE, as the real driver does
 *   version=N        what cuDriverGetVersion says, e.g. 12080 for CUDA 12.8 (default 13000)
 *   ctx=D:CODE       opening a context on device D fails with CODE (or D:hang: never returns)
 *   nonames          cuGetErrorName and cuGetErrorString fail, as for a code the driver does not name
 *
 * A scenario with a mistake makes cuInit fail with CUDA_ERROR_INVALID_VALUE (1) and says why on stderr, so
 * that a typo cannot pass silently as a healthy host.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int CUresult;
typedef int CUdevice;
typedef struct fake_context *CUcontext;

enum {
    SUCCESS = 0, INVALID_VALUE = 1, NOT_INITIALIZED = 3, NO_DEVICE = 100, INVALID_DEVICE = 101,
    INVALID_CONTEXT = 201, UNKNOWN = 999,
    HANG = -1, /* not a CUresult: the call never returns */
};

/* The driver's names and messages (cuGetErrorName, cuGetErrorString) for the codes the tests use. */
static const struct { int code; const char *name; const char *message; } CODES[] = {
    {0, "CUDA_SUCCESS", "no error"},
    {1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {34, "CUDA_ERROR_STUB_LIBRARY", "CUDA driver is a stub library"},
    {46, "CUDA_ERROR_DEVICE_UNAVAILABLE", "CUDA-capable device(s) is/are busy or unavailable"},
    {100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {214, "CUDA_ERROR_ECC_UNCORRECTABLE", "uncorrectable ECC error encountered"},
    {304, "CUDA_ERROR_OPERATING_SYSTEM", "OS call failed or operation not supported on this OS"},
    {802, "CUDA_ERROR_SYSTEM_NOT_READY", "system not yet initialized"},
    {803, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
     "system has unsupported display driver / cuda driver combination"},
    {999, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

#define MAX_DEVICES 16

struct fake_context { int device; };

static struct fake_context contexts[MAX_DEVICES];
static int ctx_code[MAX_DEVICES];   /* what opening a context on each device returns (or HANG) */
static int retained[MAX_DEVICES];   /* primary context retain counts */
static int init_code, device_count, driver_version, names_off, initialised, loaded;

static void hang_forever(void) {
    for (;;) sleep(3600); /* sleep returns early on a signal; keep sleeping */
}

/* A CUresult number, or HANG for "hang"; -2 when the text is neither. */
static int code_of(const char *text) {
    char *end;
    if (strcmp(text, "hang") == 0) return HANG;
    long n = strtol(text, &end, 10);
    return (*text && *end == '\0' && n >= 0 && n < 100000) ? (int)n : -2;
}

/* The scenario text: FAKE_CUDA_SCENARIO, else the first line of `scenario` beside this library, else "". */
static void scenario_text(char *out, size_t size) {
    const char *env = getenv("FAKE_CUDA_SCENARIO");
    Dl_info info;
    out[0] = '\0';
    if (env) {
        snprintf(out, size, "%s", env);
        return;
    }
    if (dladdr((void *)scenario_text, &info) && info.dli_fname) {
        char path[4096];
        const char *slash = strrchr(info.dli_fname, '/');
        int dir = slash ? (int)(slash - info.dli_fname) : 1;
        snprintf(path, sizeof path, "%.*s/scenario", dir, slash ? info.dli_fname : ".");
        FILE *f = fopen(path, "r");
        if (f) {
            if (fgets(out, (int)size, f)) out[strcspn(out, "\n")] = '\0';
            fclose(f);
        }
    }
}

/* Reads the scenario. Returns 0, or -1 (after saying on stderr what is wrong, unless `quiet`). */
static int load_scenario(int quiet) {
    char env[512];
    char text[512], *save = NULL;
    memset(ctx_code, 0, sizeof ctx_code);
    memset(retained, 0, sizeof retained);
    init_code = SUCCESS;
    device_count = 2;
    driver_version = 13000;
    names_off = 0;
    loaded = 1;
    scenario_text(env, sizeof env);
    if (!*env) return 0;
    snprintf(text, sizeof text, "%s", env);
    for (char *item = strtok_r(text, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        const char *problem = NULL;
        int code = code_of(item);
        if (strcmp(item, "ok") == 0) {
        } else if (strcmp(item, "nonames") == 0) {
            names_off = 1;
        } else if (code != -2) {
            init_code = code;
        } else if (strncmp(item, "devices=", 8) == 0) {
            int n = code_of(item + 8);
            if (n < 0 || n > MAX_DEVICES) problem = "expected devices=N with N from 0 to 16";
            else device_count = n;
        } else if (strncmp(item, "version=", 8) == 0) {
            int n = code_of(item + 8);
            if (n < 0) problem = "expected version=N, e.g. version=12080";
            else driver_version = n;
        } else if (strncmp(item, "ctx=", 4) == 0) {
            char *colon = strchr(item + 4, ':');
            int device = -1;
            if (colon) {
                *colon = '\0';
                device = code_of(item + 4);
                code = code_of(colon + 1);
            }
            if (!colon || device < 0 || device >= MAX_DEVICES || code == -2)
                problem = "expected ctx=D:CODE or ctx=D:hang";
            else ctx_code[device] = code;
        } else {
            problem = "unknown item";
        }
        if (problem) {
            if (quiet) return -1;
            fprintf(stderr, "fake_cuda: scenario: %s: %s\n", item, problem);
            return -1;
        }
    }
    return 0;
}

CUresult cuDriverGetVersion(int *version) {
    if (!version) return INVALID_VALUE;
    if (!loaded && load_scenario(1) != 0) return INVALID_VALUE; /* cuInit will say what is wrong */
    *version = driver_version;
    return SUCCESS;
}

CUresult cuInit(unsigned int flags) {
    if (flags != 0) return INVALID_VALUE;
    if (load_scenario(0) != 0) return INVALID_VALUE; /* read anew: a test may change it in between */
    if (init_code == HANG) hang_forever();
    if (init_code == SUCCESS && device_count == 0) init_code = NO_DEVICE;
    initialised = init_code == SUCCESS;
    return init_code;
}

CUresult cuDeviceGetCount(int *count) {
    if (!initialised) return NOT_INITIALIZED;
    if (!count) return INVALID_VALUE;
    *count = device_count;
    return SUCCESS;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal) {
    if (!initialised) return NOT_INITIALIZED;
    if (!device) return INVALID_VALUE;
    if (ordinal < 0 || ordinal >= device_count) return INVALID_DEVICE;
    *device = ordinal;
    return SUCCESS;
}

/* Opening a context on `device`: as scripted by ctx=D:CODE. */
static CUresult open_context(CUcontext *context, CUdevice device) {
    if (!initialised) return NOT_INITIALIZED;
    if (!context) return INVALID_VALUE;
    if (device < 0 || device >= device_count) return INVALID_DEVICE;
    if (ctx_code[device] == HANG) hang_forever();
    if (ctx_code[device] != SUCCESS) return ctx_code[device];
    contexts[device].device = device;
    *context = &contexts[device];
    return SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *context, CUdevice device) {
    CUresult code = open_context(context, device);
    if (code == SUCCESS) retained[device]++;
    return code;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice device) {
    if (!initialised) return NOT_INITIALIZED;
    if (device < 0 || device >= device_count) return INVALID_DEVICE;
    if (retained[device] == 0) return INVALID_CONTEXT;
    retained[device]--;
    return SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease(CUdevice device) { return cuDevicePrimaryCtxRelease_v2(device); }

CUresult cuCtxCreate_v2(CUcontext *context, unsigned int flags, CUdevice device) {
    (void)flags;
    return open_context(context, device);
}

CUresult cuCtxDestroy_v2(CUcontext context) {
    if (!initialised) return NOT_INITIALIZED;
    if (!context || context < contexts || context >= contexts + MAX_DEVICES) return INVALID_CONTEXT;
    return SUCCESS;
}

static CUresult describe(CUresult code, const char **out, int want_name) {
    if (!out) return INVALID_VALUE;
    *out = NULL;
    if (names_off) return INVALID_VALUE;
    for (size_t i = 0; i < sizeof CODES / sizeof CODES[0]; i++) {
        if (CODES[i].code == code) {
            *out = want_name ? CODES[i].name : CODES[i].message;
            return SUCCESS;
        }
    }
    return INVALID_VALUE; /* the real driver's answer for a code it does not know */
}

CUresult cuGetErrorName(CUresult code, const char **name) { return describe(code, name, 1); }
CUresult cuGetErrorString(CUresult code, const char **message) { return describe(code, message, 0); }
