/* SPDX-License-Identifier: Apache-2.0 */
/* A fake libnvidia-ml: exports the NVML functions nnergy's NVML meter uses, with values read from
 * the script file named by NNERGY_FAKE_NVML_SCRIPT at nvmlInit_v2. One directive a line, '#'
 * starts a comment; GPU is an index:
 *
 *   count N                      GPUs reported (default 1)
 *   name GPU TEXT...             the GPU's name (default "Fake GPU <index>")
 *   energy GPU START_MJ MJ_PER_MS  the energy counter: START_MJ at init, rising MJ_PER_MS
 *                                (default 0 0: a counter that does not move)
 *   update_period_ms [GPU] MS    the counter moves in steps of MS milliseconds (default 0:
 *                                every read); without GPU, for every GPU
 *   power GPU MW                 power usage in milliwatts (default: the counter's rate)
 *   unsupported energy|power GPU that call returns NVML_ERROR_NOT_SUPPORTED
 *   init_error RC                nvmlInit_v2 returns RC
 *
 * Time is counted from nvmlInit_v2. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_GPUS 16

typedef int nvmlReturn_t;
typedef struct fake_gpu* nvmlDevice_t;

struct fake_gpu {
    char name[96];
    double start_mj, mj_per_ms, period_ms, power_mw;
    int power_set, energy_unsupported, power_unsupported;
};

static struct fake_gpu gpus[MAX_GPUS];
static unsigned gpu_count;
static int init_error;
static struct timespec t0;

static double ms_since_init(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - t0.tv_sec) * 1e3 + (double)(now.tv_nsec - t0.tv_nsec) * 1e-6;
}

static int gpu_index(const char* s) {
    int i = atoi(s);
    return i >= 0 && i < MAX_GPUS ? i : 0;
}

static int read_script(void) {
    const char* path = getenv("NNERGY_FAKE_NVML_SCRIPT");
    FILE* f;
    char line[512];
    if (!path || !*path) return 0;
    f = fopen(path, "r");
    if (!f) return -1;
    while (fgets(line, sizeof line, f)) {
        char* words[8];
        int n = 0;
        char* hash = strchr(line, '#');
        char* save = NULL;
        char* w;
        if (hash) *hash = 0;
        for (w = strtok_r(line, " \t\r\n", &save); w && n < 8; w = strtok_r(NULL, " \t\r\n", &save))
            words[n++] = w;
        if (n == 0) continue;
        if (!strcmp(words[0], "count") && n == 2) {
            gpu_count = (unsigned)atoi(words[1]);
            if (gpu_count > MAX_GPUS) gpu_count = MAX_GPUS;
        } else if (!strcmp(words[0], "name") && n >= 3) {
            int i, g = gpu_index(words[1]);
            gpus[g].name[0] = 0;
            for (i = 2; i < n; ++i) {
                if (i > 2)
                    strncat(gpus[g].name, " ", sizeof gpus[g].name - strlen(gpus[g].name) - 1);
                strncat(gpus[g].name, words[i], sizeof gpus[g].name - strlen(gpus[g].name) - 1);
            }
        } else if (!strcmp(words[0], "energy") && n == 4) {
            int g = gpu_index(words[1]);
            gpus[g].start_mj = atof(words[2]);
            gpus[g].mj_per_ms = atof(words[3]);
        } else if (!strcmp(words[0], "update_period_ms") && n == 2) {
            int g;
            for (g = 0; g < MAX_GPUS; ++g) gpus[g].period_ms = atof(words[1]);
        } else if (!strcmp(words[0], "update_period_ms") && n == 3) {
            gpus[gpu_index(words[1])].period_ms = atof(words[2]);
        } else if (!strcmp(words[0], "power") && n == 3) {
            int g = gpu_index(words[1]);
            gpus[g].power_mw = atof(words[2]);
            gpus[g].power_set = 1;
        } else if (!strcmp(words[0], "unsupported") && n == 3) {
            int g = gpu_index(words[2]);
            if (!strcmp(words[1], "energy")) gpus[g].energy_unsupported = 1;
            if (!strcmp(words[1], "power")) gpus[g].power_unsupported = 1;
        } else if (!strcmp(words[0], "init_error") && n == 2) {
            init_error = atoi(words[1]);
        }
    }
    fclose(f);
    return 0;
}

nvmlReturn_t nvmlInit_v2(void) {
    int g;
    memset(gpus, 0, sizeof gpus);
    for (g = 0; g < MAX_GPUS; ++g) snprintf(gpus[g].name, sizeof gpus[g].name, "Fake GPU %d", g);
    gpu_count = 1;
    init_error = 0;
    if (read_script() != 0) return 999; /* NVML_ERROR_UNKNOWN */
    clock_gettime(CLOCK_MONOTONIC, &t0);
    return init_error;
}

nvmlReturn_t nvmlShutdown(void) { return 0; }

const char* nvmlErrorString(nvmlReturn_t rc) {
    switch (rc) {
        case 0:
            return "Success";
        case 1:
            return "Uninitialized";
        case 2:
            return "Invalid Argument";
        case 3:
            return "Not Supported";
        case 4:
            return "Insufficient Permissions";
        case 9:
            return "Driver Not Loaded";
        default:
            return "Unknown Error";
    }
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned* count) {
    if (!count) return 2;
    *count = gpu_count;
    return 0;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned index, nvmlDevice_t* device) {
    if (index >= gpu_count || !device) return 2;
    *device = &gpus[index];
    return 0;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned length) {
    if (!device || !name || length == 0) return 2;
    snprintf(name, length, "%s", device->name);
    return 0;
}

nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device, unsigned long long* mj) {
    double t;
    if (!device || !mj) return 2;
    if (device->energy_unsupported) return 3;
    t = ms_since_init();
    if (device->period_ms > 0) t = (double)(long long)(t / device->period_ms) * device->period_ms;
    *mj = (unsigned long long)(device->start_mj + device->mj_per_ms * t);
    return 0;
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned* mw) {
    if (!device || !mw) return 2;
    if (device->power_unsupported) return 3;
    *mw = (unsigned)(device->power_set ? device->power_mw : device->mj_per_ms * 1000.0);
    return 0;
}
