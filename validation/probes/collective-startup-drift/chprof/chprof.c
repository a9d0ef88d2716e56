/* Per-channel kernel timestamps of NCCL collectives, through NCCL's profiler plugin interface (v4).
 *
 * NCCL (2.26 and later) reports, for every channel of a collective's kernel, the GPU's globaltimer when the
 * channel started its work and when it stopped ("KernelCh" events, parented to the collective's event). This
 * plugin asks for collective and kernel-channel events only and writes one line per channel:
 *
 *     seq func count nChannels algo proto channel start_ns stop_ns
 *
 * to $CHPROF_DIR/chprof-<pid>-<rank>.txt. Build: gcc -O2 -shared -fPIC -o libnccl-profiler-chprof.so chprof.c -lpthread
 * Use:   NCCL_PROFILER_PLUGIN=/path/libnccl-profiler-chprof.so CHPROF_DIR=out python3 ...
 * The structures below restate the layout of NCCL's profiler ABI v4 (ext-profiler/example/nccl/profiler_v4.h);
 * only the fields read here are named.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

typedef int ncclResult_t;                 /* ncclSuccess = 0 */
enum { EV_COLL = 1 << 1, EV_KERNEL_CH = 1 << 6 };
enum { STATE_KERNEL_CH_STOP = 22 };

typedef struct {
  uint8_t type;
  void *parentObj;
  int rank;
  union {
    struct {
      uint64_t seqNumber;
      const char *func;
      const void *sendBuff;
      void *recvBuff;
      size_t count;
      int root;
      const char *datatype;
      uint8_t nChannels;
      uint8_t nWarps;
      const char *algo;
      const char *proto;
    } coll;
    struct {
      uint8_t channelId;
      uint64_t pTimer;
    } kernelCh;
    char pad[128];
  };
} descr_v4;

typedef union {
  struct { uint64_t pTimer; } kernelCh;
  char pad[16];
} state_args_v4;

typedef struct {
  const char *name;
  ncclResult_t (*init)(void **context, int *eActivationMask, const char *commName, uint64_t commHash, int nNodes,
                       int nranks, int rank, void *logfn);
  ncclResult_t (*startEvent)(void *context, void **eHandle, descr_v4 *eDescr);
  ncclResult_t (*stopEvent)(void *eHandle);
  ncclResult_t (*recordEventState)(void *eHandle, int eState, state_args_v4 *eStateArgs);
  ncclResult_t (*finalize)(void *context);
} profiler_v4;

typedef struct {
  FILE *out;
  int rank;
} context_t;

typedef struct {
  int type;
  context_t *ctx;
  /* collective */
  uint64_t seq;
  const char *func, *algo, *proto;
  size_t count;
  int nChannels;
  /* kernel channel */
  void *parent;
  int channel;
  uint64_t start, stop;
} event_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static ncclResult_t chInit(void **context, int *mask, const char *commName, uint64_t commHash, int nNodes, int nranks,
                           int rank, void *logfn) {
  (void)commName; (void)nNodes; (void)nranks; (void)logfn;
  context_t *c = calloc(1, sizeof(*c));
  const char *dir = getenv("CHPROF_DIR");
  char path[4096];
  snprintf(path, sizeof(path), "%s/chprof-%d-%d-%llx.txt", dir ? dir : ".", (int)getpid(), rank,
           (unsigned long long)commHash);
  c->out = fopen(path, "w");
  c->rank = rank;
  *context = c;
  *mask = c->out ? (EV_COLL | EV_KERNEL_CH) : 0;
  return 0;
}

static ncclResult_t chStart(void *context, void **handle, descr_v4 *d) {
  *handle = NULL;
  if (d->type == EV_COLL) {
    event_t *e = calloc(1, sizeof(*e));
    e->type = EV_COLL; e->ctx = context;
    e->seq = d->coll.seqNumber; e->func = d->coll.func; e->count = d->coll.count;
    e->nChannels = d->coll.nChannels; e->algo = d->coll.algo; e->proto = d->coll.proto;
    *handle = e;
  } else if (d->type == EV_KERNEL_CH) {
    event_t *e = calloc(1, sizeof(*e));
    e->type = EV_KERNEL_CH; e->ctx = context; e->parent = d->parentObj;
    e->channel = d->kernelCh.channelId; e->start = d->kernelCh.pTimer;
    *handle = e;
  }
  return 0;
}

static ncclResult_t chState(void *handle, int state, state_args_v4 *args) {
  event_t *e = handle;
  if (e && e->type == EV_KERNEL_CH && state == STATE_KERNEL_CH_STOP && args) e->stop = args->kernelCh.pTimer;
  return 0;
}

static ncclResult_t chStop(void *handle) {
  event_t *e = handle;
  if (!e) return 0;
  if (e->type == EV_KERNEL_CH) {
    event_t *p = e->parent;   /* the collective's event: kept (never freed) so that late channels can read it */
    pthread_mutex_lock(&lock);
    if (e->ctx && e->ctx->out)
      fprintf(e->ctx->out, "%llu %s %zu %d %s %s %d %llu %llu\n", p ? (unsigned long long)p->seq : 0ULL,
              p && p->func ? p->func : "?", p ? p->count : 0, p ? p->nChannels : 0, p && p->algo ? p->algo : "?",
              p && p->proto ? p->proto : "?", e->channel, (unsigned long long)e->start, (unsigned long long)e->stop);
    pthread_mutex_unlock(&lock);
    free(e);
  }
  return 0;
}

static ncclResult_t chFinalize(void *context) {
  context_t *c = context;
  if (c && c->out) fclose(c->out);
  free(c);
  return 0;
}

profiler_v4 ncclProfiler_v4 = {"chprof", chInit, chStart, chStop, chState, chFinalize};
