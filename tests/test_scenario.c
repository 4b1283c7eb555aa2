/*
 * test_scenario.c - scenario validation: every mistake is one line naming
 * the file, the JSON path and what was expected; a good file loads with
 * its values and Flink's defaults.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "error.h"
#include "expect.h"
#include "scenario.h"
#include "segpool.h"

static const char *base =
    "{\n"
    "  \"name\": \"t\", \"seed\": 3,\n"
    "  \"cluster\": {\"taskmanagers\": 2, \"link\": {\"bandwidth\": \"1GBps\", \"latency\": \"100us\"}},\n"
    "  \"workload\": {\"duration\": \"2 s\", \"rate\": 1000, \"keys\": 10, \"partitions\": 2},\n"
    "  \"job\": {\"operators\": [\n"
    "    {\"name\": \"src\", \"type\": \"source\", \"parallelism\": 2},\n"
    "    {\"name\": \"agg\", \"type\": \"aggregate\", \"fn\": \"sum\", \"parallelism\": 2},\n"
    "    {\"name\": \"out\", \"type\": \"sink\", \"parallelism\": 2}\n"
    "  ]},\n"
    "  \"config\": {\"execution.buffer-timeout\": \"10 ms\", \"taskmanager.memory.segment-size\": \"4kb\"},\n"
    "  \"expect\": {\"correctness.ok\": true}\n"
    "}\n";

static ck_scenario sc;

/* Replaces the first `from` in base by `to`, parses, returns the error text. */
static int try(const char *from, const char *to, char *err, size_t errlen)
{
    char text[4096];
    const char *at = strstr(base, from);
    assert_non_null(at);
    snprintf(text, sizeof(text), "%.*s%s%s", (int)(at - base), base, to, at + strlen(from));
    int rc = ck_scenario_parse(&sc, "dir/t.json", text, err, errlen);
    if (rc == 0)
        ck_scenario_free(&sc);
    return rc;
}

static void test_good_file(void **state)
{
    (void)state;
    char err[1200];
    assert_int_equal(ck_scenario_parse(&sc, "dir/t.json", base, err, sizeof(err)), 0);
    assert_string_equal(sc.name, "t");
    assert_int_equal(sc.seed, 3);
    assert_int_equal(sc.cluster.taskmanagers, 2);
    assert_true(sc.cluster.link_bw == 1e9);
    assert_true(sc.cluster.link_lat == 100000);
    assert_true(sc.workload.duration == 2 * CK_NS_PER_S);
    assert_int_equal(sc.job.nops, 3);
    assert_int_equal(sc.job.ops[1].ship, CK_SHIP_HASH); /* keyed: hash by default */
    assert_int_equal(sc.job.ops[1].agg_fn, CK_AGG_SUM);
    assert_true(ck_cfg(&sc.cfg, CK_CFG_BUFFER_TIMEOUT) == 10 * CK_NS_PER_MS);
    assert_true(ck_cfg(&sc.cfg, CK_CFG_SEGMENT_SIZE) == 4096);
    /* Flink's defaults where the file is silent. */
    assert_true(ck_cfg(&sc.cfg, CK_CFG_BUFFERS_PER_CHANNEL) == 2);
    assert_true(ck_cfg(&sc.cfg, CK_CFG_FLOATING_PER_GATE) == 8);
    assert_true(ck_cfg(&sc.cfg, CK_CFG_AUTO_WATERMARK_INTERVAL) == 200 * CK_NS_PER_MS);
    assert_int_equal(sc.graph.spec.ops[1].max_parallelism, 128);
    assert_int_equal(sc.graph.nv, 2); /* agg and out chained */
    assert_non_null(sc.expect);
    assert_int_equal(sc.workload.npart_ends, 0); /* every partition lasts the duration */
    ck_scenario_free(&sc);
    /* Partitions that end at times of their own: the workload says when. */
    char text[4096];
    const char *at = strstr(base, "\"partitions\": 2");
    snprintf(text, sizeof(text), "%.*s\"partition_durations\": [500, \"2 s\"], %s",
             (int)(at - base), base, at);
    assert_int_equal(ck_scenario_parse(&sc, "dir/t.json", text, err, sizeof(err)), 0);
    assert_int_equal(sc.workload.npart_ends, 2);
    assert_true(sc.workload.part_end[0] == 500 * CK_NS_PER_MS);
    assert_true(sc.workload.part_end[1] == 2 * CK_NS_PER_S);
    ck_scenario_free(&sc);
}

typedef struct bad {
    const char *from, *to;
    const char *want; /* substring of the one-line error */
} bad;

static const bad cases[] = {
    {"\"seed\": 3", "\"seed\": 3, \"colour\": 1", "dir/t.json: colour: unknown key"},
    {"\"seed\": 3", "\"seed\": \"three\"", "dir/t.json: seed: expected an integer"},
    {"\"seed\": 3", "\"seed\": -1", "seed: expected an integer from 0"},
    {"\"taskmanagers\": 2", "\"taskmanagers\": 0", "cluster.taskmanagers: expected an integer from 1 to 4096, got 0"},
    {"\"taskmanagers\": 2", "\"taskmanagers\": 1", "cluster.taskmanagers: the job needs 2 slots"},
    {"\"1GBps\"", "\"1 parsec\"", "cluster.link.bandwidth: expected a bandwidth"},
    {"\"100us\"", "\"soon\"", "cluster.link.latency: expected a duration"},
    {"\"duration\": \"2 s\", ", "", "workload.duration: missing (required)"},
    {"\"rate\": 1000", "\"rate\": -5", "workload.rate: expected a number from 0"},
    {"\"rate\": 1000", "\"rate\": [{\"at\": \"1 s\", \"rate\": 5}, {\"at\": \"0 s\", \"rate\": 1}]",
     "workload.rate[1]: steps must be in increasing order"},
    {"\"keys\": 10", "\"keys\": 1.5", "workload.keys: expected an integer"},
    {"\"partitions\": 2", "\"partitions\": 2, \"distribution\": \"pareto\"",
     "workload.distribution: expected one of \"uniform\", \"zipf\", got \"pareto\""},
    {"\"partitions\": 2", "\"partitions\": 2, \"partition_durations\": [\"1 s\"]",
     "workload.partition_durations: expected a list of 2 durations, one per partition"},
    {"\"partitions\": 2", "\"partitions\": 2, \"partition_durations\": [\"1 s\", \"3 s\"]",
     "workload.partition_durations[1]: expected a duration from 0 ms to 2000 ms"},
    {"\"partitions\": 2", "\"partitions\": 2, \"partition_durations\": [\"1 s\", \"soon\"]",
     "workload.partition_durations[1]: expected a duration"},
    {"\"partitions\": 2", "\"partitions\": 300, \"partition_durations\": []",
     "workload.partition_durations: takes at most 256 partitions (the topic has 300)"},
    {"\"type\": \"aggregate\"", "\"type\": \"join\"", "job.operators[1].type: expected one of"},
    {"\"fn\": \"sum\"", "\"fn\": \"avg\"", "job.operators[1].fn: expected one of \"count\", \"sum\""},
    {"\"fn\": \"sum\"", "\"fn\": \"sum\", \"size\": \"1 s\"", "job.operators[1].size: not a setting of aggregate operators"},
    {"\"fn\": \"sum\"", "\"fn\": \"sum\", \"count\": 5",
     "job.operators[1].count: not a setting of aggregate operators"},
    {"{\"name\": \"out\", \"type\": \"sink\", \"parallelism\": 2}",
     "{\"name\": \"b\", \"type\": \"buffer\", \"parallelism\": 2}, "
     "{\"name\": \"out\", \"type\": \"sink\", \"parallelism\": 2}",
     "job.operators[2].count: missing (required)"},
    {"{\"name\": \"out\", \"type\": \"sink\", \"parallelism\": 2}",
     "{\"name\": \"b\", \"type\": \"buffer\", \"count\": 0, \"parallelism\": 2}, "
     "{\"name\": \"out\", \"type\": \"sink\", \"parallelism\": 2}",
     "job.operators[2].count: expected an integer from 1 to 100000, got 0"},
    {"{\"name\": \"out\", \"type\": \"sink\", \"parallelism\": 2}",
     "{\"name\": \"b\", \"type\": \"buffer\", \"count\": 4, \"count_seen\": 1, "
     "\"parallelism\": 2}, {\"name\": \"out\", \"type\": \"sink\", \"parallelism\": 2}",
     "job.operators[2].count_seen: expected true or false"},
    {"\"fn\": \"sum\"", "\"fn\": \"sum\", \"partition\": \"forward\"",
     "job.operators[1]: aggregate operators are keyed"},
    {"{\"name\": \"out\", \"type\": \"sink\", \"parallelism\": 2}",
     "{\"name\": \"out\", \"type\": \"sink\", \"parallelism\": 3}",
     "job.operators[2]: forward partitioning needs equal parallelism"},
    {"{\"name\": \"out\", \"type\": \"sink\", \"parallelism\": 2}",
     "{\"name\": \"out\", \"type\": \"sink\", \"parallelism\": 2, \"input\": \"nope\"}",
     "job.operators[2].input: expected the name of an operator listed before this one"},
    {"{\"name\": \"out\", \"type\": \"sink\", \"parallelism\": 2}",
     "{\"name\": \"src\", \"type\": \"sink\", \"parallelism\": 2}",
     "job.operators[2].name: operator name \"src\" is used twice"},
    {"{\"name\": \"out\", \"type\": \"sink\", \"parallelism\": 2}",
     "{\"name\": \"out\", \"type\": \"sink\", \"parallelism\": 2, \"uid\": \"src\"}",
     "job.operators[2].uid: expected a uid no other operator has, got \"src\" (that of \"src\")"},
    {"{\"name\": \"out\", \"type\": \"sink\", \"parallelism\": 2}",
     "{\"name\": \"out\", \"type\": \"sink\", \"parallelism\": 2, \"uid\": \"\"}",
     "job.operators[2].uid: expected a non-empty string of at most 47 bytes, got \"\""},
    {"{\"name\": \"out\", \"type\": \"sink\", \"parallelism\": 2}",
     "{\"name\": \"out\", \"type\": \"sink\", \"parallelism\": 2, \"uid\": 7}",
     "job.operators[2].uid: expected a non-empty string"},
    {"{\"name\": \"out\", \"type\": \"sink\", \"parallelism\": 2}",
     "{\"name\": \"out\", \"type\": \"map\", \"parallelism\": 2}",
     "job.operators[2]: \"out\" has no downstream operator"},
    {"\"parallelism\": 2}", "\"parallelism\": 2, \"max_parallelism\": 1}",
     "job.operators[0]: parallelism 2 exceeds max parallelism 1"},
    {"\"10 ms\"", "\"10 fortnights\"", "config.execution.buffer-timeout: expected a duration"},
    {"\"4kb\"", "\"100b\"", "config.taskmanager.memory.segment-size: expected a memory size from 4 kb"},
    {"\"4kb\"", "\"12kb\"", "config.taskmanager.memory.segment-size: expected a power of two from 4 kb to 16 mb, got 12 kb"},
    {"\"4kb\"", "\"4kb\", \"execution.checkpointing.interval\": \"5 ms\"",
     "config.execution.checkpointing.interval: expected 0 (no checkpoints) or at least 10 ms, got 5 ms"},
    {"\"4kb\"", "\"4kb\", \"execution.checkpointing.timeout\": \"5 ms\"",
     "config.execution.checkpointing.timeout: expected a duration from 10 ms"},
    {"\"4kb\"", "\"4kb\", \"heartbeat.interval\": \"5 s\", \"heartbeat.timeout\": \"1 s\"",
     "config.heartbeat.timeout: 1 s is shorter than heartbeat.interval (5 s)"},
    {"\"4kb\"", "\"4kb\", \"execution.buffer-timeout.interval\": \"5 ms\"",
     "config.execution.buffer-timeout.interval: key given twice: execution.buffer-timeout and execution.buffer-timeout.interval are names of execution.buffer-timeout.interval"},
    {"\"4kb\"", "\"4kb\", \"execution.buffer-timeout.enabled\": false, \"execution.buffer-timeout\": 0",
     "config.execution.buffer-timeout: key given twice"},
    {"\"10 ms\"", "\"0 ms\", \"execution.buffer-timeout.enabled\": false",
     "config.execution.buffer-timeout.enabled: false contradicts a buffer timeout of 0"},
    {"\"4kb\"", "\"4kb\", \"heartbeat.rpc-failure-threshold\": 0",
     "config.heartbeat.rpc-failure-threshold: expected a positive number of failed RPCs, or -1"},
    {"\"4kb\"", "\"4kb\", \"jobmanager.execution.failover-strategy\": \"regional\"",
     "config.jobmanager.execution.failover-strategy: expected one of"},
    {"\"4kb\"", "\"4kb\", \"restart-strategy.type\": \"default\"",
     "config.restart-strategy.type: expected one of"},
    {"\"4kb\"", "\"4kb\", \"restart-strategy.exponential-delay.backoff-multiplier\": 1.0",
     "config.restart-strategy.exponential-delay.backoff-multiplier: expected a decimal number from 1.001"},
    {"\"4kb\"", "\"4kb\", \"restart-strategy.exponential-delay.initial-backoff\": \"2 min\"",
     "config.restart-strategy.exponential-delay.initial-backoff: 2 min is more than max-backoff (1 min)"},
    {"\"execution.buffer-timeout\"", "\"execution.buffer-timeoutt\"",
     "config.execution.buffer-timeoutt: unknown configuration key"},
    {"\"correctness.ok\": true", "\"correctness.ok\": {\"~=\": 1}", "expect.correctness.ok: unknown comparison"},
    {"\"correctness.ok\": true", "\"records_out\": {\">\": \"many\"}", "expect.records_out: \">\" compares numbers"},
    {"\"name\": \"t\",", "\"name\": \"t\",,", "dir/t.json: line 2, column"},
    {"\"name\": \"t\",", "\"name\": \"t\", \"name\": \"u\",", "dir/t.json: name: key given twice"},
    /* the events timeline */
    {"\"expect\"", "\"events\": [{\"at\": \"1 s\", \"action\": \"slow_operator\", \"operator\": \"nope\", \"factor\": 4, \"duration\": \"1 s\"}], \"expect\"",
     "events[0].operator: no operator named \"nope\" in the job"},
    {"\"expect\"", "\"events\": [{\"at\": \"1 s\", \"action\": \"slow_operator\", \"operator\": \"agg\", \"factor\": 0.5, \"duration\": \"1 s\"}], \"expect\"",
     "events[0].factor: expected a number from 1.001 to 10000, got 0.5"},
    {"\"expect\"", "\"events\": [{\"at\": \"1 s\", \"action\": \"slow_operator\", \"operator\": \"agg\", \"factor\": 4}], \"expect\"",
     "events[0].duration: "},
    {"\"expect\"", "\"events\": [{\"after\": {\"moment\": \"checkpoint_completed\"}, \"at\": \"1 s\", \"action\": \"slow_operator\", \"operator\": \"agg\", \"factor\": 4, \"duration\": \"1 s\"}], \"expect\"",
     "events[0]: \"slow_operator\" starts at a time (\"at\"), not \"after\" a moment"},
    {"\"expect\"", "\"events\": [{\"at\": \"1 s\", \"action\": \"slow_sink\", \"operator\": \"out\", \"factor\": 4, \"duration\": \"1 s\"}], \"expect\"",
     "events[0].operator: \"out\" is not a sink with a \"write_time\""},
    {"\"expect\"", "\"events\": [{\"at\": \"1 s\", \"action\": \"slow_sink\", \"operator\": \"agg\", \"factor\": 4, \"duration\": \"1 s\"}], \"expect\"",
     "events[0].operator: \"agg\" is not a sink with a \"write_time\""},
    {"\"expect\"", "\"events\": [{\"at\": \"1 s\", \"action\": \"sink_duplicate\", \"sink\": \"agg\"}], \"expect\"",
     "events[0].sink: expected the name of a sink of the job, got \"agg\""},
    {"\"expect\"", "\"events\": [{\"at\": \"1 s\", \"action\": \"sink_drop\", \"sink\": \"nope\"}], \"expect\"",
     "events[0].sink: expected the name of a sink of the job, got \"nope\""},
    {"\"expect\"", "\"events\": [{\"at\": \"1 s\", \"action\": \"sink_corrupt\"}], \"expect\"",
     "events[0].sink: "},
    {"\"expect\"", "\"events\": [{\"at\": \"1 s\", \"action\": \"sink_corrupt\", \"sink\": \"out\", \"duration\": \"1 s\"}], \"expect\"",
     "events[0].duration: unknown key"},
    {"\"name\": \"agg\"", "\"name\": \"agg\", \"write_time\": \"1 ms\"",
     "job.operators[1].write_time: "},
    {"\"expect\"", "\"events\": [{\"at\": \"1 s\", \"action\": \"hot_key\", \"share\": 1.5, \"duration\": \"1 s\"}], \"expect\"",
     "events[0].share: expected a number from 0 to 1, got 1.5"},
    {"\"expect\"", "\"events\": [{\"at\": \"1 s\", \"action\": \"hot_key\", \"share\": 0.5, \"host\": \"tm0\", \"duration\": \"1 s\"}], \"expect\"",
     "events[0].host: unknown key"},
    {"\"expect\"", "\"events\": [{\"at\": \"1 s\", \"action\": \"explode\"}], \"expect\"",
     "events[0].action: expected one of \"crash\""},
    {"\"expect\"", "\"events\": [{\"at\": \"1 s\", \"action\": \"crash\"}], \"expect\"",
     "events[0]: action \"crash\" needs a \"host\""},
    {"\"expect\"", "\"events\": [{\"at\": \"1 s\", \"action\": \"crash\", \"host\": \"jm\"}], \"expect\"",
     "events[0].host: expected a task manager, tm0 to tm1, got \"jm\""},
    {"\"expect\"", "\"events\": [{\"at\": \"1 s\", \"action\": \"crash\", \"host\": \"tm0\", \"factor\": 2}], \"expect\"",
     "events[0].factor: unknown key"},
    {"\"expect\"", "\"events\": [{\"at\": \"1 s\", \"action\": \"crash\", \"host\": \"tm0\", \"kind\": \"machine\"}], \"expect\"",
     "events[0].kind: expected one of \"process\", \"host\""},
    {"\"expect\"", "\"events\": [{\"at\": \"1 s\", \"action\": \"slow_cpu\", \"host\": \"store\", \"factor\": 0}], \"expect\"",
     "events[0].factor: expected a number from 0.001 to 1"},
    {"\"expect\"", "\"events\": [{\"at\": \"1 s\", \"action\": \"slow_link\", \"host\": \"tm1\"}], \"expect\"",
     "events[0]: action \"slow_link\" needs a \"factor\" below 1 or a \"latency\""},
    {"\"expect\"", "\"events\": [{\"at\": \"1 s\", \"action\": \"partition\", \"groups\": [[\"jm\"], [\"tm1\", \"jm\"]]}], \"expect\"",
     "events[0].groups[1][1]: \"jm\" is named twice"},
    {"\"expect\"", "\"events\": [{\"at\": \"1 s\", \"action\": \"partition\", \"groups\": [[\"jm\"]]}], \"expect\"",
     "events[0].groups: expected two lists of hosts"},
    {"\"expect\"", "\"events\": [{\"at\": \"1 s\", \"action\": \"link_down\", \"host\": \"tm7\"}], \"expect\"",
     "events[0].host: expected a host: tm0 to tm1, jm or store, got \"tm7\""},
    {"\"expect\"", "\"events\": [{\"at\": \"1 s\", \"action\": \"corrupt_checkpoint\", \"how\": \"melt\"}], \"expect\"",
     "events[0].how: expected one of \"bitflip\", \"truncate\""},
    {"\"expect\"", "\"events\": [{\"at\": \"1 s\", \"action\": \"corrupt_checkpoint\", \"file\": \"wal\"}], \"expect\"",
     "events[0].file: expected one of \"state\", \"sst\", \"changelog\", \"materialization\""},
    {"\"expect\"", "\"events\": [{\"at\": \"2 s\", \"action\": \"savepoint\"}, {\"at\": \"1 s\", \"action\": \"savepoint\"}], \"expect\"",
     "events[1]: events must be in order of \"at\""},
    /* rescale: operators, parallelism, via, the job it makes, the slots */
    {"\"expect\"", "\"events\": [{\"at\": \"1 s\", \"action\": \"rescale\", \"parallelism\": {\"nope\": 2}}], \"expect\"",
     "events[0].parallelism.nope: no operator named \"nope\" in the job"},
    {"\"expect\"", "\"events\": [{\"at\": \"1 s\", \"action\": \"rescale\", \"parallelism\": {\"agg\": 0}}], \"expect\"",
     "events[0].parallelism.agg: expected a parallelism from 1 to 128 (the max parallelism "
     "of \"agg\"), got 0"},
    {"\"expect\"", "\"events\": [{\"at\": \"1 s\", \"action\": \"rescale\", \"parallelism\": {\"agg\": 129}}], \"expect\"",
     "events[0].parallelism.agg: expected a parallelism from 1 to 128"},
    {"\"expect\"", "\"events\": [{\"at\": \"1 s\", \"action\": \"rescale\", \"parallelism\": {\"agg\": 1.5}}], \"expect\"",
     "events[0].parallelism.agg: expected a parallelism from 1 to 128"},
    {"\"expect\"", "\"events\": [{\"at\": \"1 s\", \"action\": \"rescale\", \"parallelism\": {}}], \"expect\"",
     "events[0].parallelism: expected an object of operator names and their new parallelism"},
    {"\"expect\"", "\"events\": [{\"at\": \"1 s\", \"action\": \"rescale\"}], \"expect\"",
     "events[0].parallelism: expected an object of operator names"},
    {"\"expect\"", "\"events\": [{\"at\": \"1 s\", \"action\": \"rescale\", \"parallelism\": {\"agg\": 2}, \"via\": \"restart\"}], \"expect\"",
     "events[0].via: expected one of \"savepoint\", \"checkpoint\""},
    {"\"expect\"", "\"events\": [{\"at\": \"1 s\", \"action\": \"rescale\", \"parallelism\": {\"agg\": 2}, \"via\": \"checkpoint\"}], \"expect\"",
     "events[0].via: \"checkpoint\" restarts from the latest completed checkpoint, and "
     "execution.checkpointing.interval is 0"},
    {"\"expect\"", "\"events\": [{\"at\": \"1 s\", \"action\": \"rescale\", \"parallelism\": {\"agg\": 3, \"out\": 3}}], \"expect\"",
     "events[0].parallelism: the job needs 3 slots at this parallelism, and the cluster's 2 "
     "task managers"},
    {"\"expect\"", "\"events\": [{\"at\": \"1 s\", \"action\": \"rescale\", \"parallelism\": {\"out\": 1}}], \"expect\"",
     "events[0].parallelism: \"out\" (1) reads \"agg\" (2) over a forward edge: give both "
     "the same parallelism (a chain, Flink's job vertex, has one)"},
    {"\"expect\"", "\"events\": [{\"at\": \"1 s\", \"action\": \"rescale\", \"parallelism\": {\"agg\": 2}, \"host\": \"tm0\"}], \"expect\"",
     "events[0].host: unknown key"},
};

static void test_bad_files(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char err[1200] = "";
        int rc = try(cases[i].from, cases[i].to, err, sizeof(err));
        if (rc == 0 || !strstr(err, cases[i].want) || strchr(err, '\n')) {
            print_error("case %zu: rc %d, error \"%s\", wanted \"%s\"\n", i, rc, err,
                        cases[i].want);
            fail();
        }
        assert_int_equal(rc, CK_EINVAL);
    }
}

static void test_events(void **state)
{
    (void)state;
    char text[4096], err[1200];
    const char *ev =
        "\"events\": ["
        "{\"at\": \"1 s\", \"action\": \"crash\", \"host\": \"tm1\", \"restart_after\": \"2 s\"},"
        "{\"at\": \"1 s\", \"action\": \"slow_cpu\", \"host\": \"store\", \"factor\": 0.25},"
        "{\"at\": \"2 s\", \"action\": \"slow_link\", \"host\": \"jm\", \"latency\": \"20 ms\","
        " \"duration\": \"1 s\"},"
        "{\"at\": \"3 s\", \"action\": \"partition\", \"groups\": [[\"jm\", \"tm0\"], [\"tm1\"]],"
        " \"duration\": \"500 ms\"},"
        "{\"at\": \"4 s\", \"action\": \"savepoint\", \"stop\": true},"
        "{\"at\": \"5 s\", \"action\": \"corrupt_checkpoint\", \"how\": \"truncate\","
        " \"file\": \"changelog\"}],"
        " \"expect\"";
    const char *at = strstr(base, "\"expect\"");
    snprintf(text, sizeof(text), "%.*s%s%s", (int)(at - base), base, ev, at + 8);
    assert_int_equal(ck_scenario_parse(&sc, "dir/t.json", text, err, sizeof(err)), 0);
    assert_int_equal(sc.nfaults, 6);
    const ck_fault *f = sc.faults;
    assert_int_equal(f[0].kind, CK_FAULT_CRASH);
    assert_int_equal(f[0].host, 1);
    assert_true(f[0].duration == 2 * CK_NS_PER_S);
    assert_true(ck_fault_involves(&f[0], 1) && !ck_fault_involves(&f[0], 0));
    assert_int_equal(f[1].kind, CK_FAULT_SLOW_CPU);
    assert_int_equal(f[1].host, 3); /* tm0, tm1, jm, store */
    assert_true(f[1].factor == 0.25);
    assert_true(ck_fault_end(&f[1]) == CK_TIME_NEVER);
    assert_int_equal(f[2].host, 2);
    assert_true(f[2].latency == 20 * CK_NS_PER_MS && f[2].factor == 1.0);
    assert_true(ck_fault_end(&f[2]) == 3 * CK_NS_PER_S);
    assert_int_equal(f[3].kind, CK_FAULT_PARTITION);
    assert_true(ck_fault_cuts(&f[3], 2, 1) && ck_fault_cuts(&f[3], 1, 0));
    assert_false(ck_fault_cuts(&f[3], 0, 2));
    assert_false(ck_fault_cuts(&f[3], 3, 1)); /* the store is on neither side */
    assert_true(ck_fault_involves(&f[3], 0) && ck_fault_involves(&f[3], 1));
    assert_int_equal(f[4].kind, CK_FAULT_SAVEPOINT);
    assert_int_equal(f[4].stop, 1);
    assert_int_equal(f[5].how, CK_DAMAGE_TRUNCATE);
    assert_int_equal(f[5].file, CK_DAMAGE_FILE_CHANGELOG);
    assert_string_equal(ck_fault_name(f[5].kind), "corrupt_checkpoint");
    ck_scenario_free(&sc);
}

/* Rescales: each starts from the parallelism the one before it left, and
 * reads back from what the nemesis writes. */
static void test_rescale_events(void **state)
{
    (void)state;
    char text[4096], err[1200];
    const char *ev =
        "\"events\": ["
        "{\"at\": \"1 s\", \"action\": \"rescale\", \"parallelism\": {\"agg\": 1, \"out\": 1}},"
        "{\"after\": {\"moment\": \"checkpoint_completed\"}, \"at\": \"10 ms\","
        " \"action\": \"rescale\", \"parallelism\": {\"src\": 1}, \"via\": \"checkpoint\"}],"
        " \"config\": {\"execution.checkpointing.interval\": \"100 ms\"}, \"expect\"";
    const char *at = strstr(base, "\"config\"");
    const char *ex = strstr(base, "\"expect\"");
    snprintf(text, sizeof(text), "%.*s%s%s", (int)(at - base), base, ev, ex + 8);
    int rc = ck_scenario_parse(&sc, "dir/t.json", text, err, sizeof(err));
    if (rc)
        print_error("%s\n", err);
    assert_int_equal(rc, 0);
    assert_int_equal(sc.nfaults, 2);
    const ck_fault *f = sc.faults;
    assert_int_equal(f[0].kind, CK_FAULT_RESCALE);
    assert_string_equal(ck_fault_name(f[0].kind), "rescale");
    assert_int_equal(f[0].via, 0); /* savepoint, the default */
    assert_int_equal(f[0].rescale, 0);
    assert_int_equal(f[0].par[0], 2);
    assert_int_equal(f[0].par[1], 1);
    assert_int_equal(f[0].par[2], 1);
    assert_int_equal(f[1].via, 1);
    assert_int_equal(f[1].rescale, 1);
    assert_int_equal(f[1].moment, CK_MOMENT_CHECKPOINT_COMPLETED);
    assert_int_equal(f[1].par[0], 1); /* named */
    assert_int_equal(f[1].par[1], 1); /* as the first rescale left it */
    assert_int_equal(f[1].par[2], 1);
    ck_scenario_free(&sc);
}

static void test_unreadable_file(void **state)
{
    (void)state;
    char err[1200];
    assert_int_equal(ck_scenario_load(&sc, "/nonexistent/x.json", err, sizeof(err)), CK_EIO);
    assert_non_null(strstr(err, "/nonexistent/x.json: cannot open"));
}

static void test_expect_eval(void **state)
{
    (void)state;
    cJSON *run = cJSON_Parse("{\"a\": {\"b\": [1, 2, 3]}, \"ok\": true, \"s\": \"x\"}");
    cJSON *ex = cJSON_Parse("{\"a.b[-1]\": {\">=\": 3, \"<\": 4}, \"ok\": true, \"s\": \"x\"}");
    char report[512];
    assert_int_equal(ck_expect_eval(ex, run, report, sizeof(report)), 0);
    cJSON_Delete(ex);
    ex = cJSON_Parse("{\"a.b[0]\": {\">\": 1}, \"ok\": false}");
    assert_int_equal(ck_expect_eval(ex, run, report, sizeof(report)), 2);
    assert_non_null(strstr(report, "expect failed: a.b[0] = 1, wanted > 1"));
    cJSON_Delete(ex);
    cJSON_Delete(run);
}

/*
 * A path absent from a finished run's run.json is a failed assertion (the
 * run exits 1), saying which part is missing; a path that cannot name
 * anything is refused with the scenario, before the run (exit 2).
 */
static void test_expect_paths(void **state)
{
    (void)state;
    cJSON *run = cJSON_Parse("{\"a\": {\"b\": [1, 2, 3]}, \"ok\": true, "
                             "\"config\": {\"x.y\": 5}}");
    static const struct {
        const char *expect;
        int failures;
        const char *says;
    } absent[] = {
        {"{\"a.c\": 1}", 1, "expect failed: a.c is absent from run.json (a has no \"c\")"},
        {"{\"nope\": {\">\": 1, \"<\": 9}}", 2, "nope is absent from run.json (run.json has no "
                                             "\"nope\")"},
        {"{\"a.b[3]\": 1}", 1, "a.b[3] is absent from run.json (a.b has 3 entries)"},
        {"{\"a.b[-4]\": 1}", 1, "a.b[-4] is absent from run.json (a.b has 3 entries)"},
        {"{\"ok.x\": 1}", 1, "ok.x is absent from run.json (ok is true, not an object)"},
        {"{\"a[0]\": 1}", 1, "a[0] is absent from run.json (a is an object, not an array)"},
        {"{\"config.x.y\": 5}", 1, "(config has no \"x\")"},
    };
    char report[512];
    for (size_t i = 0; i < sizeof(absent) / sizeof(absent[0]); i++) {
        cJSON *ex = cJSON_Parse(absent[i].expect);
        const char *at;
        char why[300];
        assert_int_equal(ck_expect_check(ex, &at, why, sizeof(why)), 0);
        assert_int_equal(ck_expect_eval(ex, run, report, sizeof(report)), absent[i].failures);
        if (!strstr(report, absent[i].says))
            fprintf(stderr, "report: %s\nwanted: %s\n", report, absent[i].says);
        assert_non_null(strstr(report, absent[i].says));
        cJSON_Delete(ex);
    }
    /* A key with dots, in quotes; an absent one beside a failing one. */
    cJSON *ex = cJSON_Parse("{\"config[\\\"x.y\\\"]\": 5, \"a.b[-1]\": 3, \"a.z\": 1, "
                            "\"ok\": false}");
    assert_int_equal(ck_expect_eval(ex, run, report, sizeof(report)), 2);
    assert_non_null(strstr(report, "expect failed: a.z is absent"));
    assert_non_null(strstr(report, "\nexpect failed: ok = true, wanted false"));
    cJSON_Delete(ex);
    cJSON_Delete(run);

    /* Paths that cannot name anything: refused when the scenario loads. */
    static const char *const malformed[] = {
        "a..b", ".a", "a.", "a[", "a[]", "a[x]", "a[-]", "a[1", "a[1]b", "a]", "a b",
        "a[1234567890]", "[\\\"\\\"]", "a[\\\"b]", "a\\tb",
    };
    for (size_t i = 0; i < sizeof(malformed) / sizeof(malformed[0]); i++) {
        char err[1200];
        char expect[200];
        snprintf(expect, sizeof(expect), "\"expect\": {\"%s\": 1}", malformed[i]);
        assert_int_equal(try("\"expect\": {\"correctness.ok\": true}", expect, err, sizeof(err)),
                         CK_EINVAL);
        if (!strstr(err, "dir/t.json: expect.") || !strstr(err, ": not a run.json path: "))
            fprintf(stderr, "%s: %s\n", malformed[i], err);
        assert_non_null(strstr(err, "dir/t.json: expect."));
        assert_non_null(strstr(err, ": not a run.json path: "));
        assert_null(strchr(err, '\n'));
    }
    /* And good ones load. */
    static const char *const good[] = {"correctness.ok", "checkpoints[-1].bytes",
                                       "config[\\\"execution.buffer-timeout\\\"]",
                                       "timeseries[0].latency_p99_ms", "a[0][1]"};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        char err[1200];
        char expect[200];
        snprintf(expect, sizeof(expect), "\"expect\": {\"%s\": 1}", good[i]);
        assert_int_equal(try("\"expect\": {\"correctness.ok\": true}", expect, err, sizeof(err)),
                         0);
    }
}

/* Every string of a scenario is UTF-8 text that cJSON keeps whole: a
 * \u0000 escape (cut at the NUL, "ev\u0000il" would be read as "ev" and
 * pass the name rule) or bytes that are not UTF-8, in a value or a key,
 * anywhere, is one line naming the JSON path and the string as written. */
static void test_strings_are_text(void **state)
{
    (void)state;
    static const struct {
        const char *from, *to, *want;
    } texts[] = {
        {"\"name\": \"t\"", "\"name\": \"ev\\u0000il\"",
         "dir/t.json: name: expected a string of UTF-8 text without \\u0000, got "
         "\"ev\\u0000il\": a \\u0000 (NUL) would cut it short"},
        {"\"seed\"", "\"description\": \"a \\u0000\", \"seed\"", "dir/t.json: description: "},
        {"\"name\": \"src\"", "\"name\": \"sr\\u0000c\"", "job.operators[0].name: expected"},
        {"\"10 ms\"", "\"10\\u0000 ms\"", "config.execution.buffer-timeout: expected a string"},
        {"\"keys\"", "\"k\\u0000eys\"",
         "workload: expected a key of UTF-8 text without \\u0000, got \"k\\u0000eys\""},
        {"\"correctness.ok\"", "\"correctness.ok\\u0000\"", "expect: expected a key"},
        /* bytes that are not UTF-8 */
        {"\"seed\"", "\"description\": \"caf\xe9\", \"seed\"",
         "description: expected a string of UTF-8 text without \\u0000, got \"caf\\xe9\": it "
         "holds bytes that are not UTF-8"},
        {"\"name\": \"src\"", "\"name\": \"s\xc3\"", "job.operators[0].name: expected a string"},
        {"\"name\": \"src\"", "\"name\": \"\xc0\xaf\"", "got \"\\xc0\\xaf\""}, /* overlong '/' */
        {"\"name\": \"src\"", "\"name\": \"\xed\xa0\x80\"", "not UTF-8"},       /* a surrogate */
        {"\"name\": \"src\"", "\"name\": \"\xf4\x90\x80\x80\"", "not UTF-8"},   /* > U+10FFFF */
        {"\"name\": \"src\"", "\"name\": \"\x80\"", "not UTF-8"},               /* stray */
        {"\"name\": \"src\"", "\"name\": \"\xf8\x88\x80\x80\x80\"", "not UTF-8"}, /* 5 bytes */
        {"\"keys\"", "\"k\xffys\"", "workload: expected a key"},
        {"\"sum\"", "\"s\xe2\x82um\"", "job.operators[1].fn: expected a string"}, /* cut short */
    };
    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
        char err[1200] = "";
        int rc = try(texts[i].from, texts[i].to, err, sizeof(err));
        if (rc != CK_EINVAL || !strstr(err, texts[i].want) || strchr(err, '\n')) {
            print_error("case %zu: rc %d, error \"%s\", wanted \"%s\"\n", i, rc, err, texts[i].want);
            fail();
        }
    }
    /* Text is fine, however it is written: raw UTF-8, escapes, a
     * surrogate pair, and a backslash before "u0000". */
    static const char *const good[] = {
        "\"description\": \"caf\xc3\xa9 \xe4\xb8\xad \xf0\x9f\x98\x80\", \"seed\"",
        "\"description\": \"caf\\u00e9 \\ud83d\\ude00\", \"seed\"",
        "\"description\": \"not a NUL: \\\\u0000\", \"seed\"",
    };
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        char err[1200] = "";
        if (try("\"seed\"", good[i], err, sizeof(err)) != 0) {
            print_error("good case %zu: %s\n", i, err);
            fail();
        }
    }
}

/* base with `extra` added to its config object; parses and returns rc. */
static int with_config(const char *extra, char *err, size_t errlen)
{
    char to[1024];
    snprintf(to, sizeof(to), "\"4kb\", %s", extra);
    char text[4096];
    const char *at = strstr(base, "\"4kb\"");
    snprintf(text, sizeof(text), "%.*s%s%s", (int)(at - base), base, to, at + strlen("\"4kb\""));
    return ck_scenario_parse(&sc, "dir/t.json", text, err, errlen);
}

/* A value key id takes, as JSON text (its default, or a choice). */
static void some_value(ck_cfg_id id, char *buf, size_t len)
{
    const ck_cfg_def *d = ck_config_def(id);
    char v[64];
    if (d->type == CK_CFG_PATH)
        snprintf(v, sizeof(v), "/some/savepoint");
    else if (id == CK_CFG_RS_TYPE)
        snprintf(v, sizeof(v), "fixed-delay"); /* its default is the key unset */
    else
        ck_config_format(id, d->def, v, sizeof(v));
    snprintf(buf, len, "\"%s\"", v);
}

/*
 * The names Flink 1.20 still accepts for keys it renamed are taken, with
 * one warning each naming the key to use; given with the new name too,
 * they are the same key given twice. An unknown key gets the closest
 * known one as a suggestion.
 */
static void test_deprecated_keys(void **state)
{
    (void)state;
    char err[1200], extra[512], val[80];
    int names = 0;
    for (int id = 0; id < CK_CFG_COUNT; id++)
        for (int k = 0; ck_config_deprecated_name((ck_cfg_id)id, k); k++) {
            const char *old = ck_config_deprecated_name((ck_cfg_id)id, k);
            if (id == CK_CFG_BUFFER_TIMEOUT)
                continue; /* base sets it under that name already */
            int flink = -1;
            assert_int_equal(ck_config_deprecated(old, &flink), id);
            assert_int_equal(ck_config_find(old), id);
            some_value((ck_cfg_id)id, val, sizeof(val));
            snprintf(extra, sizeof(extra), "\"%s\": %s", old, val);
            if (with_config(extra, err, sizeof(err)))
                fail_msg("%s: %s", old, err);
            assert_true(sc.cfg.set[id]);
            /* base's execution.buffer-timeout, and this one */
            assert_int_equal(sc.warnings.n, 2);
            char want[300];
            snprintf(want, sizeof(want), "dir/t.json: config.%s: deprecated, use %s instead", old,
                     ck_config_def((ck_cfg_id)id)->key);
            if (!strstr(sc.warnings.v[1], want))
                fail_msg("warning \"%s\", wanted \"%s\"", sc.warnings.v[1], want);
            assert_non_null(strstr(sc.warnings.v[1], flink ? "Flink 1.20 takes the old name too"
                                                           : "no Flink release takes"));
            ck_scenario_free(&sc);
            names++;
        }
    assert_true(names >= 20);
    /* Flink's own renames (its option classes' withDeprecatedKeys). */
    static const struct {
        const char *old;
        ck_cfg_id id;
    } flink_names[] = {
        {"state.backend", CK_CFG_STATE_BACKEND},
        {"state.backend.incremental", CK_CFG_CP_INCREMENTAL},
        {"execution.checkpointing.unaligned", CK_CFG_CP_UNALIGNED},
        {"execution.checkpointing.alignment-timeout", CK_CFG_CP_ALIGNED_TIMEOUT},
        {"state.backend.changelog.enabled", CK_CFG_CLOG_ENABLED},
        {"state.backend.changelog.periodic-materialize.interval", CK_CFG_CLOG_MATERIALIZE},
        {"state.backend.changelog.max-failures-allowed", CK_CFG_CLOG_MAX_FAILURES},
        {"dstl.dfs.preemptive-persist-threshold", CK_CFG_CLOG_PERSIST_THRESHOLD},
        {"execution.buffer-timeout", CK_CFG_BUFFER_TIMEOUT},
        {"taskmanager.network.memory.max", CK_CFG_NET_MAX},
        {"state.checkpoints.num-retained", CK_CFG_CP_RETAINED},
        {"state.storage.fs.memory-threshold", CK_CFG_CP_MEMORY_THRESHOLD},
        {"execution.savepoint.path", CK_CFG_RECOVERY_PATH},
        {"execution.savepoint-restore-mode", CK_CFG_CLAIM_MODE},
        {"restart-strategy", CK_CFG_RS_TYPE},
        {"pipeline.operator-chaining", CK_CFG_CHAINING},
    };
    for (size_t i = 0; i < sizeof(flink_names) / sizeof(flink_names[0]); i++) {
        int flink = 0;
        assert_int_equal(ck_config_deprecated(flink_names[i].old, &flink), flink_names[i].id);
        assert_int_equal(flink, 1);
    }
    /* Its value is taken: rocksdb under state.backend. */
    assert_int_equal(with_config("\"state.backend\": \"rocksdb\"", err, sizeof(err)), 0);
    assert_int_equal(ck_cfg(&sc.cfg, CK_CFG_STATE_BACKEND), 1);
    ck_scenario_free(&sc);
    /* Current names warn of nothing. */
    assert_int_equal(with_config("\"state.backend.type\": \"rocksdb\"", err, sizeof(err)), 0);
    assert_int_equal(sc.warnings.n, 1); /* base's execution.buffer-timeout only */
    ck_scenario_free(&sc);
    /* The same key under two names. */
    assert_int_equal(with_config("\"state.backend\": \"rocksdb\", \"state.backend.type\": "
                                 "\"hashmap\"",
                                 err, sizeof(err)),
                     CK_EINVAL);
    assert_non_null(strstr(err, "config.state.backend.type: key given twice: state.backend and "
                                "state.backend.type are names of state.backend.type"));
    /* Did you mean: a slip in a current or a deprecated name. */
    static const struct {
        const char *key, *near;
    } slips[] = {
        {"state.backend.typ", "state.backend.type"},
        {"execution.checkpointing.unalinged.enabled", "execution.checkpointing.unaligned.enabled"},
        {"state.backend.changelog.enable", "state.changelog.enabled"},
        {"taskmanager.memory.network.maximum", "taskmanager.memory.network.max"},
        {"restart-strategy.fixed-delay.attempt", "restart-strategy.fixed-delay.attempts"},
        {"heartbeat.timout", "heartbeat.timeout"},
    };
    for (size_t i = 0; i < sizeof(slips) / sizeof(slips[0]); i++) {
        snprintf(extra, sizeof(extra), "\"%s\": 1", slips[i].key);
        assert_int_equal(with_config(extra, err, sizeof(err)), CK_EINVAL);
        char want[300];
        snprintf(want, sizeof(want), "config.%s: unknown configuration key: did you mean `%s`?",
                 slips[i].key, slips[i].near);
        if (!strstr(err, want))
            fail_msg("error \"%s\", wanted \"%s\"", err, want);
    }
    /* Nothing close: no guess. */
    assert_int_equal(with_config("\"colour\": 1", err, sizeof(err)), CK_EINVAL);
    assert_non_null(strstr(err, "config.colour: unknown configuration key (`chandy config`"));
    assert_null(strstr(err, "did you mean"));
}

/* Defaults and rules as Flink 1.20 has them. */
static void test_flink_defaults(void **state)
{
    (void)state;
    char err[1200], buf[64];
    ck_config c;
    ck_config_defaults(&c);
    /* TaskManagerOptions: network memory has no upper bound by default */
    assert_true(ck_cfg(&c, CK_CFG_NET_MAX) == CK_CFG_MEMORY_INFINITE);
    ck_config_format(CK_CFG_NET_MAX, ck_cfg(&c, CK_CFG_NET_MAX), buf, sizeof(buf));
    assert_string_equal(buf, "infinite");
    int64_t v = 0;
    assert_int_equal(ck_config_parse(CK_CFG_NET_MAX, "infinite", &v), 0);
    assert_true(v == CK_CFG_MEMORY_INFINITE);
    assert_int_equal(ck_config_parse(CK_CFG_NET_MIN, "infinite", &v), CK_EINVAL);
    /* ... so 10 % of a large Flink memory is not cut at 1 gb */
    assert_int_equal(with_config("\"taskmanager.memory.flink.size\": \"40 gb\"", err, sizeof(err)),
                     0);
    assert_int_equal(ck_segpool_segments(&sc.cfg), (uint32_t)((INT64_C(4096) << 20) / 4096));
    ck_scenario_free(&sc);
    /* a minimum beyond the Flink memory that holds it */
    assert_int_equal(with_config("\"taskmanager.memory.network.min\": \"2 gb\"", err,
                                 sizeof(err)),
                     CK_EINVAL);
    assert_non_null(strstr(err, "config.taskmanager.memory.network.min: 2048 mb is more than "
                                "taskmanager.memory.flink.size (1280 mb)"));
    /* the debloat minimum: taskmanager.memory.min-segment-size */
    assert_int_equal(ck_cfg(&c, CK_CFG_MIN_SEGMENT_SIZE), 256);
    assert_int_equal(with_config("\"taskmanager.memory.min-segment-size\": \"8 kb\"", err,
                                 sizeof(err)),
                     CK_EINVAL);
    assert_non_null(strstr(err, "config.taskmanager.memory.min-segment-size: 8 kb is more than "
                                "taskmanager.memory.segment-size (4 kb)"));
    assert_int_equal(with_config("\"taskmanager.memory.min-segment-size\": \"1 kb\"", err,
                                 sizeof(err)),
                     0);
    assert_int_equal(ck_cfg(&sc.cfg, CK_CFG_MIN_SEGMENT_SIZE), 1024);
    ck_scenario_free(&sc);
    /* StateChangelogOptions: a negative interval turns materialization off */
    assert_int_equal(with_config("\"state.changelog.periodic-materialize.interval\": \"-1 ms\"",
                                 err, sizeof(err)),
                     0);
    assert_true(ck_cfg(&sc.cfg, CK_CFG_CLOG_MATERIALIZE) == -CK_NS_PER_MS);
    ck_scenario_free(&sc);
    assert_int_equal(with_config("\"state.changelog.periodic-materialize.interval\": \"0 ms\"",
                                 err, sizeof(err)),
                     CK_EINVAL);
    assert_non_null(strstr(err, "expected a negative duration (no materialization) or at least "
                                "10 ms, got 0 ms"));
    assert_int_equal(ck_cfg(&c, CK_CFG_CLOG_MATERIALIZE_ENABLED), 1);
    assert_int_equal(ck_cfg(&c, CK_CFG_CLOG_MAX_FAILURES), 3);
    assert_int_equal(with_config("\"state.changelog.max-failures-allowed\": 0", err, sizeof(err)),
                     0);
    assert_int_equal(ck_cfg(&sc.cfg, CK_CFG_CLOG_MAX_FAILURES), 0);
    ck_scenario_free(&sc);
    /* CheckpointingOptions: the inline threshold's 1.20 name */
    assert_int_equal(with_config("\"execution.checkpointing.data-inline-threshold\": \"1 kb\"",
                                 err, sizeof(err)),
                     0);
    assert_int_equal(ck_cfg(&sc.cfg, CK_CFG_CP_MEMORY_THRESHOLD), 1024);
    ck_scenario_free(&sc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_file),
        cmocka_unit_test(test_bad_files),
        cmocka_unit_test(test_strings_are_text),
        cmocka_unit_test(test_events),
        cmocka_unit_test(test_rescale_events),
        cmocka_unit_test(test_unreadable_file),
        cmocka_unit_test(test_expect_eval),
        cmocka_unit_test(test_expect_paths),
        cmocka_unit_test(test_deprecated_keys),
        cmocka_unit_test(test_flink_defaults),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
