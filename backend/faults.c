#include "faults.h"

#include <stdio.h>

/* The actions of the events timeline, in the order of ck_fault_kind. */
const char *const ck_crash_kind_names[] = {"process", "host", NULL};

const char *const ck_fault_names[] = {"crash",     "slow_cpu",  "slow_link",
                                      "link_down", "partition", "savepoint",
                                      "corrupt_checkpoint", "slow_operator", "hot_key", "slow_sink", NULL};

/* The moments of triggered events, in the order of ck_moment (from 1). */
const char *const ck_moment_names[] = {"checkpoint_triggered", "checkpoint_completed",
                                       "upload_started", "restore_started", NULL};

const char *ck_moment_name(ck_moment m)
{
    return m > CK_MOMENT_NONE && m < CK_MOMENT_COUNT ? ck_moment_names[m - 1] : "time";
}

int ck_fault_involves(const ck_fault *f, int host)
{
    switch (f->kind) {
    case CK_FAULT_CRASH:
    case CK_FAULT_LINK_DOWN:
        return f->host == host;
    case CK_FAULT_PARTITION:
        for (int i = 0; i < f->nside; i++)
            if (f->side_host[i] == host)
                return 1;
        return 0;
    default:
        return 0;
    }
}

int ck_fault_cuts(const ck_fault *f, int a, int b)
{
    if (f->kind != CK_FAULT_PARTITION)
        return 0;
    int sa = -1, sb = -1;
    for (int i = 0; i < f->nside; i++) {
        if (f->side_host[i] == a)
            sa = f->side[i];
        if (f->side_host[i] == b)
            sb = f->side[i];
    }
    return sa >= 0 && sb >= 0 && sa != sb;
}

const char *ck_fault_name(ck_fault_kind k)
{
    return (unsigned)k <= CK_FAULT_SLOW_SINK ? ck_fault_names[k] : "?";
}

void ck_host_name(int h, int ntm, char *buf, size_t len)
{
    if (h < ntm)
        snprintf(buf, len, "tm%d", h);
    else if (h == ntm)
        snprintf(buf, len, "jm");
    else
        snprintf(buf, len, "store");
}

ck_time ck_fault_end(const ck_fault *f)
{
    return f->duration > 0 ? f->at + f->duration : CK_TIME_NEVER;
}

