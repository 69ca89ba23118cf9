/*
 * JNI shim between dev.gpucoll.cusolvermp.CuSolverMpNative and libcusolverMp.so.0 (cuSOLVERMp 0.8,
 * the nvidia-cusolvermp-cu13==0.8.0.3126 wheel). The library is dlopen()ed on first use, so nothing
 * links against it at build time and no CUDA, NCCL or cuSOLVERMp header is needed here: the few
 * prototypes used are declared below with every opaque handle (cusolverMpHandle_t, cusolverMpGrid_t,
 * cusolverMpMatrixDescriptor_t, cudaStream_t, ncclComm_t) as void * and every enum as int, as
 * cusolverMp.h 0.8 declares them. Each call returns the cusolverStatus_t; Java names the call.
 */
#include <dlfcn.h>
#include <jni.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef int status_t; /* cusolverStatus_t */

typedef status_t (*create_fn)(void **handle, int device, void *stream);
typedef status_t (*destroy_fn)(void *handle);
typedef status_t (*get_version_fn)(void *handle, int *version);
typedef status_t (*create_device_grid_fn)(void *handle, void **grid, void *comm, int32_t rows, int32_t cols,
                                          int mapping);
typedef status_t (*destroy_grid_fn)(void *grid);
typedef status_t (*create_matrix_desc_fn)(void **desc, void *grid, int data_type, int64_t m, int64_t n, int64_t mb,
                                          int64_t nb, uint32_t rsrc, uint32_t csrc, int64_t lld);
typedef status_t (*destroy_matrix_desc_fn)(void *desc);
typedef status_t (*getrf_buffer_size_fn)(void *handle, int64_t m, int64_t n, void *a, int64_t ia, int64_t ja,
                                         void *desc_a, int64_t *ipiv, int compute_type, size_t *device_bytes,
                                         size_t *host_bytes);
typedef status_t (*getrf_fn)(void *handle, int64_t m, int64_t n, void *a, int64_t ia, int64_t ja, void *desc_a,
                             int64_t *ipiv, int compute_type, void *d_work, size_t device_bytes, void *h_work,
                             size_t host_bytes, int *info);
typedef status_t (*getrs_buffer_size_fn)(void *handle, int trans, int64_t n, int64_t nrhs, const void *a, int64_t ia,
                                         int64_t ja, void *desc_a, const int64_t *ipiv, void *b, int64_t ib,
                                         int64_t jb, void *desc_b, int compute_type, size_t *device_bytes,
                                         size_t *host_bytes);
typedef status_t (*getrs_fn)(void *handle, int trans, int64_t n, int64_t nrhs, const void *a, int64_t ia, int64_t ja,
                             void *desc_a, const int64_t *ipiv, void *b, int64_t ib, int64_t jb, void *desc_b,
                             int compute_type, void *d_work, size_t device_bytes, void *h_work, size_t host_bytes,
                             int *info);
typedef status_t (*potrf_buffer_size_fn)(void *handle, int uplo, int64_t n, const void *a, int64_t ia, int64_t ja,
                                         void *desc_a, int compute_type, size_t *device_bytes, size_t *host_bytes);
typedef status_t (*potrf_fn)(void *handle, int uplo, int64_t n, void *a, int64_t ia, int64_t ja, void *desc_a,
                             int compute_type, void *d_work, size_t device_bytes, void *h_work, size_t host_bytes,
                             int *info);
typedef status_t (*potrs_buffer_size_fn)(void *handle, int uplo, int64_t n, int64_t nrhs, const void *a, int64_t ia,
                                         int64_t ja, void *desc_a, const void *b, int64_t ib, int64_t jb,
                                         void *desc_b, int compute_type, size_t *device_bytes, size_t *host_bytes);
typedef status_t (*potrs_fn)(void *handle, int uplo, int64_t n, int64_t nrhs, const void *a, int64_t ia, int64_t ja,
                             void *desc_a, void *b, int64_t ib, int64_t jb, void *desc_b, int compute_type,
                             void *d_work, size_t device_bytes, void *h_work, size_t host_bytes, int *info);

/* QR, least squares and the symmetric eigensolver: resolved when present (cuSOLVERMp 0.8 has them); a
 * library without one leaves its slot NULL and its call returns NO_SYMBOL, which Java names. */
typedef status_t (*geqrf_buffer_size_fn)(void *handle, int64_t m, int64_t n, void *a, int64_t ia, int64_t ja,
                                         void *desc_a, int compute_type, size_t *device_bytes, size_t *host_bytes);
typedef status_t (*geqrf_fn)(void *handle, int64_t m, int64_t n, void *a, int64_t ia, int64_t ja, void *desc_a,
                             void *tau, int compute_type, void *d_work, size_t device_bytes, void *h_work,
                             size_t host_bytes, int *info);
typedef status_t (*ormqr_buffer_size_fn)(void *handle, int side, int trans, int64_t m, int64_t n, int64_t k,
                                         const void *a, int64_t ia, int64_t ja, void *desc_a, const void *tau,
                                         void *c, int64_t ic, int64_t jc, void *desc_c, int compute_type,
                                         size_t *device_bytes, size_t *host_bytes);
typedef status_t (*ormqr_fn)(void *handle, int side, int trans, int64_t m, int64_t n, int64_t k, const void *a,
                             int64_t ia, int64_t ja, void *desc_a, const void *tau, void *c, int64_t ic, int64_t jc,
                             void *desc_c, int compute_type, void *d_work, size_t device_bytes, void *h_work,
                             size_t host_bytes, int *info);
typedef status_t (*gels_buffer_size_fn)(void *handle, int trans, int64_t m, int64_t n, int64_t nrhs, void *a,
                                        int64_t ia, int64_t ja, void *desc_a, void *b, int64_t ib, int64_t jb,
                                        void *desc_b, int compute_type, size_t *device_bytes, size_t *host_bytes);
typedef status_t (*gels_fn)(void *handle, int trans, int64_t m, int64_t n, int64_t nrhs, void *a, int64_t ia,
                            int64_t ja, void *desc_a, void *b, int64_t ib, int64_t jb, void *desc_b, int compute_type,
                            void *d_work, size_t device_bytes, void *h_work, size_t host_bytes, int *info);
typedef status_t (*syevd_buffer_size_fn)(void *handle, const char *compz, int uplo, int64_t n, void *a, int64_t ia,
                                         int64_t ja, void *desc_a, void *d, void *q, int64_t iq, int64_t jq,
                                         void *desc_q, int compute_type, size_t *device_bytes, size_t *host_bytes);
typedef status_t (*syevd_fn)(void *handle, const char *compz, int uplo, int64_t n, void *a, int64_t ia, int64_t ja,
                             void *desc_a, void *d, void *q, int64_t iq, int64_t jq, void *desc_q, int compute_type,
                             void *d_work, size_t device_bytes, void *h_work, size_t host_bytes, int *info);

/* What an optional entry point returns when the loaded library lacks it (no cusolverStatus_t is negative). */
#define NO_SYMBOL (-1)

struct library {
  create_fn create;
  destroy_fn destroy;
  get_version_fn get_version;
  create_device_grid_fn create_device_grid;
  destroy_grid_fn destroy_grid;
  create_matrix_desc_fn create_matrix_desc;
  destroy_matrix_desc_fn destroy_matrix_desc;
  getrf_buffer_size_fn getrf_buffer_size;
  getrf_fn getrf;
  getrs_buffer_size_fn getrs_buffer_size;
  getrs_fn getrs;
  potrf_buffer_size_fn potrf_buffer_size;
  potrf_fn potrf;
  potrs_buffer_size_fn potrs_buffer_size;
  potrs_fn potrs;
  geqrf_buffer_size_fn geqrf_buffer_size;
  geqrf_fn geqrf;
  ormqr_buffer_size_fn ormqr_buffer_size;
  ormqr_fn ormqr;
  gels_buffer_size_fn gels_buffer_size;
  gels_fn gels;
  syevd_buffer_size_fn syevd_buffer_size;
  syevd_fn syevd;
};

/* Set once, when every symbol resolved; a failed later load leaves it as it was. */
static struct library lib;

#define P(x) ((void *)(intptr_t)(x))

/* Resolves one symbol into *slot; on failure writes why into err and returns 0. */
static int resolve(void *h, const char *lib_name, const char *name, void **slot, char *err, size_t err_len) {
  dlerror();
  void *s = dlsym(h, name);
  const char *e = dlerror();
  if (e != NULL || s == NULL) {
    snprintf(err, err_len, "%s has no symbol %s (%s)", lib_name, name, e != NULL ? e : "null");
    return 0;
  }
  *slot = s;
  return 1;
}

/* Returns null when loaded, else why not (dlerror's text). */
JNIEXPORT jstring JNICALL Java_dev_gpucoll_cusolvermp_CuSolverMpNative_load0(JNIEnv *env, jclass cls, jstring name) {
  (void)cls;
  char err[8192];
  char path[4096];
  const char *utf = (*env)->GetStringUTFChars(env, name, NULL);
  if (utf == NULL) {
    return NULL; /* OutOfMemoryError pending */
  }
  snprintf(path, sizeof(path), "%s", utf);
  (*env)->ReleaseStringUTFChars(env, name, utf);
  /* RTLD_NOW: a missing dependency (libcublas.so.13, libnccl.so.2, ...) is named here, not at a call. */
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (h == NULL) {
    const char *e = dlerror();
    return (*env)->NewStringUTF(env, e != NULL ? e : "dlopen failed");
  }
  struct library found;
  struct {
    const char *name;
    void **slot;
  } syms[] = {
      {"cusolverMpCreate", (void **)&found.create},
      {"cusolverMpDestroy", (void **)&found.destroy},
      {"cusolverMpGetVersion", (void **)&found.get_version},
      {"cusolverMpCreateDeviceGrid", (void **)&found.create_device_grid},
      {"cusolverMpDestroyGrid", (void **)&found.destroy_grid},
      {"cusolverMpCreateMatrixDesc", (void **)&found.create_matrix_desc},
      {"cusolverMpDestroyMatrixDesc", (void **)&found.destroy_matrix_desc},
      {"cusolverMpGetrf_bufferSize", (void **)&found.getrf_buffer_size},
      {"cusolverMpGetrf", (void **)&found.getrf},
      {"cusolverMpGetrs_bufferSize", (void **)&found.getrs_buffer_size},
      {"cusolverMpGetrs", (void **)&found.getrs},
      {"cusolverMpPotrf_bufferSize", (void **)&found.potrf_buffer_size},
      {"cusolverMpPotrf", (void **)&found.potrf},
      {"cusolverMpPotrs_bufferSize", (void **)&found.potrs_buffer_size},
      {"cusolverMpPotrs", (void **)&found.potrs},
  };
  for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
    if (!resolve(h, path, syms[i].name, syms[i].slot, err, sizeof(err))) {
      dlclose(h);
      return (*env)->NewStringUTF(env, err);
    }
  }
  struct {
    const char *name;
    void **slot;
  } optional[] = {
      {"cusolverMpGeqrf_bufferSize", (void **)&found.geqrf_buffer_size},
      {"cusolverMpGeqrf", (void **)&found.geqrf},
      {"cusolverMpOrmqr_bufferSize", (void **)&found.ormqr_buffer_size},
      {"cusolverMpOrmqr", (void **)&found.ormqr},
      {"cusolverMpGels_bufferSize", (void **)&found.gels_buffer_size},
      {"cusolverMpGels", (void **)&found.gels},
      {"cusolverMpSyevd_bufferSize", (void **)&found.syevd_buffer_size},
      {"cusolverMpSyevd", (void **)&found.syevd},
  };
  for (size_t i = 0; i < sizeof(optional) / sizeof(optional[0]); i++) {
    *optional[i].slot = dlsym(h, optional[i].name); /* NULL when absent: its call returns NO_SYMBOL */
  }
  lib = found;
  return NULL;
}

/* The two workspace sizes of a *_bufferSize call go back through a long[2]. */
static void put_sizes(JNIEnv *env, jlongArray out, size_t device_bytes, size_t host_bytes) {
  jlong v[2] = {(jlong)device_bytes, (jlong)host_bytes};
  (*env)->SetLongArrayRegion(env, out, 0, 2, v);
}

static void put_handle(JNIEnv *env, jlongArray out, void *h) {
  jlong v = (jlong)(intptr_t)h;
  (*env)->SetLongArrayRegion(env, out, 0, 1, &v);
}

JNIEXPORT jint JNICALL Java_dev_gpucoll_cusolvermp_CuSolverMpNative_create(JNIEnv *env, jclass cls, jint device,
                                                                             jlong stream, jlongArray out) {
  (void)cls;
  void *h = NULL;
  status_t s = lib.create(&h, device, P(stream));
  put_handle(env, out, h);
  return s;
}

JNIEXPORT jint JNICALL Java_dev_gpucoll_cusolvermp_CuSolverMpNative_destroy(JNIEnv *env, jclass cls, jlong h) {
  (void)env, (void)cls;
  return lib.destroy(P(h));
}

JNIEXPORT jint JNICALL Java_dev_gpucoll_cusolvermp_CuSolverMpNative_getVersion(JNIEnv *env, jclass cls, jlong h,
                                                                                 jintArray out) {
  (void)cls;
  int v = 0;
  status_t s = lib.get_version(P(h), &v);
  jint j = v;
  (*env)->SetIntArrayRegion(env, out, 0, 1, &j);
  return s;
}

JNIEXPORT jint JNICALL Java_dev_gpucoll_cusolvermp_CuSolverMpNative_createDeviceGrid(JNIEnv *env, jclass cls, jlong h,
                                                                                       jlong comm, jint rows, jint cols,
                                                                                       jint mapping, jlongArray out) {
  (void)cls;
  void *grid = NULL;
  status_t s = lib.create_device_grid(P(h), &grid, P(comm), rows, cols, mapping);
  put_handle(env, out, grid);
  return s;
}

JNIEXPORT jint JNICALL Java_dev_gpucoll_cusolvermp_CuSolverMpNative_destroyGrid(JNIEnv *env, jclass cls, jlong grid) {
  (void)env, (void)cls;
  return lib.destroy_grid(P(grid));
}

JNIEXPORT jint JNICALL Java_dev_gpucoll_cusolvermp_CuSolverMpNative_createMatrixDesc(
    JNIEnv *env, jclass cls, jlong grid, jint data_type, jlong m, jlong n, jlong mb, jlong nb, jint rsrc, jint csrc,
    jlong lld, jlongArray out) {
  (void)cls;
  void *d = NULL;
  status_t s = lib.create_matrix_desc(&d, P(grid), data_type, m, n, mb, nb, (uint32_t)rsrc, (uint32_t)csrc, lld);
  put_handle(env, out, d);
  return s;
}

JNIEXPORT jint JNICALL Java_dev_gpucoll_cusolvermp_CuSolverMpNative_destroyMatrixDesc(JNIEnv *env, jclass cls,
                                                                                        jlong desc) {
  (void)env, (void)cls;
  return lib.destroy_matrix_desc(P(desc));
}

JNIEXPORT jint JNICALL Java_dev_gpucoll_cusolvermp_CuSolverMpNative_getrfBufferSize(
    JNIEnv *env, jclass cls, jlong h, jlong m, jlong n, jlong a, jlong ia, jlong ja, jlong desc_a, jlong ipiv,
    jint compute_type, jlongArray sizes) {
  (void)cls;
  size_t d = 0, hb = 0;
  status_t s = lib.getrf_buffer_size(P(h), m, n, P(a), ia, ja, P(desc_a), (int64_t *)P(ipiv), compute_type, &d, &hb);
  put_sizes(env, sizes, d, hb);
  return s;
}

JNIEXPORT jint JNICALL Java_dev_gpucoll_cusolvermp_CuSolverMpNative_getrf(JNIEnv *env, jclass cls, jlong h, jlong m,
                                                                            jlong n, jlong a, jlong ia, jlong ja,
                                                                            jlong desc_a, jlong ipiv, jint compute_type,
                                                                            jlong d_work, jlong d_bytes, jlong h_work,
                                                                            jlong h_bytes, jlong info) {
  (void)env, (void)cls;
  return lib.getrf(P(h), m, n, P(a), ia, ja, P(desc_a), (int64_t *)P(ipiv), compute_type, P(d_work), (size_t)d_bytes,
                   P(h_work), (size_t)h_bytes, (int *)P(info));
}

JNIEXPORT jint JNICALL Java_dev_gpucoll_cusolvermp_CuSolverMpNative_getrsBufferSize(
    JNIEnv *env, jclass cls, jlong h, jint trans, jlong n, jlong nrhs, jlong a, jlong ia, jlong ja, jlong desc_a,
    jlong ipiv, jlong b, jlong ib, jlong jb, jlong desc_b, jint compute_type, jlongArray sizes) {
  (void)cls;
  size_t d = 0, hb = 0;
  status_t s = lib.getrs_buffer_size(P(h), trans, n, nrhs, P(a), ia, ja, P(desc_a), (const int64_t *)P(ipiv), P(b), ib,
                                     jb, P(desc_b), compute_type, &d, &hb);
  put_sizes(env, sizes, d, hb);
  return s;
}

JNIEXPORT jint JNICALL Java_dev_gpucoll_cusolvermp_CuSolverMpNative_getrs(
    JNIEnv *env, jclass cls, jlong h, jint trans, jlong n, jlong nrhs, jlong a, jlong ia, jlong ja, jlong desc_a,
    jlong ipiv, jlong b, jlong ib, jlong jb, jlong desc_b, jint compute_type, jlong d_work, jlong d_bytes, jlong h_work,
    jlong h_bytes, jlong info) {
  (void)env, (void)cls;
  return lib.getrs(P(h), trans, n, nrhs, P(a), ia, ja, P(desc_a), (const int64_t *)P(ipiv), P(b), ib, jb, P(desc_b),
                   compute_type, P(d_work), (size_t)d_bytes, P(h_work), (size_t)h_bytes, (int *)P(info));
}

JNIEXPORT jint JNICALL Java_dev_gpucoll_cusolvermp_CuSolverMpNative_potrfBufferSize(
    JNIEnv *env, jclass cls, jlong h, jint uplo, jlong n, jlong a, jlong ia, jlong ja, jlong desc_a, jint compute_type,
    jlongArray sizes) {
  (void)cls;
  size_t d = 0, hb = 0;
  status_t s = lib.potrf_buffer_size(P(h), uplo, n, P(a), ia, ja, P(desc_a), compute_type, &d, &hb);
  put_sizes(env, sizes, d, hb);
  return s;
}

JNIEXPORT jint JNICALL Java_dev_gpucoll_cusolvermp_CuSolverMpNative_potrf(JNIEnv *env, jclass cls, jlong h, jint uplo,
                                                                            jlong n, jlong a, jlong ia, jlong ja,
                                                                            jlong desc_a, jint compute_type,
                                                                            jlong d_work, jlong d_bytes, jlong h_work,
                                                                            jlong h_bytes, jlong info) {
  (void)env, (void)cls;
  return lib.potrf(P(h), uplo, n, P(a), ia, ja, P(desc_a), compute_type, P(d_work), (size_t)d_bytes, P(h_work),
                   (size_t)h_bytes, (int *)P(info));
}

JNIEXPORT jint JNICALL Java_dev_gpucoll_cusolvermp_CuSolverMpNative_potrsBufferSize(
    JNIEnv *env, jclass cls, jlong h, jint uplo, jlong n, jlong nrhs, jlong a, jlong ia, jlong ja, jlong desc_a,
    jlong b, jlong ib, jlong jb, jlong desc_b, jint compute_type, jlongArray sizes) {
  (void)cls;
  size_t d = 0, hb = 0;
  status_t s = lib.potrs_buffer_size(P(h), uplo, n, nrhs, P(a), ia, ja, P(desc_a), P(b), ib, jb, P(desc_b),
                                     compute_type, &d, &hb);
  put_sizes(env, sizes, d, hb);
  return s;
}

JNIEXPORT jint JNICALL Java_dev_gpucoll_cusolvermp_CuSolverMpNative_potrs(
    JNIEnv *env, jclass cls, jlong h, jint uplo, jlong n, jlong nrhs, jlong a, jlong ia, jlong ja, jlong desc_a,
    jlong b, jlong ib, jlong jb, jlong desc_b, jint compute_type, jlong d_work, jlong d_bytes, jlong h_work,
    jlong h_bytes, jlong info) {
  (void)env, (void)cls;
  return lib.potrs(P(h), uplo, n, nrhs, P(a), ia, ja, P(desc_a), P(b), ib, jb, P(desc_b), compute_type, P(d_work),
                   (size_t)d_bytes, P(h_work), (size_t)h_bytes, (int *)P(info));
}

/* ---- QR, least squares, the symmetric eigensolver (optional entry points) ---- */

JNIEXPORT jint JNICALL Java_dev_gpucoll_cusolvermp_CuSolverMpNative_geqrfBufferSize(
    JNIEnv *env, jclass cls, jlong h, jlong m, jlong n, jlong a, jlong ia, jlong ja, jlong desc_a, jint compute_type,
    jlongArray sizes) {
  (void)cls;
  if (lib.geqrf_buffer_size == NULL) {
    return NO_SYMBOL;
  }
  size_t d = 0, hb = 0;
  status_t s = lib.geqrf_buffer_size(P(h), m, n, P(a), ia, ja, P(desc_a), compute_type, &d, &hb);
  put_sizes(env, sizes, d, hb);
  return s;
}

JNIEXPORT jint JNICALL Java_dev_gpucoll_cusolvermp_CuSolverMpNative_geqrf(
    JNIEnv *env, jclass cls, jlong h, jlong m, jlong n, jlong a, jlong ia, jlong ja, jlong desc_a, jlong tau,
    jint compute_type, jlong d_work, jlong d_bytes, jlong h_work, jlong h_bytes, jlong info) {
  (void)env, (void)cls;
  if (lib.geqrf == NULL) {
    return NO_SYMBOL;
  }
  return lib.geqrf(P(h), m, n, P(a), ia, ja, P(desc_a), P(tau), compute_type, P(d_work), (size_t)d_bytes, P(h_work),
                   (size_t)h_bytes, (int *)P(info));
}

JNIEXPORT jint JNICALL Java_dev_gpucoll_cusolvermp_CuSolverMpNative_ormqrBufferSize(
    JNIEnv *env, jclass cls, jlong h, jint side, jint trans, jlong m, jlong n, jlong k, jlong a, jlong ia, jlong ja,
    jlong desc_a, jlong tau, jlong c, jlong ic, jlong jc, jlong desc_c, jint compute_type, jlongArray sizes) {
  (void)cls;
  if (lib.ormqr_buffer_size == NULL) {
    return NO_SYMBOL;
  }
  size_t d = 0, hb = 0;
  status_t s = lib.ormqr_buffer_size(P(h), side, trans, m, n, k, P(a), ia, ja, P(desc_a), P(tau), P(c), ic, jc,
                                     P(desc_c), compute_type, &d, &hb);
  put_sizes(env, sizes, d, hb);
  return s;
}

JNIEXPORT jint JNICALL Java_dev_gpucoll_cusolvermp_CuSolverMpNative_ormqr(
    JNIEnv *env, jclass cls, jlong h, jint side, jint trans, jlong m, jlong n, jlong k, jlong a, jlong ia, jlong ja,
    jlong desc_a, jlong tau, jlong c, jlong ic, jlong jc, jlong desc_c, jint compute_type, jlong d_work,
    jlong d_bytes, jlong h_work, jlong h_bytes, jlong info) {
  (void)env, (void)cls;
  if (lib.ormqr == NULL) {
    return NO_SYMBOL;
  }
  return lib.ormqr(P(h), side, trans, m, n, k, P(a), ia, ja, P(desc_a), P(tau), P(c), ic, jc, P(desc_c),
                   compute_type, P(d_work), (size_t)d_bytes, P(h_work), (size_t)h_bytes, (int *)P(info));
}

JNIEXPORT jint JNICALL Java_dev_gpucoll_cusolvermp_CuSolverMpNative_gelsBufferSize(
    JNIEnv *env, jclass cls, jlong h, jint trans, jlong m, jlong n, jlong nrhs, jlong a, jlong ia, jlong ja,
    jlong desc_a, jlong b, jlong ib, jlong jb, jlong desc_b, jint compute_type, jlongArray sizes) {
  (void)cls;
  if (lib.gels_buffer_size == NULL) {
    return NO_SYMBOL;
  }
  size_t d = 0, hb = 0;
  status_t s = lib.gels_buffer_size(P(h), trans, m, n, nrhs, P(a), ia, ja, P(desc_a), P(b), ib, jb, P(desc_b),
                                    compute_type, &d, &hb);
  put_sizes(env, sizes, d, hb);
  return s;
}

JNIEXPORT jint JNICALL Java_dev_gpucoll_cusolvermp_CuSolverMpNative_gels(
    JNIEnv *env, jclass cls, jlong h, jint trans, jlong m, jlong n, jlong nrhs, jlong a, jlong ia, jlong ja,
    jlong desc_a, jlong b, jlong ib, jlong jb, jlong desc_b, jint compute_type, jlong d_work, jlong d_bytes,
    jlong h_work, jlong h_bytes, jlong info) {
  (void)env, (void)cls;
  if (lib.gels == NULL) {
    return NO_SYMBOL;
  }
  return lib.gels(P(h), trans, m, n, nrhs, P(a), ia, ja, P(desc_a), P(b), ib, jb, P(desc_b), compute_type, P(d_work),
                  (size_t)d_bytes, P(h_work), (size_t)h_bytes, (int *)P(info));
}

/* compz: cuSOLVERMp takes ScaLAPACK's character, "V" (eigenvectors too) or "N" (eigenvalues only). */
JNIEXPORT jint JNICALL Java_dev_gpucoll_cusolvermp_CuSolverMpNative_syevdBufferSize(
    JNIEnv *env, jclass cls, jlong h, jboolean vectors, jint uplo, jlong n, jlong a, jlong ia, jlong ja,
    jlong desc_a, jlong d, jlong q, jlong iq, jlong jq, jlong desc_q, jint compute_type, jlongArray sizes) {
  (void)cls;
  if (lib.syevd_buffer_size == NULL) {
    return NO_SYMBOL;
  }
  size_t db = 0, hb = 0;
  status_t s = lib.syevd_buffer_size(P(h), vectors ? "V" : "N", uplo, n, P(a), ia, ja, P(desc_a), P(d), P(q), iq, jq,
                                     P(desc_q), compute_type, &db, &hb);
  put_sizes(env, sizes, db, hb);
  return s;
}

JNIEXPORT jint JNICALL Java_dev_gpucoll_cusolvermp_CuSolverMpNative_syevd(
    JNIEnv *env, jclass cls, jlong h, jboolean vectors, jint uplo, jlong n, jlong a, jlong ia, jlong ja,
    jlong desc_a, jlong d, jlong q, jlong iq, jlong jq, jlong desc_q, jint compute_type, jlong d_work, jlong d_bytes,
    jlong h_work, jlong h_bytes, jlong info) {
  (void)env, (void)cls;
  if (lib.syevd == NULL) {
    return NO_SYMBOL;
  }
  return lib.syevd(P(h), vectors ? "V" : "N", uplo, n, P(a), ia, ja, P(desc_a), P(d), P(q), iq, jq, P(desc_q),
                   compute_type, P(d_work), (size_t)d_bytes, P(h_work), (size_t)h_bytes, (int *)P(info));
}
