/*
 * STAND-IN for libnvidia-ml.so.1 (NVIDIA's NVML), for tests and benchmarks only.
 *
 * This is NOT NVIDIA's library. The tests build it with gcc into a temp directory
 * (soname libnvidia-ml.so.1) so the real nvidia-ml-py (pynvml) loads it on a machine
 * without a GPU, either because its directory is on LD_LIBRARY_PATH at process start or
 * because it was loaded first with ctypes.CDLL(path, RTLD_GLOBAL) (docs/facts.md "NVML").
 * Only the C ABI is stood in for; everything above it (pynvml, cudnn_magic) is real.
 *
 * Build:  gcc -shared -fPIC -O2 -Wl,-soname,libnvidia-ml.so.1 -o libnvidia-ml.so.1 fake_nvml.c
 *         add -DSTANDIN_OLD_DRIVER to leave out the newer entry points
 *         (nvmlDeviceGetMemoryInfo_v2, nvmlDeviceGetComputeRunningProcesses_v3,
 *         nvmlSystemGetCudaDriverVersion_v2) like an old driver: pynvml then raises
 *         NVMLError_FunctionNotFound for them; -DSTANDIN_WITHOUT_UUID leaves out
 *         nvmlDeviceGetUUID the same way.
 *
 * Configuration: "key=value" pairs, from the environment variable FAKE_NVML_SPEC
 * (separated by ';' or newlines), then from the file named by FAKE_NVML_CONFIG (one pair
 * per line, '#' comments), which overrides the spec. The file is re-read whenever its
 * modification time or size changes, so a test can change memory, processes, errors or
 * the number of GPUs between two calls. Keys (I = GPU index, K = MIG instance index):
 *
 *   init_rc=N          nvmlInit* returns N (9 = DRIVER_NOT_LOADED, 18 = LIB_RM_VERSION_MISMATCH)
 *   hang_s=N           every call (init and each device query) sleeps N seconds first, as a
 *                      hung driver does; re-read from FAKE_NVML_CONFIG at each call
 *   gpus=N             number of GPUs (default 2, at most 16)
 *   driver=S           driver version string (default 550.54.15)
 *   cuda=N             CUDA driver version, major*1000+minor*10 (default 12040)
 *   name.I=S           name (default "NVIDIA Stand-in GPU I")
 *   uuid.I=S           UUID (default GPU-5a4d1e00-0000-4000-8000-0000000000II)
 *   cc.I=MAJ.MIN       compute capability (default 9.0)
 *   total.I=BYTES      total memory (default 80 GiB)
 *   used.I=BYTES       used memory as memory_v2 reports it (default (I+1) GiB)
 *   reserved.I=BYTES   driver-reserved memory (default 512 MiB); the v1 call reports
 *                      used + reserved as "used", like the real driver
 *   step.I=BYTES       used memory grows by BYTES on every memory query (wraps at total)
 *   procs.I=LIST       compute processes "pid:bytes,pid:bytes"; pid "self" = the calling
 *                      process; bytes "na" = NVML_VALUE_NOT_AVAILABLE (as on WDDM / MIG)
 *   err.I=N            every query on GPU I (not the handle lookup) returns N (15 = GPU_IS_LOST)
 *   mig.I=K            GPU I is MIG-capable with K MIG devices (0 = capable, MIG off);
 *                      without the key nvmlDeviceGetMigMode returns NOT_SUPPORTED
 *   name.I.K / uuid.I.K / total.I.K / used.I.K / procs.I.K   the same for MIG device K
 *                      (defaults: "<name> MIG 1g.10gb", MIG-5a4d1e00-...-00000000IIKK,
 *                      total/K of the parent, (K+1)*256 MiB used, no processes)
 *
 * Signatures follow nvml.h (CUDA 12/13) field for field: built with -DSTANDIN_USE_NVML_H and
 * -I<nvidia-nvml-dev>/include it includes NVIDIA's header, and gcc checks every definition
 * against NVIDIA's declaration (tests/test_nvml_probe.py::test_standin_matches_real_nvml_header).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef STANDIN_USE_NVML_H
/* Type-check build: NVIDIA's own declarations (nvidia-nvml-dev's nvml.h) against these definitions. */
#define NVML_NO_UNVERSIONED_FUNC_DEFS
#include <nvml.h>
struct nvmlDevice_st { int gpu; int mig; };
typedef struct nvmlDevice_st standin_dev;
#else
typedef int nvmlReturn_t;
typedef struct standin_dev { int gpu; int mig; } standin_dev; /* mig = -1: whole GPU */
typedef standin_dev *nvmlDevice_t;

typedef struct { unsigned long long total, free, used; } nvmlMemory_t;
typedef struct { unsigned int version; unsigned long long total, reserved, free, used; } nvmlMemory_v2_t;
typedef struct { unsigned int pid; unsigned long long usedGpuMemory; } nvmlProcessInfo_v1_t;
typedef struct { unsigned int pid; unsigned long long usedGpuMemory; unsigned int gpuInstanceId, computeInstanceId; } nvmlProcessInfo_v2_t;
#endif

enum {
  OK = 0, ERR_UNINITIALIZED = 1, ERR_INVALID_ARGUMENT = 2, ERR_NOT_SUPPORTED = 3,
  ERR_NOT_FOUND = 6, ERR_INSUFFICIENT_SIZE = 7, ERR_GPU_IS_LOST = 15,
  ERR_ARGUMENT_VERSION_MISMATCH = 25
};

#define MAXG 16
#define MAXM 8
#define GiB (1024ULL * 1024ULL * 1024ULL)
#define MiB (1024ULL * 1024ULL)
#define NA_ULL 0xFFFFFFFFFFFFFFFFULL

#define NVML_MEMORY_V2_VERSION ((unsigned int)(sizeof(nvmlMemory_v2_t) | (2u << 24)))

static standin_dev gpu_devs[MAXG];
static standin_dev mig_devs[MAXG][MAXM];
static int inited = 0;
static unsigned long long mem_calls[MAXG][MAXM + 1];

/* ---- configuration ---------------------------------------------------------------- */
#define MAXKV 512
static char kv_key[MAXKV][48];
static char kv_val[MAXKV][512];
static int nkv = 0;
static long long cfg_mtime = -1, cfg_size = -1;
static int spec_loaded = 0;

static void kv_set(const char *k, const char *v) {
  for (int i = 0; i < nkv; i++)
    if (!strcmp(kv_key[i], k)) { snprintf(kv_val[i], sizeof kv_val[i], "%s", v); return; }
  if (nkv >= MAXKV) return;
  snprintf(kv_key[nkv], sizeof kv_key[nkv], "%s", k);
  snprintf(kv_val[nkv], sizeof kv_val[nkv], "%s", v);
  nkv++;
}

static void parse_pairs(const char *text, const char *seps) {
  char *copy = strdup(text), *save = NULL;
  if (!copy) return;
  for (char *tok = strtok_r(copy, seps, &save); tok; tok = strtok_r(NULL, seps, &save)) {
    while (*tok == ' ' || *tok == '\t') tok++;
    if (*tok == '#' || !*tok) continue;
    char *eq = strchr(tok, '=');
    if (!eq) continue;
    *eq = 0;
    char *v = eq + 1, *end = v + strlen(v);
    while (end > v && (end[-1] == ' ' || end[-1] == '\r' || end[-1] == '\t')) *--end = 0;
    char *kend = eq;
    while (kend > tok && (kend[-1] == ' ' || kend[-1] == '\t')) *--kend = 0;
    kv_set(tok, v);
  }
  free(copy);
}

/* Re-read FAKE_NVML_SPEC once and FAKE_NVML_CONFIG whenever the file changed. */
static void load_config(void) {
  const char *path = getenv("FAKE_NVML_CONFIG");
  struct stat st;
  long long mt = -1, sz = -1;
  if (path && stat(path, &st) == 0) {
    mt = (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
    sz = (long long)st.st_size;
  }
  if (spec_loaded && mt == cfg_mtime && sz == cfg_size) return;
  nkv = 0;
  const char *spec = getenv("FAKE_NVML_SPEC");
  if (spec) parse_pairs(spec, ";\n");
  spec_loaded = 1;
  cfg_mtime = mt; cfg_size = sz;
  if (path && mt >= 0) {
    FILE *f = fopen(path, "r");
    if (f) {
      char buf[16384];
      size_t n = fread(buf, 1, sizeof buf - 1, f);
      buf[n] = 0;
      fclose(f);
      parse_pairs(buf, "\n");
    }
  }
}

static const char *cfg(const char *key) {
  for (int i = 0; i < nkv; i++) if (!strcmp(kv_key[i], key)) return kv_val[i];
  return NULL;
}
static const char *cfgf(char *buf, size_t n, const char *fmt, int a, int b) {
  snprintf(buf, n, fmt, a, b);
  return cfg(buf);
}
static unsigned long long cfg_ull(const char *key, unsigned long long dflt) {
  const char *v = cfg(key);
  return v ? strtoull(v, NULL, 10) : dflt;
}
static int ngpus(void) {
  int n = (int)cfg_ull("gpus", 2);
  return n < 0 ? 0 : (n > MAXG ? MAXG : n);
}
static int mig_count(int g) { /* -1: not MIG-capable */
  char k[48];
  const char *v = cfgf(k, sizeof k, "mig.%d", g, 0);
  if (!v) return -1;
  int n = atoi(v);
  return n < 0 ? 0 : (n > MAXM ? MAXM : n);
}

static void maybe_hang(void) {
  unsigned h = (unsigned)cfg_ull("hang_s", 0);
  while (h) { sleep(1); h--; load_config(); if (!cfg_ull("hang_s", 0)) break; }
}

/* Validate a handle and apply err.I; returns OK or an NVML error code. */
static nvmlReturn_t check(nvmlDevice_t d) {
  if (!inited) return ERR_UNINITIALIZED;
  load_config();
  maybe_hang();
  if (!d) return ERR_INVALID_ARGUMENT;
  int in_gpus = d >= &gpu_devs[0] && d < &gpu_devs[MAXG];
  standin_dev *mig0 = &mig_devs[0][0];
  int in_migs = d >= mig0 && d < mig0 + MAXG * MAXM;
  if (!in_gpus && !in_migs) return ERR_INVALID_ARGUMENT;
  if (d->gpu >= ngpus()) return ERR_GPU_IS_LOST; /* the GPU went away after the handle was taken */
  char k[48];
  const char *e = cfgf(k, sizeof k, "err.%d", d->gpu, 0);
  if (e && atoi(e)) return atoi(e);
  if (d->mig >= 0 && d->mig >= mig_count(d->gpu)) return ERR_GPU_IS_LOST;
  return OK;
}

/* ---- init and system ------------------------------------------------------------- */
nvmlReturn_t nvmlInitWithFlags(unsigned int flags) {
  (void)flags;
  load_config();
  maybe_hang();
  int rc = (int)cfg_ull("init_rc", 0);
  if (!rc) inited = 1;
  return rc;
}
nvmlReturn_t nvmlInit_v2(void) { return nvmlInitWithFlags(0); }
nvmlReturn_t nvmlInit(void) { return nvmlInitWithFlags(0); }
nvmlReturn_t nvmlShutdown(void) { if (!inited) return ERR_UNINITIALIZED; inited = 0; return OK; }

const char *nvmlErrorString(nvmlReturn_t r) {
  switch (r) {
    case 0: return "Success";
    case 1: return "Uninitialized";
    case 2: return "Invalid Argument";
    case 3: return "Not Supported";
    case 4: return "Insufficient Permissions";
    case 6: return "Not Found";
    case 7: return "Insufficient Size";
    case 9: return "Driver Not Loaded";
    case 13: return "Function Not Found";
    case 15: return "GPU is lost";
    case 18: return "RM has detected an NVML/RM version mismatch.";
    case 25: return "Argument version mismatch";
    default: return "Unknown Error";
  }
}

static nvmlReturn_t copy_str(char *dst, unsigned int len, const char *src) {
  if (!dst) return ERR_INVALID_ARGUMENT;
  if (strlen(src) + 1 > len) return ERR_INSUFFICIENT_SIZE;
  strcpy(dst, src);
  return OK;
}

nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length) {
  if (!inited) return ERR_UNINITIALIZED;
  load_config();
  const char *v = cfg("driver");
  return copy_str(version, length, v ? v : "550.54.15");
}
nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length) {
  if (!inited) return ERR_UNINITIALIZED;
  return copy_str(version, length, "12.550.54.15");
}
nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *v) {
  if (!inited) return ERR_UNINITIALIZED;
  load_config();
  if (!v) return ERR_INVALID_ARGUMENT;
  *v = (int)cfg_ull("cuda", 12040);
  return OK;
}
#ifndef STANDIN_OLD_DRIVER
nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *v) { return nvmlSystemGetCudaDriverVersion(v); }
#endif
nvmlReturn_t nvmlSystemGetProcessName(unsigned int pid, char *name, unsigned int length) {
  if (!inited) return ERR_UNINITIALIZED;
  char b[64];
  snprintf(b, sizeof b, "standin-process-%u", pid);
  return copy_str(name, length, b);
}

/* ---- devices --------------------------------------------------------------------- */
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count) {
  if (!inited) return ERR_UNINITIALIZED;
  load_config();
  if (!count) return ERR_INVALID_ARGUMENT;
  *count = (unsigned)ngpus();
  return OK;
}
nvmlReturn_t nvmlDeviceGetCount(unsigned int *count) { return nvmlDeviceGetCount_v2(count); }

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *d) {
  if (!inited) return ERR_UNINITIALIZED;
  load_config();
  if (!d || i >= (unsigned)ngpus()) return ERR_INVALID_ARGUMENT;
  gpu_devs[i].gpu = (int)i;
  gpu_devs[i].mig = -1;
  *d = &gpu_devs[i];
  return OK;
}
nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int i, nvmlDevice_t *d) { return nvmlDeviceGetHandleByIndex_v2(i, d); }

static void dev_name(nvmlDevice_t d, char *out, size_t n) {
  char k[48];
  const char *v = cfgf(k, sizeof k, "name.%d", d->gpu, 0);
  char base[128];
  if (v) snprintf(base, sizeof base, "%s", v); else snprintf(base, sizeof base, "NVIDIA Stand-in GPU %d", d->gpu);
  if (d->mig < 0) { snprintf(out, n, "%s", base); return; }
  v = cfgf(k, sizeof k, "name.%d.%d", d->gpu, d->mig);
  if (v) snprintf(out, n, "%s", v); else snprintf(out, n, "%s MIG 1g.10gb", base);
}
static void dev_uuid(nvmlDevice_t d, char *out, size_t n) {
  char k[48];
  const char *v = d->mig < 0 ? cfgf(k, sizeof k, "uuid.%d", d->gpu, 0) : cfgf(k, sizeof k, "uuid.%d.%d", d->gpu, d->mig);
  if (v) { snprintf(out, n, "%s", v); return; }
  if (d->mig < 0) snprintf(out, n, "GPU-5a4d1e00-0000-4000-8000-0000000000%02d", d->gpu);
  else snprintf(out, n, "MIG-5a4d1e00-0000-4000-8000-00000000%02d%02d", d->gpu, d->mig);
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *name, unsigned int length) {
  nvmlReturn_t rc = check(d);
  if (rc) return rc;
  char b[160];
  dev_name(d, b, sizeof b);
  return copy_str(name, length, b);
}
#ifndef STANDIN_WITHOUT_UUID
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *uuid, unsigned int length) {
  nvmlReturn_t rc = check(d);
  if (rc) return rc;
  char b[128];
  dev_uuid(d, b, sizeof b);
  return copy_str(uuid, length, b);
}
#endif
nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t d, unsigned int *index) {
  nvmlReturn_t rc = check(d);
  if (rc) return rc;
  if (!index) return ERR_INVALID_ARGUMENT;
  *index = (unsigned)d->gpu;
  return OK;
}
nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *d) {
  if (!inited) return ERR_UNINITIALIZED;
  load_config();
  if (!uuid || !d) return ERR_INVALID_ARGUMENT;
  char b[128];
  for (int g = 0; g < ngpus(); g++) {
    gpu_devs[g].gpu = g; gpu_devs[g].mig = -1;
    dev_uuid(&gpu_devs[g], b, sizeof b);
    if (!strcmp(b, uuid)) { *d = &gpu_devs[g]; return OK; }
    for (int m = 0; m < mig_count(g); m++) {
      mig_devs[g][m].gpu = g; mig_devs[g][m].mig = m;
      dev_uuid(&mig_devs[g][m], b, sizeof b);
      if (!strcmp(b, uuid)) { *d = &mig_devs[g][m]; return OK; }
    }
  }
  return ERR_NOT_FOUND;
}
nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t d, int *major, int *minor) {
  nvmlReturn_t rc = check(d);
  if (rc) return rc;
  if (!major || !minor) return ERR_INVALID_ARGUMENT;
  char k[48];
  const char *v = cfgf(k, sizeof k, "cc.%d", d->gpu, 0);
  int a = 9, b = 0;
  if (v) sscanf(v, "%d.%d", &a, &b);
  *major = a; *minor = b;
  return OK;
}

/* ---- memory ---------------------------------------------------------------------- */
static void mem_values(nvmlDevice_t d, unsigned long long *total, unsigned long long *used, unsigned long long *reserved) {
  char k[48];
  unsigned long long t = cfg_ull(cfgf(k, sizeof k, "total.%d", d->gpu, 0) ? k : "-", 80ULL * GiB);
  unsigned long long u = cfg_ull(cfgf(k, sizeof k, "used.%d", d->gpu, 0) ? k : "-", (unsigned long long)(d->gpu + 1) * GiB);
  unsigned long long r = cfg_ull(cfgf(k, sizeof k, "reserved.%d", d->gpu, 0) ? k : "-", 512ULL * MiB);
  unsigned long long step = cfg_ull(cfgf(k, sizeof k, "step.%d", d->gpu, 0) ? k : "-", 0);
  if (d->mig >= 0) {
    int n = mig_count(d->gpu);
    t = cfg_ull(cfgf(k, sizeof k, "total.%d.%d", d->gpu, d->mig) ? k : "-", n > 0 ? t / (unsigned)n : t);
    u = cfg_ull(cfgf(k, sizeof k, "used.%d.%d", d->gpu, d->mig) ? k : "-", (unsigned long long)(d->mig + 1) * 256ULL * MiB);
    r = 0;
  }
  unsigned long long *calls = &mem_calls[d->gpu][d->mig + 1];
  if (step && t > u + r) u += (step * (*calls)) % (t - u - r);
  (*calls)++;
  if (u + r > t) u = t > r ? t - r : 0;
  *total = t; *used = u; *reserved = r;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m) {
  nvmlReturn_t rc = check(d);
  if (rc) return rc;
  if (!m) return ERR_INVALID_ARGUMENT;
  unsigned long long t, u, r;
  mem_values(d, &t, &u, &r);
  m->total = t; m->used = u + r; m->free = t - u - r;
  return OK;
}
#ifndef STANDIN_OLD_DRIVER
nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t d, nvmlMemory_v2_t *m) {
  nvmlReturn_t rc = check(d);
  if (rc) return rc;
  if (!m) return ERR_INVALID_ARGUMENT;
  if (m->version != NVML_MEMORY_V2_VERSION) return ERR_ARGUMENT_VERSION_MISMATCH;
  unsigned long long t, u, r;
  mem_values(d, &t, &u, &r);
  m->total = t; m->reserved = r; m->used = u; m->free = t - u - r;
  return OK;
}
#endif

/* ---- processes ------------------------------------------------------------------- */
static unsigned parse_procs(nvmlDevice_t d, nvmlProcessInfo_v2_t *out, unsigned max) {
  char k[48];
  const char *s = d->mig < 0 ? cfgf(k, sizeof k, "procs.%d", d->gpu, 0) : cfgf(k, sizeof k, "procs.%d.%d", d->gpu, d->mig);
  if (!s || !*s) return 0;
  char *copy = strdup(s), *save = NULL;
  unsigned n = 0;
  for (char *t = strtok_r(copy, ",", &save); t && n < max; t = strtok_r(NULL, ",", &save)) {
    char *colon = strchr(t, ':');
    if (colon) *colon = 0;
    unsigned pid = !strcmp(t, "self") ? (unsigned)getpid() : (unsigned)strtoul(t, NULL, 10);
    unsigned long long b = 0;
    if (colon) b = !strcmp(colon + 1, "na") ? NA_ULL : strtoull(colon + 1, NULL, 10);
    out[n].pid = pid; out[n].usedGpuMemory = b;
    out[n].gpuInstanceId = d->mig < 0 ? 0xFFFFFFFFu : (unsigned)d->mig + 1;
    out[n].computeInstanceId = d->mig < 0 ? 0xFFFFFFFFu : 0;
    n++;
  }
  free(copy);
  return n;
}

static nvmlReturn_t procs_v2(nvmlDevice_t d, unsigned int *count, nvmlProcessInfo_v2_t *infos) {
  nvmlReturn_t rc = check(d);
  if (rc) return rc;
  if (!count) return ERR_INVALID_ARGUMENT;
  nvmlProcessInfo_v2_t t[64];
  unsigned n = parse_procs(d, t, 64);
  if (*count < n || (!infos && n)) { *count = n; return ERR_INSUFFICIENT_SIZE; }
  if (n) memcpy(infos, t, n * sizeof *t);
  *count = n;
  return OK;
}
#ifndef STANDIN_OLD_DRIVER
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned int *count, nvmlProcessInfo_v2_t *infos) {
  return procs_v2(d, count, infos);
}
#endif
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t d, unsigned int *count, nvmlProcessInfo_v2_t *infos) {
  return procs_v2(d, count, infos);
}
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t d, unsigned int *count, nvmlProcessInfo_v1_t *infos) {
  nvmlReturn_t rc = check(d);
  if (rc) return rc;
  if (!count) return ERR_INVALID_ARGUMENT;
  nvmlProcessInfo_v2_t t[64];
  unsigned n = parse_procs(d, t, 64);
  if (*count < n || (!infos && n)) { *count = n; return ERR_INSUFFICIENT_SIZE; }
  for (unsigned i = 0; i < n; i++) { infos[i].pid = t[i].pid; infos[i].usedGpuMemory = t[i].usedGpuMemory; }
  *count = n;
  return OK;
}
/* No graphics processes on a stand-in. */
static nvmlReturn_t no_procs(nvmlDevice_t d, unsigned int *count) {
  nvmlReturn_t rc = check(d);
  if (rc) return rc;
  if (!count) return ERR_INVALID_ARGUMENT;
  *count = 0;
  return OK;
}
nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t d, unsigned int *count, nvmlProcessInfo_v2_t *infos) { (void)infos; return no_procs(d, count); }
nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v2(nvmlDevice_t d, unsigned int *count, nvmlProcessInfo_v2_t *infos) { (void)infos; return no_procs(d, count); }
nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses(nvmlDevice_t d, unsigned int *count, nvmlProcessInfo_v1_t *infos) { (void)infos; return no_procs(d, count); }

/* ---- MIG ------------------------------------------------------------------------- */
nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t d, unsigned int *current, unsigned int *pending) {
  nvmlReturn_t rc = check(d);
  if (rc) return rc;
  if (!current || !pending) return ERR_INVALID_ARGUMENT;
  if (d->mig >= 0) return ERR_NOT_SUPPORTED;
  int n = mig_count(d->gpu);
  if (n < 0) return ERR_NOT_SUPPORTED;
  *current = *pending = n > 0 ? 1u : 0u;
  return OK;
}
nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t d, unsigned int *count) {
  nvmlReturn_t rc = check(d);
  if (rc) return rc;
  if (!count) return ERR_INVALID_ARGUMENT;
  if (d->mig >= 0 || mig_count(d->gpu) < 0) return ERR_NOT_SUPPORTED;
  *count = 7;
  return OK;
}
nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t d, unsigned int index, nvmlDevice_t *mig) {
  nvmlReturn_t rc = check(d);
  if (rc) return rc;
  if (!mig || d->mig >= 0) return ERR_INVALID_ARGUMENT;
  int n = mig_count(d->gpu);
  if (n < 0) return ERR_NOT_SUPPORTED;
  if (index >= 7) return ERR_INVALID_ARGUMENT;
  if ((int)index >= n) return ERR_NOT_FOUND;
  mig_devs[d->gpu][index].gpu = d->gpu;
  mig_devs[d->gpu][index].mig = (int)index;
  *mig = &mig_devs[d->gpu][index];
  return OK;
}
nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_t mig, nvmlDevice_t *d) {
  nvmlReturn_t rc = check(mig);
  if (rc) return rc;
  if (!d || mig->mig < 0) return ERR_INVALID_ARGUMENT;
  *d = &gpu_devs[mig->gpu];
  return OK;
}
nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t d, unsigned int *is_mig) {
  nvmlReturn_t rc = check(d);
  if (rc) return rc;
  if (!is_mig) return ERR_INVALID_ARGUMENT;
  *is_mig = d->mig >= 0;
  return OK;
}
nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t d, unsigned int *id) {
  nvmlReturn_t rc = check(d);
  if (rc) return rc;
  if (!id) return ERR_INVALID_ARGUMENT;
  if (d->mig < 0) return ERR_NOT_SUPPORTED;
  *id = (unsigned)d->mig + 1;
  return OK;
}
nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t d, unsigned int *id) {
  nvmlReturn_t rc = check(d);
  if (rc) return rc;
  if (!id) return ERR_INVALID_ARGUMENT;
  if (d->mig < 0) return ERR_NOT_SUPPORTED;
  *id = 0;
  return OK;
}
