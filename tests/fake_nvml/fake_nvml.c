/* A fake libnvidia-ml.so.1 for gpudoctor's reliability tests.
 *
 * gpudoctor runs where things are broken, so broken hosts are its normal input. This library lets the
 * REAL pynvml (which dlopens "libnvidia-ml.so.1" by name) load a scripted GPU host: put the compiled
 * library in a directory on LD_LIBRARY_PATH and name a scenario file in FAKE_NVML_SCENARIO.
 *
 *   cc -shared -fPIC -O1 -o DIR/libnvidia-ml.so.1 fake_nvml.c
 *
 * Every exported function has NVML's own name, signature and return codes (as nvml.h declares them and
 * pynvml's ctypes calls pass them), so pynvml's error classes, struct layouts and symbol lookups are
 * exercised exactly as on a real host. Only the calls gpudoctor's probes make are provided; any other
 * symbol is missing, which pynvml reports as NVMLError_FunctionNotFound, as an older driver would.
 * Built with -DFAKE_NVML_OLD_DRIVER it also lacks the calls drivers before 535 do not have.
 *
 * Scenario file: one "key value" per line; '#' starts a comment. The keys are in KEYS below. A per-GPU
 * key applies to every GPU, or to GPU N only when written "gpu.N.key". Without FAKE_NVML_SCENARIO the
 * host is the healthy default: eight H100 SXM GPUs with 18 NVLink links up each, every pair P2P OK, GPUs
 * 0-3 on CPU socket 0 and 4-7 on socket 1. A scenario with a mistake makes nvmlInit fail with
 * NVML_ERROR_UNKNOWN and says why on stderr, so a typo cannot pass silently as a healthy host.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* nvmlReturn_t and the other enums are ints in the C ABI; a device handle is an opaque pointer. */
typedef int nvmlReturn_t;
typedef struct fake_gpu *nvmlDevice_t;

enum {
    OK = 0, UNINITIALIZED = 1, INVALID_ARGUMENT = 2, NOT_SUPPORTED = 3, NO_PERMISSION = 4, NOT_FOUND = 6,
    INSUFFICIENT_SIZE = 7, DRIVER_NOT_LOADED = 9, TIMEOUT = 10, LIBRARY_NOT_FOUND = 12,
    FUNCTION_NOT_FOUND = 13, GPU_IS_LOST = 15, LIB_RM_VERSION_MISMATCH = 18, UNKNOWN = 999,
    HANG = -1, /* not an NVML code: the call never returns (a wedged driver) */
};

/* Return codes by the names scenarios use (NVML_ERROR_ without its prefix), and NVML's own messages. */
static const struct { const char *name; int code; const char *message; } CODES[] = {
    {"SUCCESS", OK, "Success"},
    {"UNINITIALIZED", UNINITIALIZED, "Uninitialized"},
    {"INVALID_ARGUMENT", INVALID_ARGUMENT, "Invalid Argument"},
    {"NOT_SUPPORTED", NOT_SUPPORTED, "Not Supported"},
    {"NO_PERMISSION", NO_PERMISSION, "Insufficient Permissions"},
    {"NOT_FOUND", NOT_FOUND, "Not Found"},
    {"INSUFFICIENT_SIZE", INSUFFICIENT_SIZE, "Insufficient Size"},
    {"DRIVER_NOT_LOADED", DRIVER_NOT_LOADED, "Driver Not Loaded"},
    {"TIMEOUT", TIMEOUT, "Timeout"},
    {"LIBRARY_NOT_FOUND", LIBRARY_NOT_FOUND, "NVML Shared Library Not Found"},
    {"FUNCTION_NOT_FOUND", FUNCTION_NOT_FOUND, "Function Not Found"},
    {"GPU_IS_LOST", GPU_IS_LOST, "GPU is lost"},
    {"LIB_RM_VERSION_MISMATCH", LIB_RM_VERSION_MISMATCH, "RM has detected an NVML/RM version mismatch."},
    {"UNKNOWN", UNKNOWN, "Unknown Error"},
    {"HANG", HANG, "(hangs)"},
};

/* Per-GPU numbers. Defaults describe a healthy, idle H100 80GB HBM3 SXM on an HGX board. */
enum field {
    BRAND, ARCH, CC_MAJOR, CC_MINOR, MEM_TOTAL, MEM_USED, PCI_BUS, PCIE_GEN, PCIE_GEN_MAX, PCIE_GEN_GPU_MAX,
    PCIE_WIDTH, PCIE_WIDTH_MAX, PCIE_REPLAY, CLOCK_SM, CLOCK_SM_MAX, CLOCK_MEM, CLOCK_MEM_MAX, REASONS,
    UTIL_GPU, UTIL_MEM, TEMP, TEMP_SLOWDOWN, TEMP_SHUTDOWN, POWER, POWER_LIMIT, POWER_DEFAULT_LIMIT,
    PERSISTENCE, COMPUTE_MODE, MIG, MIG_PENDING, ECC, ECC_PENDING, ECC_UNCORRECTED_VOLATILE,
    ECC_UNCORRECTED_AGGREGATE, ECC_CORRECTED_VOLATILE, ECC_CORRECTED_AGGREGATE, ROWS_CORRECTABLE,
    ROWS_UNCORRECTABLE, ROWS_PENDING, ROWS_FAILED, VIRTUALIZATION, NVLINKS, NVLINK_VERSION, LOST_AFTER,
    SOCKET, PCIE_SWITCH, /* peers: see the P2P and topology section */
    NFIELDS,
    /* Keys that are not per-GPU numbers. */
    GPUS, DRIVER_VERSION, NVML_VERSION, CUDA_VERSION, INIT, NAME, DEFAULT, FAIL, HANG_KEY, NVLINK,
    P2P,
};
#define NEVER (~0ULL)

/* The one table of scenario keys, with the default of each (a number, or for text keys a text). */
static const struct { const char *key; int id; unsigned long long dflt; const char *text; } KEYS[] = {
    {"brand", BRAND, 14},                     /* NVML_BRAND_NVIDIA, as data-centre GPUs report since r535 */
    {"architecture", ARCH, 9},                /* NVML_DEVICE_ARCH_HOPPER */
    {"cc_major", CC_MAJOR, 9}, {"cc_minor", CC_MINOR, 0},
    {"memory_total", MEM_TOTAL, 85520809984ULL}, /* 81559 MiB */
    {"memory_used", MEM_USED, 555745280ULL},
    {"pci_bus", PCI_BUS, 0},                  /* 0: the HGX board's bus number for the GPU's index */
    {"pcie_gen", PCIE_GEN, 5}, {"pcie_gen_max", PCIE_GEN_MAX, 5}, {"pcie_gen_gpu_max", PCIE_GEN_GPU_MAX, 5},
    {"pcie_width", PCIE_WIDTH, 16}, {"pcie_width_max", PCIE_WIDTH_MAX, 16},
    {"pcie_replay", PCIE_REPLAY, 0},
    {"clock_sm", CLOCK_SM, 345}, {"clock_sm_max", CLOCK_SM_MAX, 1980},
    {"clock_mem", CLOCK_MEM, 2619}, {"clock_mem_max", CLOCK_MEM_MAX, 2619},
    {"reasons", REASONS, 0x1},                /* clock event reasons bitmask; 0x1 = GpuIdle */
    {"util_gpu", UTIL_GPU, 0}, {"util_mem", UTIL_MEM, 0},
    {"temp", TEMP, 33}, {"temp_slowdown", TEMP_SLOWDOWN, 87}, {"temp_shutdown", TEMP_SHUTDOWN, 92},
    {"power", POWER, 71000},                  /* milliwatts, as NVML reports power */
    {"power_limit", POWER_LIMIT, 700000}, {"power_default_limit", POWER_DEFAULT_LIMIT, 700000},
    {"persistence", PERSISTENCE, 1}, {"compute_mode", COMPUTE_MODE, 0},
    {"mig", MIG, 0}, {"mig_pending", MIG_PENDING, 0}, {"ecc", ECC, 1}, {"ecc_pending", ECC_PENDING, 1},
    {"ecc_uncorrected_volatile", ECC_UNCORRECTED_VOLATILE, 0},
    {"ecc_uncorrected_aggregate", ECC_UNCORRECTED_AGGREGATE, 0},
    {"ecc_corrected_volatile", ECC_CORRECTED_VOLATILE, 0},
    {"ecc_corrected_aggregate", ECC_CORRECTED_AGGREGATE, 0},
    {"rows_correctable", ROWS_CORRECTABLE, 0}, {"rows_uncorrectable", ROWS_UNCORRECTABLE, 0},
    {"rows_pending", ROWS_PENDING, 0}, {"rows_failed", ROWS_FAILED, 0},
    {"virtualization", VIRTUALIZATION, 0},    /* NVML_GPU_VIRTUALIZATION_MODE_NONE: bare metal */
    {"nvlinks", NVLINKS, 18},                 /* links with a state; the next one is INVALID_ARGUMENT */
    {"nvlink_version", NVLINK_VERSION, 4},
    {"lost_after", LOST_AFTER, NEVER},        /* after this many calls the GPU answers only GPU_IS_LOST */
    {"socket", SOCKET, 0},                    /* CPU socket; by default 0 for GPUs 0-3, 1 for 4-7 (reset) */
    {"pcie_switch", PCIE_SWITCH, 0},          /* PCIe switch the GPU sits behind; 0: one of its own */
    /* Whole host. */
    {"gpus", GPUS, 8},
    {"driver_version", DRIVER_VERSION, 0, "570.133.20"},
    {"nvml_version", NVML_VERSION, 0, "12.570.133.20"},
    {"cuda_version", CUDA_VERSION, 12080},    /* cuDriverGetVersion's integer: 12080 is CUDA 12.8 */
    {"init", INIT, OK},                       /* what nvmlInit returns, e.g. LIB_RM_VERSION_MISMATCH */
    /* Per GPU, not numbers. */
    {"name", NAME, 0, "NVIDIA H100 80GB HBM3"},
    {"default", DEFAULT, OK},                 /* CODE: every optional query (see ENTER) fails so */
    {"fail", FAIL, 0},                        /* "SYMBOL CODE": that call fails so (or HANGs) */
    {"hang", HANG_KEY, 0},                    /* "SYMBOL": same as "fail SYMBOL HANG" */
    {"nvlink", NVLINK, 0},                    /* "nvlink.L down|up": the state of link L; "nvlink.L.remote
                                                 switch|ibmnpu|BUSID": what it reaches (NVLink far ends) */
    {"p2p", P2P, 0},                          /* "p2p.J STATUS": P2P read status from GPU J (P2P section) */
};

/* HGX H100 boards put their eight GPUs on these PCI buses. */
static const unsigned char HGX_BUSES[8] = {0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb};

#define MAX_GPUS 16
#define MAX_FAILS 64
#define ALL (-1)

struct fake_gpu {
    int index;
    unsigned long long v[NFIELDS];
    char name[96];
    unsigned int nvlink_down;     /* bit L set: link L is inactive */
    int default_code;
    unsigned long long calls;     /* queries answered so far, for lost_after */
    unsigned int p2p_read[MAX_GPUS]; /* nvmlGpuP2PStatus_t of reading from GPU J; 0 (OK) by default */
    struct { int type; unsigned int domain, bus, device, function; } remote[32]; /* NVLink far ends */
};

static struct fake_gpu gpus[MAX_GPUS];
static struct { int gpu; char symbol[64]; int code; } fails[MAX_FAILS];
static int nfails, gpu_count, init_code, initialised;
static unsigned long long cuda_version;
static char driver_version[80], nvml_version[80];

#define NKEYS (sizeof KEYS / sizeof KEYS[0])

static const char *apply_part_d(int gpu, const char *key, char *value); /* issue 11 part D, below */
static const char *apply_p2p(int first, int last, const char *peer, const char *value); /* P2P, below */
static void reset_part_d(void);
static const char *apply_fabric(int gpu, const char *key, char *value); /* issue 11 part 3, at the end */
static void reset_fabric(void);
static const char *apply_remote(int first, int last, long link, const char *value); /* NVLink far ends */
static void reset_remotes(void);

/* Everything back to the defaults in KEYS. */
static void reset(void) {
    memset(gpus, 0, sizeof gpus);
    nfails = initialised = 0;
    for (size_t k = 0; k < NKEYS; k++) {
        int id = KEYS[k].id;
        for (int i = 0; id < NFIELDS && i < MAX_GPUS; i++) gpus[i].v[id] = KEYS[k].dflt;
        for (int i = 0; id == NAME && i < MAX_GPUS; i++) strcpy(gpus[i].name, KEYS[k].text);
        if (id == GPUS) gpu_count = (int)KEYS[k].dflt;
        if (id == CUDA_VERSION) cuda_version = KEYS[k].dflt;
        if (id == INIT) init_code = (int)KEYS[k].dflt;
        if (id == DRIVER_VERSION) strcpy(driver_version, KEYS[k].text);
        if (id == NVML_VERSION) strcpy(nvml_version, KEYS[k].text);
    }
    reset_part_d();
    reset_fabric();
    reset_remotes();
    for (int i = 0; i < MAX_GPUS; i++) {
        gpus[i].index = i;
        gpus[i].v[PCI_BUS] = HGX_BUSES[i % 8] + i / 8; /* GPUs past eight: the next bus along */
        gpus[i].v[SOCKET] = (unsigned long long)(i % 8 / 4); /* an HGX board's halves; see P2P section */
    }
}

static int code_of(const char *name) {
    for (size_t i = 0; i < sizeof CODES / sizeof CODES[0]; i++)
        if (strcmp(CODES[i].name, name) == 0) return CODES[i].code;
    return -2;
}

/* Applies one "key value" line to GPU `gpu` (or ALL). Returns NULL, or what is wrong with the line. */
static const char *apply(int gpu, const char *key, char *value) {
    char sub[16] = "";
    const char *dot = strchr(key, '.');
    size_t len = dot ? (size_t)(dot - key) : strlen(key);
    if (dot) snprintf(sub, sizeof sub, "%s", dot + 1);
    for (size_t k = 0; k < NKEYS; k++) {
        int id = KEYS[k].id;
        if (strlen(KEYS[k].key) != len || strncmp(KEYS[k].key, key, len) != 0) continue;
        if ((dot != NULL) != (id == NVLINK || id == P2P))
            return id == NVLINK ? "expected nvlink.L" : id == P2P ? "expected p2p.J" : "unknown key";
        if (id > NFIELDS && id < NAME && gpu != ALL) return "a whole-host key cannot be given per GPU";
        int first = gpu == ALL ? 0 : gpu, last = gpu == ALL ? MAX_GPUS - 1 : gpu;
        char *end;
        unsigned long long n = strtoull(value, &end, 0);
        int numeric = *value != '\0' && *end == '\0';
        if (id < NFIELDS || id == GPUS || id == CUDA_VERSION) {
            if (!numeric) return "not a number";
            if (id == GPUS && n > MAX_GPUS) return "too many GPUs";
            if (id == GPUS) gpu_count = (int)n;
            else if (id == CUDA_VERSION) cuda_version = n;
            else for (int i = first; i <= last; i++) gpus[i].v[id] = n;
        } else if (id == DRIVER_VERSION || id == NVML_VERSION) {
            snprintf(id == DRIVER_VERSION ? driver_version : nvml_version, 80, "%s", value);
        } else if (id == NAME) {
            for (int i = first; i <= last; i++) snprintf(gpus[i].name, sizeof gpus[i].name, "%s", value);
        } else if (id == INIT || id == DEFAULT) {
            int code = code_of(value);
            if (code < OK) return "not a return code (HANG is only for fail)";
            if (id == INIT) init_code = code;
            else for (int i = first; i <= last; i++) gpus[i].default_code = code;
        } else if (id == FAIL || id == HANG_KEY) {
            char *symbol = strtok(value, " \t"), *code = strtok(NULL, " \t");
            int c = id == HANG_KEY ? HANG : code ? code_of(code) : -2;
            if (!symbol || strncmp(symbol, "nvml", 4) != 0) return "expected an NVML symbol name";
            if (c == -2 || (id == HANG_KEY && code)) return "expected SYMBOL CODE (or hang SYMBOL)";
            if (nfails == MAX_FAILS) return "too many fail lines";
            fails[nfails].gpu = gpu;
            fails[nfails].code = c;
            snprintf(fails[nfails++].symbol, sizeof fails[0].symbol, "%s", symbol);
        } else if (id == P2P) {
            return apply_p2p(first, last, sub, value);
        } else { /* NVLINK */
            long link = strtol(sub, &end, 10);
            if (end != sub && strcmp(end, ".remote") == 0 && link >= 0 && link <= 31)
                return apply_remote(first, last, link, value);
            if (*sub == '\0' || *end != '\0' || link < 0 || link > 31) return "expected nvlink.L";
            int down = strcmp(value, "down") == 0;
            if (!down && strcmp(value, "up") != 0) return "expected up or down";
            for (int i = first; i <= last; i++)
                gpus[i].nvlink_down = down ? gpus[i].nvlink_down | (1u << link)
                                           : gpus[i].nvlink_down & ~(1u << link);
        }
        return NULL;
    }
    return apply_fabric(gpu, key, value); /* which hands on to apply_part_d what is not its own */
}

/* Reads FAKE_NVML_SCENARIO. Returns 0, or -1 after saying on stderr what is wrong. */
static int load_scenario(void) {
    const char *path = getenv("FAKE_NVML_SCENARIO");
    char line[512];
    int lineno = 0;
    reset();
    if (!path || !*path) return 0;
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "fake_nvml: cannot open scenario %s\n", path);
        return -1;
    }
    while (fgets(line, sizeof line, f)) {
        lineno++;
        char *hash = strchr(line, '#'), *key = line, *value, *end;
        if (hash) *hash = '\0';
        while (*key == ' ' || *key == '\t') key++;
        end = key + strlen(key);
        while (end > key && (end[-1] == '\n' || end[-1] == '\r' || end[-1] == ' ' || end[-1] == '\t'))
            *--end = '\0';
        if (!*key) continue;
        value = key + strcspn(key, " \t");
        if (*value) *value++ = '\0';
        while (*value == ' ' || *value == '\t') value++;
        const char *problem = NULL;
        int gpu = ALL;
        if (strncmp(key, "gpu.", 4) == 0) { /* gpu.N.key */
            gpu = (int)strtol(key + 4, &end, 10);
            if (end == key + 4 || *end != '.' || gpu < 0 || gpu >= MAX_GPUS) problem = "bad GPU number";
            else key = end + 1;
        }
        if (!problem) problem = apply(gpu, key, value);
        if (problem) {
            fprintf(stderr, "fake_nvml: %s:%d: %s: %s\n", path, lineno, key, problem);
            fclose(f);
            return -1;
        }
    }
    fclose(f);
    return 0;
}

/* The scripted result of `symbol` on GPU `gpu` (ALL for system calls): a GPU's own line wins. */
static int scripted(const char *symbol, int gpu) {
    int code = OK;
    for (int i = 0; i < nfails; i++) {
        if (strcmp(fails[i].symbol, symbol) != 0) continue;
        if (fails[i].gpu == gpu) return fails[i].code;
        if (fails[i].gpu == ALL) code = fails[i].code;
    }
    return code;
}

static void hang_forever(void) {
    for (;;) sleep(3600); /* sleep returns early on a signal; keep sleeping */
}

/* Every call starts here: NVML initialised? handle valid? GPU lost? scripted failure or hang? */
static nvmlReturn_t enter(const char *symbol, nvmlDevice_t d, int optional) {
    if (!initialised) return UNINITIALIZED;
    if (d && (d < gpus || d >= gpus + gpu_count)) return INVALID_ARGUMENT;
    int code = scripted(symbol, d ? d->index : ALL);
    if (code == HANG) hang_forever();
    if (d && __atomic_fetch_add(&d->calls, 1, __ATOMIC_RELAXED) >= d->v[LOST_AFTER]) return GPU_IS_LOST;
    if (code != OK) return code;
    return d && optional ? d->default_code : OK;
}

static nvmlReturn_t init(const char *symbol) {
    if (load_scenario() != 0) return UNKNOWN;
    int code = scripted(symbol, ALL);
    if (code == HANG) hang_forever();
    if (code == OK) code = init_code;
    initialised = code == OK;
    return code;
}

nvmlReturn_t nvmlInit(void) { return init("nvmlInit"); }
nvmlReturn_t nvmlInit_v2(void) { return init("nvmlInit_v2"); }
nvmlReturn_t nvmlInitWithFlags(unsigned int flags) { (void)flags; return init("nvmlInitWithFlags"); }
nvmlReturn_t nvmlShutdown(void) {
    if (!initialised) return UNINITIALIZED;
    initialised = 0;
    return OK;
}

const char *nvmlErrorString(nvmlReturn_t result) {
    for (size_t i = 0; i < sizeof CODES / sizeof CODES[0]; i++)
        if (CODES[i].code == result) return CODES[i].message;
    return "Unknown Error";
}

static nvmlReturn_t copy_text(const char *text, char *out, unsigned int length) {
    if (!out) return INVALID_ARGUMENT;
    if (strlen(text) + 1 > length) return INSUFFICIENT_SIZE;
    strcpy(out, text);
    return OK;
}

/* --- system ------------------------------------------------------------------------------------- */
nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length) {
    nvmlReturn_t r = enter("nvmlSystemGetDriverVersion", NULL, 0);
    return r ? r : copy_text(driver_version, version, length);
}
nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length) {
    nvmlReturn_t r = enter("nvmlSystemGetNVMLVersion", NULL, 0);
    return r ? r : copy_text(nvml_version, version, length);
}
#define SYSTEM_INT(symbol, type, expr)                                                 \
    nvmlReturn_t symbol(type *out) {                                                   \
        nvmlReturn_t r = enter(#symbol, NULL, 0);                                      \
        if (r == OK && !out) r = INVALID_ARGUMENT;                                     \
        if (r == OK) *out = (type)(expr);                                              \
        return r;                                                                      \
    }
SYSTEM_INT(nvmlDeviceGetCount, unsigned int, gpu_count)
SYSTEM_INT(nvmlDeviceGetCount_v2, unsigned int, gpu_count)
SYSTEM_INT(nvmlSystemGetCudaDriverVersion, int, cuda_version)
#ifndef FAKE_NVML_OLD_DRIVER
SYSTEM_INT(nvmlSystemGetCudaDriverVersion_v2, int, cuda_version)
#endif

static nvmlReturn_t handle_by_index(const char *symbol, unsigned int index, nvmlDevice_t *device) {
    nvmlReturn_t r = enter(symbol, NULL, 0);
    if (r) return r;
    if (index >= (unsigned int)gpu_count || !device) return INVALID_ARGUMENT;
    if (gpus[index].calls >= gpus[index].v[LOST_AFTER]) return GPU_IS_LOST;
    *device = &gpus[index];
    return OK;
}
nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int i, nvmlDevice_t *d) {
    return handle_by_index("nvmlDeviceGetHandleByIndex", i, d);
}
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *d) {
    return handle_by_index("nvmlDeviceGetHandleByIndex_v2", i, d);
}

/* --- device queries ----------------------------------------------------------------------------
 * Each starts with ENTER(optional): an optional query fails with the GPU's `default` code. Name, UUID
 * and PCI info are not optional: NVML answers them for every GPU it can see at all. */
#define ENTER(optional)                              \
    nvmlReturn_t r = enter(__func__, d, optional);   \
    if (r) return r;
#define OUT(p) \
    if (!(p)) return INVALID_ARGUMENT;
#define UINT_GETTER(symbol, field)                             \
    nvmlReturn_t symbol(nvmlDevice_t d, unsigned int *out) {   \
        ENTER(1) OUT(out) *out = (unsigned int)d->v[field];    \
        return OK;                                             \
    }

/* Layouts as nvml.h declares them (pynvml: nvmlPciInfo_t, c_nvmlMemory_t, c_nvmlUtilization_t). */
typedef struct {
    char busIdLegacy[16];
    unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
} nvmlPciInfo_t;
typedef struct { unsigned long long total, free, used; } nvmlMemory_t;
typedef struct { unsigned int gpu, memory; } nvmlUtilization_t;

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *name, unsigned int length) {
    ENTER(0) return copy_text(d->name, name, length);
}
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *uuid, unsigned int length) {
    char text[96];
    ENTER(0) snprintf(text, sizeof text, "GPU-fa4e0000-0000-4000-8000-%012d", d->index);
    return copy_text(text, uuid, length);
}
static nvmlReturn_t pci_info(nvmlDevice_t d, nvmlPciInfo_t *pci) {
    OUT(pci) memset(pci, 0, sizeof *pci);
    pci->bus = (unsigned int)d->v[PCI_BUS];
    pci->pciDeviceId = 0x233010de; /* H100 SXM5 80GB, vendor 10de */
    pci->pciSubSystemId = 0x16c110de;
    snprintf(pci->busId, sizeof pci->busId, "00000000:%02X:00.0", pci->bus);
    snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "0000:%02X:00.0", pci->bus);
    return OK;
}
nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t d, nvmlPciInfo_t *p) { ENTER(0) return pci_info(d, p); }
nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t d, nvmlPciInfo_t *p) { ENTER(0) return pci_info(d, p); }
nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t *p) { ENTER(0) return pci_info(d, p); }

nvmlReturn_t nvmlDeviceGetBrand(nvmlDevice_t d, int *brand) {
    ENTER(1) OUT(brand) *brand = (int)d->v[BRAND];
    return OK;
}
UINT_GETTER(nvmlDeviceGetArchitecture, ARCH)
nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t d, int *major, int *minor) {
    ENTER(1) OUT(major && minor) *major = (int)d->v[CC_MAJOR];
    *minor = (int)d->v[CC_MINOR];
    return OK;
}
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m) {
    ENTER(1) OUT(m) m->total = d->v[MEM_TOTAL];
    m->used = d->v[MEM_USED];
    m->free = m->total - m->used;
    return OK;
}
UINT_GETTER(nvmlDeviceGetCurrPcieLinkGeneration, PCIE_GEN)
UINT_GETTER(nvmlDeviceGetMaxPcieLinkGeneration, PCIE_GEN_MAX)
#ifndef FAKE_NVML_OLD_DRIVER
UINT_GETTER(nvmlDeviceGetGpuMaxPcieLinkGeneration, PCIE_GEN_GPU_MAX)
#endif
UINT_GETTER(nvmlDeviceGetCurrPcieLinkWidth, PCIE_WIDTH)
UINT_GETTER(nvmlDeviceGetMaxPcieLinkWidth, PCIE_WIDTH_MAX)
UINT_GETTER(nvmlDeviceGetPcieReplayCounter, PCIE_REPLAY)
UINT_GETTER(nvmlDeviceGetPowerUsage, POWER)
UINT_GETTER(nvmlDeviceGetPowerManagementLimit, POWER_LIMIT)
UINT_GETTER(nvmlDeviceGetEnforcedPowerLimit, POWER_LIMIT) /* the same limit here: no other cap applies */
UINT_GETTER(nvmlDeviceGetPowerManagementDefaultLimit, POWER_DEFAULT_LIMIT)
UINT_GETTER(nvmlDeviceGetPersistenceMode, PERSISTENCE)
UINT_GETTER(nvmlDeviceGetComputeMode, COMPUTE_MODE)
UINT_GETTER(nvmlDeviceGetVirtualizationMode, VIRTUALIZATION)

/* nvmlClockType_t: GRAPHICS 0 (the same clock as SM on these GPUs), SM 1, MEM 2, VIDEO 3. */
static nvmlReturn_t clock_of(nvmlDevice_t d, int type, int current, unsigned int *mhz) {
    OUT(mhz) if (type == 0 || type == 1) *mhz = (unsigned int)d->v[current ? CLOCK_SM : CLOCK_SM_MAX];
    else if (type == 2) *mhz = (unsigned int)d->v[current ? CLOCK_MEM : CLOCK_MEM_MAX];
    else if (type == 3) *mhz = current ? 1155 : 1755;
    else return INVALID_ARGUMENT;
    return OK;
}
nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t d, int type, unsigned int *mhz) {
    ENTER(1) return clock_of(d, type, 1, mhz);
}
nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t d, int type, unsigned int *mhz) {
    ENTER(1) return clock_of(d, type, 0, mhz);
}
#ifndef FAKE_NVML_OLD_DRIVER /* added in r535; older drivers only have the Throttle name */
nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t d, unsigned long long *reasons) {
    ENTER(1) OUT(reasons) *reasons = d->v[REASONS];
    return OK;
}
#endif
nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t d, unsigned long long *reasons) {
    ENTER(1) OUT(reasons) *reasons = d->v[REASONS];
    return OK;
}
nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t *u) {
    ENTER(1) OUT(u) u->gpu = (unsigned int)d->v[UTIL_GPU];
    u->memory = (unsigned int)d->v[UTIL_MEM];
    return OK;
}
nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d, int sensor, unsigned int *temp) {
    ENTER(1) OUT(temp && sensor == 0) *temp = (unsigned int)d->v[TEMP]; /* NVML_TEMPERATURE_GPU only */
    return OK;
}
nvmlReturn_t nvmlDeviceGetTemperatureThreshold(nvmlDevice_t d, int threshold, unsigned int *temp) {
    ENTER(1) OUT(temp) if (threshold > 1) return NOT_SUPPORTED; /* only SHUTDOWN 0, SLOWDOWN 1 */
    *temp = (unsigned int)d->v[threshold == 0 ? TEMP_SHUTDOWN : TEMP_SLOWDOWN];
    return OK;
}
nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t d, unsigned int *current, unsigned int *pending) {
    ENTER(1) OUT(current && pending) *current = (unsigned int)d->v[MIG];
    *pending = (unsigned int)d->v[MIG_PENDING];
    return OK;
}
nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t d, int *current, int *pending) {
    ENTER(1) OUT(current && pending) *current = (int)d->v[ECC];
    *pending = (int)d->v[ECC_PENDING];
    return OK;
}
/* errorType: CORRECTED 0, UNCORRECTED 1; counterType: VOLATILE 0, AGGREGATE 1. */
nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t d, int type, int counter, unsigned long long *n) {
    static const enum field WHICH[2][2] = {{ECC_CORRECTED_VOLATILE, ECC_CORRECTED_AGGREGATE},
                                           {ECC_UNCORRECTED_VOLATILE, ECC_UNCORRECTED_AGGREGATE}};
    ENTER(1) OUT(n && type >= 0 && type <= 1 && counter >= 0 && counter <= 1)
    if (!d->v[ECC]) return NOT_SUPPORTED; /* no counters while ECC is off */
    *n = d->v[WHICH[type][counter]];
    return OK;
}
nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t d, unsigned int *correctable, unsigned int *uncorrectable,
                                       unsigned int *pending, unsigned int *failed) {
    ENTER(1) OUT(correctable && uncorrectable && pending && failed)
    *correctable = (unsigned int)d->v[ROWS_CORRECTABLE];
    *uncorrectable = (unsigned int)d->v[ROWS_UNCORRECTABLE];
    *pending = (unsigned int)d->v[ROWS_PENDING];
    *failed = (unsigned int)d->v[ROWS_FAILED];
    return OK;
}
/* A GPU without NVLink answers NOT_SUPPORTED; past its last link, INVALID_ARGUMENT. */
static nvmlReturn_t link_ok(nvmlDevice_t d, unsigned int link) {
    return d->v[NVLINKS] == 0 ? NOT_SUPPORTED : link >= d->v[NVLINKS] ? INVALID_ARGUMENT : OK;
}
nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t d, unsigned int link, int *active) {
    ENTER(1) OUT(active) if ((r = link_ok(d, link))) return r;
    *active = !(link < 32 && (d->nvlink_down >> link) & 1); /* NVML_FEATURE_ENABLED is 1 */
    return OK;
}
nvmlReturn_t nvmlDeviceGetNvLinkVersion(nvmlDevice_t d, unsigned int link, unsigned int *version) {
    ENTER(1) OUT(version) if ((r = link_ok(d, link))) return r;
    *version = (unsigned int)d->v[NVLINK_VERSION];
    return OK;
}

/* --- peers: P2P status and PCIe topology between two GPUs ----------------------------------------------
 * nvmlDeviceGetP2PStatus and nvmlDeviceGetTopologyCommonAncestor take a second device. Both are old NVML
 * calls (drivers long before r535 have them), so the FAKE_NVML_OLD_DRIVER build has them too. Each goes
 * through ENTER on the asking GPU, so that GPU's fail, hang, default and lost_after apply; then a peer that
 * is not another GPU's handle is INVALID_ARGUMENT (so is the asking GPU itself, the fake's choice, as
 * gpudoctor never asks), and a peer that is lost is GPU_IS_LOST, as the driver answers about a GPU that
 * fell off the bus. A call about a peer counts towards the asking GPU's lost_after only, so when a GPU is
 * lost depends on the calls made on it alone.
 *
 * Defaults, a healthy HGX H100 board: every pair P2P OK for every capability (the NVSwitches join all
 * eight GPUs); GPUs 0-3 on CPU socket 0 and 4-7 on socket 1, as the DGX H100 User Guide's network-module
 * table pairs them with CPU 0 and CPU 1 and `nvidia-smi topo -m` gives them NUMA nodes 0 and 1. A pair on
 * different sockets is NVML_TOPOLOGY_SYSTEM. For a pair on one socket nvidia-smi shows NV18, not the PCIe
 * level, and no source at hand gives it: the fake answers the neutral NVML_TOPOLOGY_NODE (one NUMA node,
 * possibly several host bridges), which is what each GPU behind a PCIe switch of its own on a root port
 * of the same CPU would give.
 * Two GPUs on one socket behind the same PCIe switch (pcie_switch N, the same N > 0) are
 * NVML_TOPOLOGY_SINGLE, which `nvidia-smi topo -m` shows as PIX ("Connection traversing at most a single PCIe
 * bridge"), as on PCIe servers whose GPUs sit two to a switch (scenarios/pcie-l20-8.scn).
 * Per-GPU scenario keys (each also as gpu.N.key):
 *   p2p.J STATUS    nvmlDeviceGetP2PStatus of this GPU reading from GPU J (NVML_P2P_CAPS_INDEX_READ): an
 *                   nvmlGpuP2PStatus_t name without NVML_P2P_STATUS_ (OK, CHIPSET_NOT_SUPPORTED,
 *                   GPU_NOT_SUPPORTED, IOH_TOPOLOGY_NOT_SUPPORTED, DISABLED_BY_REGKEY, NOT_SUPPORTED,
 *                   UNKNOWN) or a number. WRITE, NVLINK, ATOMICS and PROP stay OK.
 *   socket N        the CPU socket the GPU hangs off (the KEYS table); pairs on different sockets are
 *                   NVML_TOPOLOGY_SYSTEM, pairs on one NVML_TOPOLOGY_NODE
 *   pcie_switch N   the PCIe switch the GPU sits behind (0, the default: a switch of its own); pairs on one
 *                   socket with the same N > 0 are NVML_TOPOLOGY_SINGLE */
/* nvmlGpuP2PStatus_t, with nvml.h's own misspelling of CHIPSET_NOT_SUPPORTED as well. */
static const struct { const char *name; unsigned int status; } P2P_STATUSES[] = {
    {"OK", 0}, {"CHIPSET_NOT_SUPPORED", 1}, {"CHIPSET_NOT_SUPPORTED", 1}, {"GPU_NOT_SUPPORTED", 2},
    {"IOH_TOPOLOGY_NOT_SUPPORTED", 3}, {"DISABLED_BY_REGKEY", 4}, {"NOT_SUPPORTED", 5}, {"UNKNOWN", 6},
};
/* nvmlGpuP2PCapsIndex_t: READ 0, WRITE 1, NVLINK 2, ATOMICS 3, PROP 4 (also called PCI). */
#define P2P_CAPS_READ 0
#define P2P_CAPS_LAST 4
/* nvmlGpuTopologyLevel_t: INTERNAL 0, SINGLE 10, MULTIPLE 20, HOSTBRIDGE 30, NODE 40, SYSTEM 50. */
#define TOPOLOGY_SINGLE 10
#define TOPOLOGY_NODE 40
#define TOPOLOGY_SYSTEM 50

static const char *apply_p2p(int first, int last, const char *peer, const char *value) {
    char *end;
    long j = strtol(peer, &end, 10);
    if (*peer == '\0' || *end != '\0' || j < 0 || j >= MAX_GPUS) return "expected p2p.J";
    unsigned long long status = ~0ULL;
    for (size_t i = 0; i < sizeof P2P_STATUSES / sizeof P2P_STATUSES[0]; i++)
        if (strcmp(P2P_STATUSES[i].name, value) == 0) status = P2P_STATUSES[i].status;
    if (status == ~0ULL && *value >= '0' && *value <= '9') {
        status = strtoull(value, &end, 0);
        if (*end != '\0' || status > 0xFFFFFFFFULL) status = ~0ULL;
    }
    if (status == ~0ULL) return "expected a P2P status (NOT_SUPPORTED, ...) or a number";
    for (int i = first; i <= last; i++) gpus[i].p2p_read[j] = (unsigned int)status;
    return NULL;
}

/* The second device of a call about a peer: another GPU's handle, and that GPU not lost. */
static nvmlReturn_t peer_of(nvmlDevice_t d, nvmlDevice_t peer) {
    if (peer < gpus || peer >= gpus + gpu_count || peer == d) return INVALID_ARGUMENT;
    return __atomic_load_n(&peer->calls, __ATOMIC_RELAXED) >= peer->v[LOST_AFTER] ? GPU_IS_LOST : OK;
}
nvmlReturn_t nvmlDeviceGetP2PStatus(nvmlDevice_t d, nvmlDevice_t peer, int p2pIndex, int *status) {
    ENTER(1) OUT(status && p2pIndex >= 0 && p2pIndex <= P2P_CAPS_LAST) if ((r = peer_of(d, peer))) return r;
    *status = p2pIndex == P2P_CAPS_READ ? (int)d->p2p_read[peer->index] : 0;
    return OK;
}
nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t d, nvmlDevice_t peer, int *level) {
    ENTER(1) OUT(level) if ((r = peer_of(d, peer))) return r;
    if (d->v[SOCKET] != peer->v[SOCKET]) *level = TOPOLOGY_SYSTEM;
    else if (d->v[PCIE_SWITCH] && d->v[PCIE_SWITCH] == peer->v[PCIE_SWITCH]) *level = TOPOLOGY_SINGLE;
    else *level = TOPOLOGY_NODE;
    return OK;
}
/* --- end of peers ------------------------------------------------------------------------------------ */

/* --- NVLink far ends: nvmlDeviceGetNvLinkRemoteDeviceType, nvmlDeviceGetNvLinkRemotePciInfo_v2 -----------
 * What each link reaches, by nvml.h's nvmlIntNvLinkDeviceType_t (pynvml NVML_NVLINK_DEVICE_TYPE_*: GPU 0,
 * IBMNPU 1, SWITCH 2, UNKNOWN 0xFF) and the PCI info (nvmlPciInfo_t) of the device at the far end. pynvml's
 * nvmlDeviceGetNvLinkRemotePciInfo calls the _v2 symbol. Both go through ENTER(1) and answer a link as
 * nvmlDeviceGetNvLinkState does (NOT_SUPPORTED without NVLink, INVALID_ARGUMENT past the last link).
 * Default, an HGX H100 board: every link reaches an NVSwitch, whose bus ids are those an HGX H100 node's NCCL
 * topology dump gives (https://github.com/aliyun/SimAI/issues/128, read 2026-12-05: each GPU's 18 links as
 * `<nvlink target="0000:08:00.0" count="4"/>`, 06 count 5, 07 count 5, 05 count 4, class 0x068000); which
 * link goes to which switch the dump does not say, so links 0-3 reach 08, 4-8 06, 9-13 07 and 14-17 05.
 * Per-GPU scenario key (also as gpu.N.key):
 *   nvlink.L.remote switch    link L reaches an NVSwitch (the default; type SWITCH, its default bus id)
 *   nvlink.L.remote ibmnpu    an IBM NPU (type IBMNPU; no PCI info to give: NOT_SUPPORTED)
 *   nvlink.L.remote BUSID     a GPU, e.g. 0000:2a:00.0 (type GPU; the PCI info of that bus id, with the
 *                             device id of the fake's GPU there, if one is)
 * A driver that cannot name the device type is scripted with "fail nvmlDeviceGetNvLinkRemoteDeviceType
 * NOT_SUPPORTED". No source at hand dates nvmlDeviceGetNvLinkRemoteDeviceType, so the FAKE_NVML_OLD_DRIVER
 * build keeps it. */
#define NVLINK_DEVICE_TYPE_GPU 0
#define NVLINK_DEVICE_TYPE_IBMNPU 1
#define NVLINK_DEVICE_TYPE_SWITCH 2

static unsigned int switch_bus(long link) {
    return link < 4 ? 0x08 : link < 9 ? 0x06 : link < 14 ? 0x07 : 0x05;
}

static void reset_remotes(void) {
    for (int i = 0; i < MAX_GPUS; i++)
        for (long l = 0; l < 32; l++) {
            gpus[i].remote[l].type = NVLINK_DEVICE_TYPE_SWITCH;
            gpus[i].remote[l].domain = gpus[i].remote[l].device = gpus[i].remote[l].function = 0;
            gpus[i].remote[l].bus = switch_bus(l);
        }
}

static const char *apply_remote(int first, int last, long link, const char *value) {
    unsigned int domain = 0, bus = 0, device = 0, function = 0;
    int type;
    char extra;
    if (strcmp(value, "switch") == 0) {
        type = NVLINK_DEVICE_TYPE_SWITCH;
        bus = switch_bus(link);
    } else if (strcmp(value, "ibmnpu") == 0) {
        type = NVLINK_DEVICE_TYPE_IBMNPU;
    } else if (sscanf(value, "%x:%x:%x.%x%c", &domain, &bus, &device, &function, &extra) == 4 &&
               bus <= 0xff && device <= 31 && function <= 7) {
        type = NVLINK_DEVICE_TYPE_GPU;
    } else {
        return "expected switch, ibmnpu or a bus id DDDD:BB:DD.F";
    }
    for (int i = first; i <= last; i++) {
        gpus[i].remote[link].type = type;
        gpus[i].remote[link].domain = domain;
        gpus[i].remote[link].bus = bus;
        gpus[i].remote[link].device = device;
        gpus[i].remote[link].function = function;
    }
    return NULL;
}

nvmlReturn_t nvmlDeviceGetNvLinkRemoteDeviceType(nvmlDevice_t d, unsigned int link, int *type) {
    ENTER(1) OUT(type) if ((r = link_ok(d, link))) return r;
    if (link >= 32) return INVALID_ARGUMENT; /* the fake keeps 32 far ends */
    *type = d->remote[link].type;
    return OK;
}
nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t d, unsigned int link, nvmlPciInfo_t *pci) {
    ENTER(1) OUT(pci) if ((r = link_ok(d, link))) return r;
    if (link >= 32) return INVALID_ARGUMENT; /* the fake keeps 32 far ends */
    if (d->remote[link].type == NVLINK_DEVICE_TYPE_IBMNPU) return NOT_SUPPORTED;
    memset(pci, 0, sizeof *pci);
    pci->domain = d->remote[link].domain;
    pci->bus = d->remote[link].bus;
    pci->device = d->remote[link].device;
    for (int i = 0; i < gpu_count; i++)
        if (d->remote[link].type == NVLINK_DEVICE_TYPE_GPU && gpus[i].v[PCI_BUS] == pci->bus &&
            !pci->domain) {
            pci->pciDeviceId = 0x233010de; /* as pci_info gives the fake's GPUs */
            pci->pciSubSystemId = 0x16c110de;
        }
    snprintf(pci->busId, sizeof pci->busId, "%08X:%02X:%02X.%X", pci->domain, pci->bus, pci->device,
             d->remote[link].function);
    snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%04X:%02X:%02X.%X", pci->domain & 0xFFFF, pci->bus,
             pci->device, d->remote[link].function);
    return OK;
}
/* --- end of NVLink far ends ------------------------------------------------------------------------- */

/* --- issue 11, part D: processes, MIG devices, counters that predict failure ----------------------------
 * Per-GPU scenario keys (each also as gpu.N.key):
 *   process PID BYTES            a compute process holding BYTES of GPU memory (repeatable, up to 8)
 *   graphics_process PID BYTES   the same in the graphics list
 *   mig_devices N                MIG devices present while MIG is on (nvmlDeviceGetMigDeviceHandleByIndex)
 *   retired_sbe N, retired_dbe N, retired_pending 0|1   dynamic page retirement
 *   inforom_corrupt 0|1          nvmlDeviceValidateInforom answers NVML_ERROR_CORRUPTED_INFOROM (14)
 *   vbios TEXT                   nvmlDeviceGetVbiosVersion (default 96.00.89.00.01)
 *   nvlink_error.L COUNTER N     nvmlDeviceGetNvLinkErrorCounter of link L; COUNTER is REPLAY, RECOVERY,
 *                                CRC_FLIT or CRC_DATA (nvmlNvLinkErrorCounter_t 0-3)
 *   recovery_action N            NVML_FI_DEV_GET_GPU_RECOVERY_ACTION (nvmlDeviceGpuRecoveryAction_t: 0 none,
 *                                1 GPU reset, 2 node reboot, 3 drain P2P, 4 drain and reset, ...)
 *   recovery_field CODE          that field's own return code (NOT_SUPPORTED: a driver before the field) */
#define MAX_PROCS 8
#define CORRUPTED_INFOROM 14
struct fake_process { unsigned int pid; unsigned long long used; };
static struct part_d {
    struct fake_process procs[2][MAX_PROCS]; /* [0] compute, [1] graphics */
    int nprocs[2];
    unsigned int mig_devices, retired[2], retired_pending, inforom_corrupt, recovery_action;
    int recovery_field;
    char vbios[32];
    unsigned long long nvlink_errors[32][4];
} part_d[MAX_GPUS];
static const char *NVLINK_COUNTER_NAMES[4] = {"REPLAY", "RECOVERY", "CRC_FLIT", "CRC_DATA"};

static void reset_part_d(void) {
    memset(part_d, 0, sizeof part_d);
    for (int i = 0; i < MAX_GPUS; i++) strcpy(part_d[i].vbios, "96.00.89.00.01");
}

static const char *apply_part_d(int gpu, const char *key, char *value) {
    int first = gpu == ALL ? 0 : gpu, last = gpu == ALL ? MAX_GPUS - 1 : gpu;
    char *end;
    if (strcmp(key, "process") == 0 || strcmp(key, "graphics_process") == 0) {
        int list = key[0] == 'g';
        unsigned long pid = strtoul(value, &end, 0);
        unsigned long long used = strtoull(end, &end, 0);
        if (pid == 0 || *end != '\0') return "expected PID BYTES";
        for (int i = first; i <= last; i++) {
            if (part_d[i].nprocs[list] == MAX_PROCS) return "too many processes";
            part_d[i].procs[list][part_d[i].nprocs[list]++] = (struct fake_process){(unsigned int)pid, used};
        }
        return NULL;
    }
    if (strcmp(key, "recovery_field") == 0) {
        int code = code_of(value);
        if (code < 0) return "unknown return code"; /* HANG (-1) too: a field cannot hang alone */
        for (int i = first; i <= last; i++) part_d[i].recovery_field = code;
        return NULL;
    }
    if (strcmp(key, "vbios") == 0) {
        for (int i = first; i <= last; i++) snprintf(part_d[i].vbios, sizeof part_d[i].vbios, "%s", value);
        return NULL;
    }
    if (strncmp(key, "nvlink_error.", 13) == 0) {
        long link = strtol(key + 13, &end, 10);
        char *counter = strtok(value, " \t"), *count = strtok(NULL, " \t");
        int which = -1;
        if (key[13] == '\0' || *end != '\0' || link < 0 || link > 31) return "expected nvlink_error.L";
        for (int c = 0; counter && c < 4; c++)
            if (strcmp(counter, NVLINK_COUNTER_NAMES[c]) == 0) which = c;
        if (which < 0 || !count) return "expected COUNTER N";
        unsigned long long n = strtoull(count, &end, 0);
        if (*end != '\0') return "not a number";
        for (int i = first; i <= last; i++) part_d[i].nvlink_errors[link][which] = n;
        return NULL;
    }
    static const char *NUMBERS[] = {"mig_devices", "retired_sbe", "retired_dbe", "retired_pending",
                                    "inforom_corrupt", "recovery_action"};
    for (int k = 0; k < 6; k++) {
        if (strcmp(key, NUMBERS[k]) != 0) continue;
        unsigned long n = strtoul(value, &end, 0);
        if (*value == '\0' || *end != '\0') return "not a number";
        for (int i = first; i <= last; i++) {
            unsigned int *field[] = {&part_d[i].mig_devices, &part_d[i].retired[0], &part_d[i].retired[1],
                                     &part_d[i].retired_pending, &part_d[i].inforom_corrupt,
                                     &part_d[i].recovery_action};
            *field[k] = (unsigned int)n;
        }
        return NULL;
    }
    return "unknown key";
}

/* nvmlProcessInfo_t as pynvml's c_nvmlProcessInfo_v3_t lays it out. NVML's two-call protocol: too small a
 * buffer answers INSUFFICIENT_SIZE with the count needed; no process at all answers SUCCESS with 0. */
typedef struct { unsigned int pid; unsigned long long usedGpuMemory; unsigned int gi, ci; } nvmlProcessInfo_t;
static nvmlReturn_t running(nvmlDevice_t d, int list, unsigned int *count, nvmlProcessInfo_t *infos) {
    OUT(count) unsigned int n = (unsigned int)part_d[d->index].nprocs[list];
    if (*count < n || (n && !infos)) {
        *count = n;
        return INSUFFICIENT_SIZE;
    }
    for (unsigned int i = 0; i < n; i++) {
        struct fake_process p = part_d[d->index].procs[list][i];
        infos[i] = (nvmlProcessInfo_t){p.pid, p.used, 0xFFFFFFFF, 0xFFFFFFFF};
    }
    *count = n;
    return OK;
}
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned int *n, nvmlProcessInfo_t *p) {
    ENTER(1) return running(d, 0, n, p);
}
nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t d, unsigned int *n, nvmlProcessInfo_t *p) {
    ENTER(1) return running(d, 1, n, p);
}
nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t d, unsigned int *count) {
    ENTER(1) OUT(count) *count = d->v[MIG] ? 7 : 0; /* seven 1g slices on an H100 */
    return OK;
}
nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t d, unsigned int index, nvmlDevice_t *mig) {
    ENTER(1) OUT(mig) if (!d->v[MIG]) return INVALID_ARGUMENT;
    if (index >= part_d[d->index].mig_devices) return NOT_FOUND; /* no MIG device at that index */
    *mig = d;
    return OK;
}
/* cause: NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS 0, DOUBLE_BIT_ECC_ERROR 1. */
nvmlReturn_t nvmlDeviceGetRetiredPages(nvmlDevice_t d, int cause, unsigned int *count,
                                       unsigned long long *addresses) {
    ENTER(1) OUT(count && cause >= 0 && cause <= 1) unsigned int n = part_d[d->index].retired[cause];
    if (*count < n || (n && !addresses)) {
        *count = n;
        return INSUFFICIENT_SIZE;
    }
    for (unsigned int i = 0; i < n; i++) addresses[i] = 0x1000ULL * (i + 1) + (unsigned long long)cause;
    *count = n;
    return OK;
}
nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t d, int *pending) {
    ENTER(1) OUT(pending) *pending = (int)part_d[d->index].retired_pending;
    return OK;
}
nvmlReturn_t nvmlDeviceValidateInforom(nvmlDevice_t d) {
    ENTER(1) return part_d[d->index].inforom_corrupt ? CORRUPTED_INFOROM : OK;
}
nvmlReturn_t nvmlDeviceGetVbiosVersion(nvmlDevice_t d, char *version, unsigned int length) {
    ENTER(1) return copy_text(part_d[d->index].vbios, version, length);
}
/* nvmlFieldValue_t as pynvml's c_nvmlFieldValue_t lays it out; only NVML_FI_DEV_GET_GPU_RECOVERY_ACTION (230)
 * is known here: any other field answers NOT_SUPPORTED in its own nvmlReturn, as a driver without it does. */
typedef struct {
    unsigned int fieldId, scopeId;
    long long timestamp, latencyUsec;
    int valueType; /* nvmlValueType_t: NVML_VALUE_TYPE_UNSIGNED_INT is 1 */
    nvmlReturn_t nvmlReturn;
    union { double d; unsigned int ui; unsigned long ul; unsigned long long ull; long long sll; int si;
            unsigned short us; } value;
} nvmlFieldValue_t;
nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t d, int count, nvmlFieldValue_t *values) {
    ENTER(1) OUT(values && count > 0)
    for (int i = 0; i < count; i++) {
        nvmlFieldValue_t *v = &values[i];
        v->timestamp = 1700000000000000LL;
        v->latencyUsec = 0;
        v->valueType = 1;
        v->value.ull = 0;
        if (v->fieldId == 230 && part_d[d->index].recovery_field == OK) {
            v->nvmlReturn = OK;
            v->value.ui = part_d[d->index].recovery_action;
        } else {
            v->nvmlReturn = v->fieldId == 230 ? part_d[d->index].recovery_field : NOT_SUPPORTED;
        }
    }
    return OK;
}
nvmlReturn_t nvmlDeviceGetNvLinkErrorCounter(nvmlDevice_t d, unsigned int link, int counter,
                                             unsigned long long *value) {
    ENTER(1) OUT(value) if ((r = link_ok(d, link))) return r;
    if (counter < 0 || counter > 3) return INVALID_ARGUMENT;
    *value = part_d[d->index].nvlink_errors[link][counter];
    return OK;
}
/* --- end of part D ---------------------------------------------------------------------------------- */

/* --- issue 11, part 3: the NVLink fabric (nvmlDeviceGetGpuFabricInfo, nvmlDeviceGetGpuFabricInfoV) ---------
 * The default host is an HGX H100 board, whose NVSwitches Fabric Manager has set up: every GPU's fabric state
 * is COMPLETED with status SUCCESS. Per-GPU scenario keys (each also as gpu.N.key):
 *   fabric_state N          nvmlGpuFabricState_t: 0 NOT_SUPPORTED, 1 NOT_STARTED, 2 IN_PROGRESS, 3 COMPLETED
 *   fabric_status CODE      the nvmlReturn_t put in `status`: a name from CODES, or a number (default SUCCESS)
 *   fabric_clique N         cliqueId (default 0)
 *   fabric_cluster N        clusterUuid: 0 (default) sixteen zero bytes, else the bytes N, N+1, ... N+15
 *   fabric_health MASK      healthMask of the versioned structures (default 0x1AA: DEGRADED_BW FALSE,
 *                           ROUTE_RECOVERY FALSE, ROUTE_UNHEALTHY FALSE, ACCESS_TIMEOUT_RECOVERY FALSE,
 *                           INCORRECT_CONFIGURATION NONE; pynvml's NVML_GPU_FABRIC_HEALTH_MASK_* fields)
 *   fabric_summary N        healthSummary of the v3 structure (default 1 HEALTHY)
 *   fabric_info_version N   the newest nvmlGpuFabricInfo_vN nvmlDeviceGetGpuFabricInfoV accepts (2 or 3,
 *                           default 3); any other version word answers ARGUMENT_VERSION_MISMATCH (25)
 *   fabric_padding N        the byte written into the three padding bytes after the one-byte `state`
 *                           (default 0), as a driver that copies out a structure it did not clear would
 * A GPU without the calls at all is scripted with "fail nvmlDeviceGetGpuFabricInfoV FUNCTION_NOT_FOUND"
 * (pynvml raises NVMLError_FunctionNotFound for that code as for a missing symbol); the -DFAKE_NVML_OLD_DRIVER
 * build lacks both symbols. */
#define ARGUMENT_VERSION_MISMATCH 25
#define FABRIC_INFO_V2 0x02000024u /* nvml.h NVML_STRUCT_VERSION(GpuFabricInfo, 2): sizeof | 2 << 24 */
#define FABRIC_INFO_V3 0x03000028u
static struct fabric {
    unsigned int state, clique, health, summary, version;
    int status;
    unsigned char cluster, padding;
} fabric[MAX_GPUS];

static void reset_fabric(void) {
    for (int i = 0; i < MAX_GPUS; i++) fabric[i] = (struct fabric){3, 0, 0x1AA, 1, 3, OK, 0, 0};
}

static const char *apply_fabric(int gpu, const char *key, char *value) {
    static const char *NAMES[] = {"fabric_state", "fabric_status", "fabric_clique", "fabric_cluster",
                                  "fabric_health", "fabric_summary", "fabric_info_version", "fabric_padding"};
    int k = 0;
    while (k < 8 && strcmp(key, NAMES[k]) != 0) k++;
    if (k == 8) return apply_part_d(gpu, key, value);
    char *end;
    unsigned long long n = strtoull(value, &end, 0);
    int numeric = *value != '\0' && *end == '\0';
    if (k == 1 && !numeric) {
        int code = code_of(value);
        if (code < OK) return "expected a return code";
        n = (unsigned long long)code;
    } else if (!numeric) {
        return "not a number";
    }
    if ((k == 0 && n > 3) || (k == 3 && n > 240) || ((k == 5 || k == 7) && n > 255)) return "out of range";
    if (k == 6 && n != 2 && n != 3) return "expected 2 or 3";
    int first = gpu == ALL ? 0 : gpu, last = gpu == ALL ? MAX_GPUS - 1 : gpu;
    for (int i = first; i <= last; i++) {
        struct fabric *f = &fabric[i];
        if (k == 0) f->state = (unsigned int)n;
        else if (k == 1) f->status = (int)n;
        else if (k == 2) f->clique = (unsigned int)n;
        else if (k == 3) f->cluster = (unsigned char)n;
        else if (k == 4) f->health = (unsigned int)n;
        else if (k == 5) f->summary = (unsigned int)n;
        else if (k == 6) f->version = (unsigned int)n;
        else f->padding = (unsigned char)n;
    }
    return NULL;
}

/* Layouts as nvml.h declares them (nvmlGpuFabricState_t is an unsigned char; the padding after it is named
 * here so that fabric_padding can fill it): 28, 36 and 40 bytes. The v2 structure is the v3 one without its
 * last byte (healthSummary), which is never written for a v2 caller. */
typedef struct {
    unsigned char clusterUuid[16];
    int status; /* nvmlReturn_t */
    unsigned int cliqueId;
    unsigned char state, padding[3];
} nvmlGpuFabricInfo_t;
typedef struct {
    unsigned int version;
    nvmlGpuFabricInfo_t info;
    unsigned int healthMask;
    unsigned char healthSummary;
} nvmlGpuFabricInfo_v3_t;
_Static_assert(sizeof(nvmlGpuFabricInfo_t) == 28 && sizeof(nvmlGpuFabricInfo_v3_t) == 40, "nvml.h sizes");

#ifndef FAKE_NVML_OLD_DRIVER
static void fabric_fill(nvmlDevice_t d, nvmlGpuFabricInfo_t *info) {
    const struct fabric *f = &fabric[d->index];
    for (int b = 0; b < 16; b++) info->clusterUuid[b] = f->cluster ? (unsigned char)(f->cluster + b) : 0;
    info->status = f->status;
    info->cliqueId = f->clique;
    info->state = (unsigned char)f->state;
    memset(info->padding, f->padding, sizeof info->padding);
}
nvmlReturn_t nvmlDeviceGetGpuFabricInfo(nvmlDevice_t d, nvmlGpuFabricInfo_t *info) {
    ENTER(1) OUT(info) fabric_fill(d, info);
    return OK;
}
nvmlReturn_t nvmlDeviceGetGpuFabricInfoV(nvmlDevice_t d, nvmlGpuFabricInfo_v3_t *info) {
    ENTER(1) OUT(info) const struct fabric *f = &fabric[d->index];
    unsigned int v = info->version;
    if (!(v == FABRIC_INFO_V2 || (v == FABRIC_INFO_V3 && f->version >= 3))) return ARGUMENT_VERSION_MISMATCH;
    fabric_fill(d, &info->info);
    info->healthMask = f->health;
    if (v == FABRIC_INFO_V3) info->healthSummary = (unsigned char)f->summary;
    return OK;
}
#endif
/* --- end of part 3 ----------------------------------------------------------------------------------- */
