/* meter_marks.h — the marker protocol of `ecocompute meter`: the child writes `begin NAME` and
 * `end NAME` lines to the file descriptor named in ECOCOMPUTE_MARK_FD, and each pair becomes a
 * named measurement window (docs/measurement.md). */
#ifndef EC_CLI_METER_MARKS_H
#define EC_CLI_METER_MARKS_H

#include "ecocompute/meter.h"

typedef struct meter_marks meter_marks;

/* Opens the pipe and starts the reader thread; sets ECOCOMPUTE_MARK_FD in our environment so the
 * child inherits it. Returns NULL (after printing why) when the pipe or thread cannot be made. */
meter_marks *meter_marks_open(ec_meter *m);
/* After fork: the parent's copy of the write end is closed so the reader sees end of file. */
void meter_marks_parent_after_fork(meter_marks *mk);
/* After the child exited: reads what is left (without waiting for descendants that keep the pipe
 * open), stops the thread, ends windows left open (marked incomplete). */
void meter_marks_finish(meter_marks *mk);
int meter_marks_count(const meter_marks *mk);
/* Window i, in the order their `begin` lines came; *unclosed is 1 when no `end` came. */
const ec_window_result *meter_marks_window(const meter_marks *mk, int i, int *unclosed);
void meter_marks_free(meter_marks *mk);

#endif
