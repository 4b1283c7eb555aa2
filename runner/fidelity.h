/*
 * fidelity.h - `chandy fidelity SCENARIO.json --out DIR [--seed N]
 * [--band F]`: the same scenario and seed under SimGrid (DIR/sim) and
 * over sockets (DIR/real), one after the other (the real run alone on the
 * machine), then the fidelity report (report.h, ck_report_fidelity) in
 * DIR: each figure side by side, their ratio and a verdict against the
 * band (default 0.25: within +-25 %).
 */
#ifndef CK_FIDELITY_H
#define CK_FIDELITY_H

/* 0 when both runs wrote their run.json and the report was written, 1
 * when not, 2 on bad usage. */
int ck_fidelity_main(int argc, char **argv);

#endif
