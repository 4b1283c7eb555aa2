/*
 * swarm.h - `chandy swarm`: one scenario over many seeds, each seed with a
 * fault schedule of its own (runner/nemesis.h), in the spirit of
 * FoundationDB's simulation testing and Jepsen's nemesis.
 *
 *   chandy swarm SCENARIO.json --seeds A..B [--mode safety|liveness]
 *                [--jobs N] [--shard I/N] [--timeout S] [--keep]
 *                [--no-check-invariants] --out DIR
 *   chandy swarm --merge DIR... --out DIR
 *
 * Every seed runs as a child process (`chandy run SCENARIO --seed N
 * --swarm MODE --out DIR/runs/N -q --check-invariants`), N at a time, so
 * that a seed that crashes, aborts or breaks an invariant (engine/
 * invariant.h: checked after every step whatever the build, unless
 * --no-check-invariants) is a violation and not the end of the swarm; one still
 * running after --timeout seconds of wall-clock time (default 600) is
 * killed and is a violation too. A passing
 * seed's run directory is deleted (unless --keep); a failing seed (and with
 * --keep every seed) keeps it and gets DIR/seeds/N.json, the scenario with the drawn schedule, which
 * `chandy run DIR/seeds/N.json --seed N` runs again. DIR/swarm.json holds
 * the totals and, per seed, the schedule, the verdict, the exit status and
 * a one-line replay command.
 *
 * --shard I/N runs only the seeds with seed % N == I, so that a scheduler
 * (GNU parallel, Slurm job arrays, Kubernetes indexed jobs) can spread one
 * range over machines; --merge combines their swarm.json files, counting
 * the results themselves: complete only when every seed of the declared
 * ranges has one (exit 1 otherwise, saying how many have none); a seed
 * that is not an integer from 0 to 2^53 - 1, or a result its file did not
 * run, is refused (exit 2) naming the file and the JSON path.
 */
#ifndef CK_SWARM_H
#define CK_SWARM_H

/*
 * Runs `chandy swarm` with its arguments (after the word "swarm"); argv0 is
 * how the user called chandy, for the replay commands. Returns the exit
 * status: 0 (every seed passed), 1 (a seed failed; merging: or a seed of
 * the declared ranges has no result), 2 (bad options, scenario or
 * swarm.json, or the output directory cannot be used).
 */
int ck_swarm_main(int argc, char **argv, const char *argv0);

#endif
