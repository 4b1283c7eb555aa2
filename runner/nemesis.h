/*
 * nemesis.h - random fault schedules drawn from a seed, and the verdict a
 * swarm run is judged by (`chandy swarm`, `chandy run --swarm MODE`).
 *
 * A schedule is a pure function of the scenario (its cluster, input, job
 * and configuration), the seed and the mode: drawn with the seeded
 * generator (engine/rng.h) on a stream of its own, it replaces the
 * scenario's `events`. So `chandy run SCENARIO --seed N --swarm MODE`
 * draws again exactly the schedule seed N drew in the swarm, and the run
 * is the same run.
 *
 * What it draws: 1 to 5 faults (crashes of task managers with or without
 * restart, slow CPUs, slow links, links down, partitions, damaged
 * checkpoints, savepoints and stop-and-resume), each at a time or
 * triggered by a moment (a checkpoint triggered or completed, a state
 * upload or a restore started; where the input's partitions end at
 * different times, a subtask's finish) so that faults land in windows
 * that last microseconds. Two schedules in five add one or two faults
 * inside the processes (store errors, late store completions, failed
 * allocations; drawn on a stream of their own). A third of the safety
 * schedules begin with a focused
 * pair: checkpoint n's channels skewed as it is triggered (a slow link or
 * CPU on a task manager in use), then a crash as it completes, so that
 * the checkpoint restored is one whose alignment lasted tens of
 * milliseconds and whose commit may not have reached the sinks. A
 * scenario whose own timeline rescales (scenarios/swarm-rescale.json)
 * gets one or two rescales per schedule, drawn on a stream of their own:
 * each forward group of operators whose state may move (assign.h) at
 * even odds to a parallelism from 1 to the most the timeline gives it,
 * within the cluster with a spare kept, via a savepoint or the next
 * checkpoint, at a time or after a checkpoint; half of them with a crash
 * of a task manager it runs on from the moment its deployment goes out
 * (rescale_deployed), within its download, rebuild or catch-up. It keeps
 * every schedule recoverable: crashes only on task
 * managers, for good only while a spare is left, no more disruptive
 * faults than the restart strategy accepts, and a damaged checkpoint only
 * when an older one is kept.
 */
#ifndef CK_NEMESIS_H
#define CK_NEMESIS_H

#include <cjson/cJSON.h>

#include "run.h"
#include "scenario.h"
#include "verify.h"

typedef enum ck_nemesis_mode {
    CK_NEMESIS_OFF = 0,
    CK_NEMESIS_SAFETY,   /* the output keeps its guarantee on every seed */
    CK_NEMESIS_LIVENESS, /* faults stop early; the job then finishes within a bound */
} ck_nemesis_mode;

/* "safety" or "liveness" ("off" for none). */
const char *ck_nemesis_mode_name(ck_nemesis_mode m);

/* Parses "safety" or "liveness"; 0, or CK_EINVAL. */
int ck_nemesis_mode_parse(const char *s, ck_nemesis_mode *m);

/* Replaces sc's events with the schedule of `seed` under `mode`. */
void ck_nemesis_draw(ck_scenario *sc, uint64_t seed, ck_nemesis_mode mode);

/* sc's events in the scenario format (the "events" list); NULL when out of memory. */
cJSON *ck_nemesis_events_json(const ck_scenario *sc);

/* One short line for fault f ("crash tm1 300us after checkpoint_completed#2, back after 1.2s"). */
void ck_nemesis_describe(const ck_fault *f, int ntm, char *buf, size_t len);

typedef struct ck_nemesis_verdict {
    int ok;
    char why[400];   /* what broke, or what held */
    double bound_s;  /* liveness: when the job had to be finished by (simulated s) */
} ck_nemesis_verdict;

/*
 * Judges a finished run under mode:
 *   safety: the output kept the run's guarantee and the job FINISHED, and
 *     every restore that fell back to an older checkpoint failed on a file
 *     the schedule damaged (r->unexplained, ck_run_judge_fallbacks); a job
 *     that FAILED because its restart strategy gave up, or because a
 *     damaged checkpoint left none to restore, passes when what it
 *     committed holds nothing duplicated (exactly-once) and nothing
 *     unexpected: the schedule was allowed to cause those failures;
 *   liveness: safety, and the job FINISHED by the bound: the end of the
 *     input or of the last fault (as it happened), whichever is later, plus
 *     10 s, twice heartbeat.timeout and the restart strategy's longest wait.
 */
void ck_nemesis_judge(const ck_run *r, const ck_verdict *v, ck_nemesis_mode mode,
                      ck_nemesis_verdict *out);

/* run.json's "swarm" object: mode, the drawn events, the verdict. */
cJSON *ck_nemesis_report(const ck_run *r, ck_nemesis_mode mode, const ck_nemesis_verdict *nv);

#endif
