/*
 * faults.h - what a backend is told about the cluster it runs on and the
 * faults it injects: the cluster's description, and the events timeline
 * (crashes, slow CPUs and links, cuts, savepoints, damaged checkpoints),
 * timed or triggered by a moment of the run.
 *
 * Three kinds act inside the processes, as FoundationDB's BUGGIFY does:
 * a host's store operations that fail with an I/O error, its store
 * completions that come late, an allocation at a named point of the
 * engine that fails (backend/buggify.h draws them, each host on a stream
 * of the run's seed).
 *
 * These are plain values: the runner reads them from a scenario file
 * (runner/scenario.h), a backend acts on them. Names are those of the
 * scenario format (docs/SCENARIOS.md).
 */
#ifndef CK_FAULTS_H
#define CK_FAULTS_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"

typedef struct ck_cluster_spec {
    int taskmanagers;     /* 0: as many as the job needs */
    int cores;
    double speed;         /* flops per second per core */
    double link_bw;       /* bytes per second, each host's link */
    int64_t link_lat;     /* ns */
    double store_bw;      /* store host's link */
    int64_t store_lat;
    double disk_read_bw, disk_write_bw; /* the store's */
    double local_disk_bw; /* each task manager's local disk (RocksDB's files) */
    char network_model[16];
    char transfer_model[8]; /* what times the job's transfers: "auto", "fast", "simgrid" */
    char platform[512];   /* a SimGrid platform file to use instead, or "" */
} ck_cluster_spec;

typedef enum ck_fault_kind {
    CK_FAULT_CRASH,              /* a task manager's machine goes down (and may come back) */
    CK_FAULT_SLOW_CPU,           /* a host computes at a fraction of its speed */
    CK_FAULT_SLOW_LINK,          /* a host's link loses bandwidth and/or gains latency */
    CK_FAULT_LINK_DOWN,          /* a host's link carries nothing */
    CK_FAULT_PARTITION,          /* two groups of hosts cannot reach each other */
    CK_FAULT_SAVEPOINT,          /* a savepoint is triggered (and the job may stop) */
    CK_FAULT_CORRUPT_CHECKPOINT, /* a file of the latest completed checkpoint is damaged */
    CK_FAULT_SLOW_OPERATOR,      /* an operator's CPU cost per record grows (the engine
                                  * applies it: ck_job_env.slowdowns; backends only time it) */
    CK_FAULT_HOT_KEY,            /* a share of the input goes to one key (the workload has
                                  * it: ck_workload_spec.hot; backends only time it) */
    CK_FAULT_SLOW_SINK,          /* a sink's external system accepts writes more slowly
                                  * (the engine applies it, as slow_operator) */
    CK_FAULT_STORE_ERRORS,       /* a host's store operations fail with CK_EIO (each with
                                  * probability prob) */
    CK_FAULT_STORE_DELAY,        /* ...their completions come late (by up to `delay`) */
    CK_FAULT_ALLOC_FAILURE,      /* an allocation at a point of the engine (CK_POINT_*)
                                  * fails, as out of memory */
    /* output faults: a sink's external system misbehaves with the next
     * transaction the sink commits (io/sinkfs.h), a known answer the
     * verification must find exactly */
    CK_FAULT_SINK_DUPLICATE,     /* ...applies it twice */
    CK_FAULT_SINK_DROP,          /* ...loses it */
    CK_FAULT_SINK_CORRUPT,       /* ...changes one record's value */
    CK_FAULT_RESCALE,            /* the job's parallelism changes: stop-with-savepoint and a
                                  * restart from it, or (the adaptive scheduler) a restart
                                  * from the next completed checkpoint */
} ck_fault_kind;
#define CK_FAULT_KINDS (CK_FAULT_RESCALE + 1)

/* How a rescale goes (ck_fault.via), in the order of ck_rescale_via_names:
 * the engine's CK_RESCALE_VIA_* (engine/jobmanager.h) are the same. */
extern const char *const ck_rescale_via_names[];

/* Whether a fault of kind k acts inside the processes (buggify.h). */
static inline int ck_fault_in_process(ck_fault_kind k)
{
    return k == CK_FAULT_STORE_ERRORS || k == CK_FAULT_STORE_DELAY || k == CK_FAULT_ALLOC_FAILURE;
}

/* The store operations a store_errors fails (ck_fault.ops). */
enum {
    CK_STORE_OP_PUT = 1,    /* uploads: puts, appends, puts of local files */
    CK_STORE_OP_GET = 2,    /* downloads, whole or ranged */
    CK_STORE_OP_DELETE = 4, /* deletes */
    CK_STORE_OP_ALL = 7
};
/* "put", "get", "delete", in the order of the bits; ending in NULL. */
extern const char *const ck_store_op_names[];
/* "restore", "snapshot", "deploy": CK_POINT_* (platform.h) from 1; ending in NULL. */
extern const char *const ck_alloc_point_names[];

/* 1 for the output faults (sink_duplicate, sink_drop, sink_corrupt). */
static inline int ck_fault_is_output(ck_fault_kind k)
{
    return k == CK_FAULT_SINK_DUPLICATE || k == CK_FAULT_SINK_DROP || k == CK_FAULT_SINK_CORRUPT;
}

/*
 * A triggered event starts `at` after a moment of the run instead of at a
 * time: the nth time that moment happens. The backend sees the moments
 * from outside the engine, in the messages and store operations it
 * carries.
 */
typedef enum ck_moment {
    CK_MOMENT_NONE,                 /* `at` is a time from the start */
    CK_MOMENT_CHECKPOINT_TRIGGERED, /* the job manager triggers a checkpoint (any kind) */
    CK_MOMENT_CHECKPOINT_COMPLETED, /* the job manager sends a checkpoint's completion */
    CK_MOMENT_UPLOAD_STARTED,       /* a subtask starts writing its state to the store */
    CK_MOMENT_RESTORE_STARTED,      /* a subtask starts reading state from the store */
    /* what a subtask's state backend does (ck_platform_ops.note) */
    CK_MOMENT_STATE_FLUSH,          /* RocksDB flushed a memtable to a file */
    CK_MOMENT_STATE_COMPACTION,     /* ...and compacted (its disk work follows) */
    CK_MOMENT_MATERIALIZATION,      /* a changelog backend starts a materialization */
    CK_MOMENT_CHANGELOG_UPLOAD,     /* ...starts uploading a changelog segment */
    CK_MOMENT_SUBTASK_FINISHED,     /* a subtask tells the job manager it finished (its input
                                     * ended and a checkpoint it took then completed) */
    CK_MOMENT_RESCALE_DEPLOYED,     /* the job manager deploys a rescale's job (a generation
                                     * of the job's graph not deployed before, graph.h) */
    CK_MOMENT_COUNT
} ck_moment;

/* The moment's name in scenario files ("checkpoint_completed", ...). */
const char *ck_moment_name(ck_moment m);

#define CK_MAX_FAULTS 64
#define CK_MAX_PARTITION_HOSTS 64
#define CK_FAULT_MAX_OPS 64 /* = CK_MAX_OPS (engine/graph.h) */

/*
 * Hosts of a fault: task managers are 0..ntm-1, the job manager is ntm and
 * the store is ntm+1 (the order of the generated platform).
 */
typedef struct ck_fault {
    ck_time at;            /* from the start, or after the moment */
    ck_moment moment;      /* CK_MOMENT_NONE, or what `at` counts from */
    int nth;               /* the moment's occurrence (1: the first) */
    ck_fault_kind kind;
    int host;              /* crash, slow_cpu, slow_link, link_down; store_errors,
                            * store_delay, alloc_failure: the host whose operations
                            * are hit, -1 for every host's; -1 for the others */
    int op;                /* slow_operator, slow_sink, output faults: the operator's
                            * index in the job (a sink's for the last two) */
    ck_time duration;      /* how long it lasts; 0: for good (crash: restart_after) */
    double factor;         /* slow_cpu: speed multiplier; slow_link: bandwidth multiplier;
                            * slow_operator: CPU per record multiplier (> 1);
                            * slow_sink: write time multiplier (> 1);
                            * hot_key: the share of the records (0 to 1) */
    ck_time latency;       /* slow_link: latency added to the link */
    int how;               /* corrupt_checkpoint: CK_DAMAGE_*, */
    int file;              /* ...of which file: CK_DAMAGE_FILE_* */
    int crash;             /* crash: CK_CRASH_PROCESS or CK_CRASH_HOST */
    int stop;              /* savepoint: stop the job once it is taken */
    ck_time resume_after;  /* savepoint with stop: restart from it after this (0: the job ends) */
    double prob;           /* store_errors, store_delay, alloc_failure: the chance that
                            * each operation (allocation) is hit while it lasts */
    int ops;               /* store_errors: CK_STORE_OP_* bits */
    int point;             /* alloc_failure: CK_POINT_* */
    ck_time delay;         /* store_delay: a completion hit is late by up to this */
    int nside;             /* partition: hosts named, and the side each is on (0/1) */
    int side_host[CK_MAX_PARTITION_HOSTS];
    uint8_t side[CK_MAX_PARTITION_HOSTS];
    int via;               /* rescale: 0 savepoint, 1 checkpoint (ck_rescale_via_names) */
    int rescale;           /* rescale: its number among the timeline's rescales (0: first) */
    uint16_t par[CK_FAULT_MAX_OPS]; /* rescale: per operator of the job (by index), the
                                     * parallelism it names (0: the operator keeps its) */
} ck_fault;

/* The request a savepoint or rescale event sends the job manager, as `flink
 * savepoint`, `flink stop` or a rescale would: a malloc'd message (*n
 * bytes) from CK_EP_CLIENT, or NULL when out of memory. */
uint8_t *ck_fault_request(const ck_fault *f, size_t *n);

enum { CK_DAMAGE_BITFLIP = 0, CK_DAMAGE_TRUNCATE = 1 };
/* The file a corrupt_checkpoint damages in the latest completed checkpoint:
 * its largest state file in its own directory (a full checkpoint's), or of
 * the files it refers to, the largest of a kind (handle.h), preferring one
 * it uploaded itself: a RocksDB SST file, a changelog segment, a
 * materialization's file. */
enum {
    CK_DAMAGE_FILE_STATE = 0,
    CK_DAMAGE_FILE_SST = 1,
    CK_DAMAGE_FILE_CHANGELOG = 2,
    CK_DAMAGE_FILE_MATERIALIZATION = 3
};
extern const char *const ck_damage_file_names[];

/* Applies corrupt_checkpoint f to the store under store_dir (job job_id);
 * *detail says what it damaged, or why it could not, and key (keylen
 * bytes) holds the store key of the file it damaged ("" when none).
 * Returns 0, CK_ENOTFOUND (no completed checkpoint, or no such file),
 * CK_E*. */
CK_MUST_CHECK
int ck_fault_damage(const ck_fault *f, const char *store_dir, const char *job_id, char *detail,
                    size_t len, char *damaged, size_t keylen);

/* Arms output fault i (an index into the timeline) in the sinks'
 * directory sink_dir (io/sinkfs.h: the next commit of its sink applies
 * it). 0, or CK_EIO with *detail saying why. */
int ck_fault_output_arm(int i, const char *sink_dir, char *detail, size_t len);

/*
 * What a crash takes down. A killed process leaves its host up: the host's
 * kernel resets the process's connections, and every peer that talked to
 * it notices at once. A lost host (power, kernel panic, its network gone)
 * resets nothing: its peers hear silence, and the job manager notices by
 * heartbeat.timeout. If the host comes back, its new kernel refuses the old
 * connections: peers notice then, and the job manager's heartbeat RPCs to
 * it fail (heartbeat.rpc-failure-threshold; CK_PEER_REFUSED).
 */
enum { CK_CRASH_PROCESS = 0, CK_CRASH_HOST = 1 };

/* "process", "host"; ending in NULL. */
extern const char *const ck_crash_kind_names[];

/* Names in scenario files, in the order of ck_fault_kind and of ck_moment
 * (from CK_MOMENT_CHECKPOINT_TRIGGERED), each list ending in NULL. */
extern const char *const ck_fault_names[];
extern const char *const ck_moment_names[];

/* 1 when the fault acts on task manager `host` (crashes it, cuts it off). */
int ck_fault_involves(const ck_fault *f, int host);

/* The action's name in scenario files ("crash", "slow_link", ...). */
const char *ck_fault_name(ck_fault_kind k);

/* The name of host index h ("tm3", "jm", "store"). */
void ck_host_name(int h, int ntm, char *buf, size_t len);

/* When a fault that lasts ends (at + duration), or CK_TIME_NEVER; for a
 * triggered fault, relative to when it started. */
ck_time ck_fault_end(const ck_fault *f);

/* 1 when hosts a and b are on opposite sides of a partition fault. */
int ck_fault_cuts(const ck_fault *f, int a, int b);

#endif
