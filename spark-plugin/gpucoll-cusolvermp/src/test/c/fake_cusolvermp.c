/*
 * A stand-in for libcusolverMp.so.0 with the 15 entry points the shim resolves, for ShimMarshallingTest:
 * every input argument at C position i must hold L(i) (64-bit: handles, pointers, int64_t, size_t) or
 * I(i) (int, enums, uint32_t), so that a swapped, truncated or dropped argument between Java and C is
 * caught. Returns 0 when all match, else 1000 + the position of the first that does not; out-parameters
 * are written with OUT_HANDLE, OUT_DEVICE_BYTES, OUT_HOST_BYTES and OUT_VERSION.
 */
#include <stddef.h>
#include <stdint.h>

#define L(i) (0x10000000000LL + 101 + (i))
#define I(i) (101 + (i))
#define CL(i, x)                 \
  if ((int64_t)(intptr_t)(x) != L(i)) \
    return 1000 + (i);
#define CS(i, x)            \
  if ((int64_t)(x) != L(i)) \
    return 1000 + (i);
#define CI(i, x)          \
  if ((int64_t)(x) != I(i)) \
    return 1000 + (i);
#define OUT_HANDLE ((void *)(intptr_t)0xABC0)
#define OUT_DEVICE_BYTES 123456789012LL
#define OUT_HOST_BYTES 42
#define OUT_VERSION 800

int cusolverMpCreate(void **handle, int device, void *stream) {
  CI(1, device) CL(2, stream) *handle = OUT_HANDLE;
  return 0;
}
int cusolverMpDestroy(void *handle) {
  CL(0, handle) return 0;
}
int cusolverMpGetVersion(void *handle, int *version) {
  CL(0, handle) *version = OUT_VERSION;
  return 0;
}
int cusolverMpCreateDeviceGrid(void *handle, void **grid, void *comm, int32_t rows, int32_t cols, int mapping) {
  CL(0, handle) CL(2, comm) CI(3, rows) CI(4, cols) CI(5, mapping) *grid = OUT_HANDLE;
  return 0;
}
int cusolverMpDestroyGrid(void *grid) {
  CL(0, grid) return 0;
}
int cusolverMpCreateMatrixDesc(void **desc, void *grid, int dt, int64_t m, int64_t n, int64_t mb, int64_t nb,
                               uint32_t rsrc, uint32_t csrc, int64_t lld) {
  CL(1, grid) CI(2, dt) CS(3, m) CS(4, n) CS(5, mb) CS(6, nb) CI(7, rsrc) CI(8, csrc) CS(9, lld) *desc = OUT_HANDLE;
  return 0;
}
int cusolverMpDestroyMatrixDesc(void *desc) {
  CL(0, desc) return 0;
}
int cusolverMpGetrf_bufferSize(void *h, int64_t m, int64_t n, void *a, int64_t ia, int64_t ja, void *da,
                               int64_t *ipiv, int ct, size_t *db, size_t *hb) {
  CL(0, h) CS(1, m) CS(2, n) CL(3, a) CS(4, ia) CS(5, ja) CL(6, da) CL(7, ipiv) CI(8, ct) *db = OUT_DEVICE_BYTES;
  *hb = OUT_HOST_BYTES;
  return 0;
}
int cusolverMpGetrf(void *h, int64_t m, int64_t n, void *a, int64_t ia, int64_t ja, void *da, int64_t *ipiv, int ct,
                    void *dw, size_t db, void *hw, size_t hb, int *info) {
  CL(0, h) CS(1, m) CS(2, n) CL(3, a) CS(4, ia) CS(5, ja) CL(6, da) CL(7, ipiv) CI(8, ct) CL(9, dw) CS(10, db)
  CL(11, hw) CS(12, hb) CL(13, info) return 0;
}
int cusolverMpGetrs_bufferSize(void *h, int trans, int64_t n, int64_t nrhs, const void *a, int64_t ia, int64_t ja,
                               void *da, const int64_t *ipiv, void *b, int64_t ib, int64_t jb, void *dbd, int ct,
                               size_t *db, size_t *hb) {
  CL(0, h) CI(1, trans) CS(2, n) CS(3, nrhs) CL(4, a) CS(5, ia) CS(6, ja) CL(7, da) CL(8, ipiv) CL(9, b) CS(10, ib)
  CS(11, jb) CL(12, dbd) CI(13, ct) *db = OUT_DEVICE_BYTES;
  *hb = OUT_HOST_BYTES;
  return 0;
}
int cusolverMpGetrs(void *h, int trans, int64_t n, int64_t nrhs, const void *a, int64_t ia, int64_t ja, void *da,
                    const int64_t *ipiv, void *b, int64_t ib, int64_t jb, void *dbd, int ct, void *dw, size_t db,
                    void *hw, size_t hb, int *info) {
  CL(0, h) CI(1, trans) CS(2, n) CS(3, nrhs) CL(4, a) CS(5, ia) CS(6, ja) CL(7, da) CL(8, ipiv) CL(9, b) CS(10, ib)
  CS(11, jb) CL(12, dbd) CI(13, ct) CL(14, dw) CS(15, db) CL(16, hw) CS(17, hb) CL(18, info) return 0;
}
int cusolverMpPotrf_bufferSize(void *h, int uplo, int64_t n, const void *a, int64_t ia, int64_t ja, void *da, int ct,
                               size_t *db, size_t *hb) {
  CL(0, h) CI(1, uplo) CS(2, n) CL(3, a) CS(4, ia) CS(5, ja) CL(6, da) CI(7, ct) *db = OUT_DEVICE_BYTES;
  *hb = OUT_HOST_BYTES;
  return 0;
}
int cusolverMpPotrf(void *h, int uplo, int64_t n, void *a, int64_t ia, int64_t ja, void *da, int ct, void *dw,
                    size_t db, void *hw, size_t hb, int *info) {
  CL(0, h) CI(1, uplo) CS(2, n) CL(3, a) CS(4, ia) CS(5, ja) CL(6, da) CI(7, ct) CL(8, dw) CS(9, db) CL(10, hw)
  CS(11, hb) CL(12, info) return 0;
}
int cusolverMpPotrs_bufferSize(void *h, int uplo, int64_t n, int64_t nrhs, const void *a, int64_t ia, int64_t ja,
                               void *da, const void *b, int64_t ib, int64_t jb, void *dbd, int ct, size_t *db,
                               size_t *hb) {
  CL(0, h) CI(1, uplo) CS(2, n) CS(3, nrhs) CL(4, a) CS(5, ia) CS(6, ja) CL(7, da) CL(8, b) CS(9, ib) CS(10, jb)
  CL(11, dbd) CI(12, ct) *db = OUT_DEVICE_BYTES;
  *hb = OUT_HOST_BYTES;
  return 0;
}
int cusolverMpPotrs(void *h, int uplo, int64_t n, int64_t nrhs, const void *a, int64_t ia, int64_t ja, void *da,
                    void *b, int64_t ib, int64_t jb, void *dbd, int ct, void *dw, size_t db, void *hw, size_t hb,
                    int *info) {
  CL(0, h) CI(1, uplo) CS(2, n) CS(3, nrhs) CL(4, a) CS(5, ia) CS(6, ja) CL(7, da) CL(8, b) CS(9, ib) CS(10, jb)
  CL(11, dbd) CI(12, ct) CL(13, dw) CS(14, db) CL(15, hw) CS(16, hb) CL(17, info) return 0;
}
