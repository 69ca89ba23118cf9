/*
 * Open MPI anchor for the host backend benchmark: MPI_Allreduce (float sum), MPI_Allgather and
 * MPI_Alltoall (float), with the same sizes, iteration counts and table as
 * dev.gpucoll.examples.bench.HostCollectivesBenchmark. Time is per call on rank 0 (median and p99
 * over back-to-back calls, the slowest call after the algorithm); GB/s = bytes / median. Bytes: the allReduce vector; the whole receive
 * buffer of allGather and the whole send buffer of allToAll (bytes / ranks per peer, at least 4).
 *   collectives_bench [max_bytes | size,size,...] [max_iters]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long SIZES[64] = {8, 64, 512, 4 << 10, 32 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20};
static size_t NSIZES = 10;

static int iterations(long bytes) {
  if (bytes <= 4096) return 20000;
  if (bytes <= (256 << 10)) return 2000;
  if (bytes <= (4 << 20)) return 200;
  return 30;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void call(int c, float *send, float *recv, int count, int per_peer) {
  if (c == 0) MPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  else if (c == 1) MPI_Allgather(send, per_peer, MPI_FLOAT, recv, per_peer, MPI_FLOAT, MPI_COMM_WORLD);
  else MPI_Alltoall(send, per_peer, MPI_FLOAT, recv, per_peer, MPI_FLOAT, MPI_COMM_WORLD);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  /* Optional: the largest message size to run (bytes), e.g. for oversubscribed runs. */
  long max_bytes = SIZES[NSIZES - 1];
  if (argc > 1 && strchr(argv[1], ',')) { /* the sizes themselves, as the Java side's --sizes */
    NSIZES = 0;
    for (char *p = argv[1]; *p && NSIZES < 64; p = strchr(p, ',') ? strchr(p, ',') + 1 : p + strlen(p)) {
      SIZES[NSIZES++] = atol(p);
    }
    max_bytes = SIZES[NSIZES - 1];
  } else if (argc > 1) {
    max_bytes = atol(argv[1]);
  }
  /* Optional: at most this many timed calls per size (the Java side's --maxIters). */
  int max_iters = argc > 2 ? atoi(argv[2]) : 1 << 30;
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (rank == 0) {
    printf("# Open MPI anchor, %d processes\n", size);
    printf("%-10s %10s %8s %12s %12s %10s  %-18s %10s\n", "collective", "bytes", "iters", "median_us", "p99_us", "GB/s",
           "algorithm", "max_us");
  }
  const char *colls[] = {"allReduce", "allGather", "allToAll"};
  const char *names[] = {"MPI_Allreduce", "MPI_Allgather", "MPI_Alltoall"};
  for (int c = 0; c < 3; c++) {
    for (size_t s = 0; s < NSIZES; s++) {
      long bytes = SIZES[s];
      if (bytes > max_bytes) continue;
      int count = (int)(bytes / 4);
      int per_peer = count / size > 0 ? count / size : 1;
      float *send = malloc((size_t)(count > per_peer * size ? count : per_peer * size) * sizeof(float));
      float *recv = malloc((size_t)(count > per_peer * size ? count : per_peer * size) * sizeof(float));
      for (int i = 0; i < count; i++) send[i] = (float)(rank + 1);
      int iters = iterations(bytes) < max_iters ? iterations(bytes) : max_iters;
      double *t = malloc((size_t)iters * sizeof(double));
      int warm = (iters < 2000 ? iters : 2000) / 10 + 5;
      for (int i = 0; i < warm; i++) {
        call(c, send, recv, count, per_peer);
      }
      MPI_Barrier(MPI_COMM_WORLD);
      for (int i = 0; i < iters; i++) {
        double t0 = MPI_Wtime();
        call(c, send, recv, count, per_peer);
        t[i] = MPI_Wtime() - t0;
      }
      if (c == 0 && recv[count - 1] != size * (size + 1) / 2.0f) {
        fprintf(stderr, "wrong allreduce result\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
      qsort(t, (size_t)iters, sizeof(double), cmp_double);
      double median = t[iters / 2] * 1e6;
      int p99i = (int)((iters * 99 + 99) / 100) - 1;
      if (p99i >= iters) p99i = iters - 1;
      double p99 = t[p99i] * 1e6;
      if (rank == 0) {
        long shown = c == 0 ? bytes : (long)per_peer * size * 4;
        printf("%-10s %10ld %8d %12.2f %12.2f %10.3f  %-18s %10.2f\n", colls[c], shown, iters, median, p99,
               shown / (median * 1e3), names[c], t[iters - 1] * 1e6);
      }
      MPI_Barrier(MPI_COMM_WORLD);
      free(send);
      free(recv);
      free(t);
    }
  }
  MPI_Finalize();
  return 0;
}
