/*
 * A stand-in for libcusolverMp.so.0 with the 23 entry points the shim resolves, for ShimMarshallingTest:
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
int cusolverMpGeqrf_bufferSize(void *h, int64_t m, int64_t n, void *a, int64_t ia, int64_t ja, void *da, int ct,
                               size_t *db, size_t *hb) {
  CL(0, h) CS(1, m) CS(2, n) CL(3, a) CS(4, ia) CS(5, ja) CL(6, da) CI(7, ct) *db = OUT_DEVICE_BYTES;
  *hb = OUT_HOST_BYTES;
  return 0;
}
int cusolverMpGeqrf(void *h, int64_t m, int64_t n, void *a, int64_t ia, int64_t ja, void *da, void *tau, int ct,
                    void *dw, size_t db, void *hw, size_t hb, int *info) {
  CL(0, h) CS(1, m) CS(2, n) CL(3, a) CS(4, ia) CS(5, ja) CL(6, da) CL(7, tau) CI(8, ct) CL(9, dw) CS(10, db)
  CL(11, hw) CS(12, hb) CL(13, info) return 0;
}
int cusolverMpOrmqr_bufferSize(void *h, int side, int trans, int64_t m, int64_t n, int64_t k, const void *a,
                               int64_t ia, int64_t ja, void *da, const void *tau, void *c, int64_t ic, int64_t jc,
                               void *dc, int ct, size_t *db, size_t *hb) {
  CL(0, h) CI(1, side) CI(2, trans) CS(3, m) CS(4, n) CS(5, k) CL(6, a) CS(7, ia) CS(8, ja) CL(9, da) CL(10, tau)
  CL(11, c) CS(12, ic) CS(13, jc) CL(14, dc) CI(15, ct) *db = OUT_DEVICE_BYTES;
  *hb = OUT_HOST_BYTES;
  return 0;
}
int cusolverMpOrmqr(void *h, int side, int trans, int64_t m, int64_t n, int64_t k, const void *a, int64_t ia,
                    int64_t ja, void *da, const void *tau, void *c, int64_t ic, int64_t jc, void *dc, int ct,
                    void *dw, size_t db, void *hw, size_t hb, int *info) {
  CL(0, h) CI(1, side) CI(2, trans) CS(3, m) CS(4, n) CS(5, k) CL(6, a) CS(7, ia) CS(8, ja) CL(9, da) CL(10, tau)
  CL(11, c) CS(12, ic) CS(13, jc) CL(14, dc) CI(15, ct) CL(16, dw) CS(17, db) CL(18, hw) CS(19, hb) CL(20, info)
  return 0;
}
int cusolverMpGels_bufferSize(void *h, int trans, int64_t m, int64_t n, int64_t nrhs, void *a, int64_t ia,
                              int64_t ja, void *da, void *b, int64_t ib, int64_t jb, void *dbd, int ct, size_t *db,
                              size_t *hb) {
  CL(0, h) CI(1, trans) CS(2, m) CS(3, n) CS(4, nrhs) CL(5, a) CS(6, ia) CS(7, ja) CL(8, da) CL(9, b) CS(10, ib)
  CS(11, jb) CL(12, dbd) CI(13, ct) *db = OUT_DEVICE_BYTES;
  *hb = OUT_HOST_BYTES;
  return 0;
}
int cusolverMpGels(void *h, int trans, int64_t m, int64_t n, int64_t nrhs, void *a, int64_t ia, int64_t ja,
                   void *da, void *b, int64_t ib, int64_t jb, void *dbd, int ct, void *dw, size_t db, void *hw,
                   size_t hb, int *info) {
  CL(0, h) CI(1, trans) CS(2, m) CS(3, n) CS(4, nrhs) CL(5, a) CS(6, ia) CS(7, ja) CL(8, da) CL(9, b) CS(10, ib)
  CS(11, jb) CL(12, dbd) CI(13, ct) CL(14, dw) CS(15, db) CL(16, hw) CS(17, hb) CL(18, info) return 0;
}
/* compz (position 1) must be "V": the shim passes vectors = true as ScaLAPACK's character. */
int cusolverMpSyevd_bufferSize(void *h, const char *compz, int uplo, int64_t n, void *a, int64_t ia, int64_t ja,
                               void *da, void *d, void *q, int64_t iq, int64_t jq, void *dq, int ct, size_t *db,
                               size_t *hb) {
  CL(0, h) if (compz[0] != 'V' || compz[1] != 0) return 1001;
  CI(2, uplo) CS(3, n) CL(4, a) CS(5, ia) CS(6, ja) CL(7, da) CL(8, d) CL(9, q) CS(10, iq) CS(11, jq) CL(12, dq)
  CI(13, ct) *db = OUT_DEVICE_BYTES;
  *hb = OUT_HOST_BYTES;
  return 0;
}
int cusolverMpSyevd(void *h, const char *compz, int uplo, int64_t n, void *a, int64_t ia, int64_t ja, void *da,
                    void *d, void *q, int64_t iq, int64_t jq, void *dq, int ct, void *dw, size_t db, void *hw,
                    size_t hb, int *info) {
  CL(0, h) if (compz[0] != 'V' || compz[1] != 0) return 1001;
  CI(2, uplo) CS(3, n) CL(4, a) CS(5, ia) CS(6, ja) CL(7, da) CL(8, d) CL(9, q) CS(10, iq) CS(11, jq) CL(12, dq)
  CI(13, ct) CL(14, dw) CS(15, db) CL(16, hw) CS(17, hb) CL(18, info) return 0;
}
