//! The tables of the footprint experiment, in summary.md of `wasm-bench footprint` and of the
//! evaluation alike: memory and client latencies per executor build and code path, then the
//! executor's own timings.

use std::fmt::Write as _;

use super::{FootprintRun, measure::StepMedians};
use crate::stats::Summary;

impl FootprintRun<'_> {
    /// The sizes and load average, then the memory and latency table and the executor's own
    /// timings, a row per executor build and code path.
    pub fn markdown(&self) -> String {
        let mut out = self.heading();
        self.memory_table(&mut out);
        self.executor_table(&mut out);
        out
    }

    fn heading(&self) -> String {
        let mut out = format!(
            "`{}`, {} containers per executor and code path ({} of distinct actions), {} warm /runs, {} /inits of code no container holds ({} of distinct actions); load average {} → {}{}\n\n",
            self.module,
            self.containers,
            self.distinct_containers,
            self.requests,
            self.new_inits,
            self.distinct_new_inits,
            self.loadavg_start,
            self.loadavg_end,
            if self.quick {
                " (quick: the figures mean nothing)"
            } else {
                ""
            }
        );
        if self.precompiled_distinct > 0 {
            let _ = write!(
                out,
                "Precompiled distinct actions: {} containers, each of an artifact of its own.\n\n",
                self.precompiled_distinct
            );
        }
        if !self.precompiler_flags.is_empty() {
            let _ = write!(
                out,
                "Every artifact precompiled with `{}`.\n\n",
                self.precompiler_flags.join(" ")
            );
        }
        out
    }

    fn memory_table(&self, out: &mut String) {
        out.push_str("| runtime | executor | code | idle RSS | RSS after /inits | after one /run each | per warm container (RSS / PSS) | /init p50 | /init p99 | warm /run p50 | warm /run p99 |\n");
        out.push_str("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        for r in &self.results {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {:.1} MiB | {:.1} MiB | {:.1} MiB | {:.0} / {:.0} KiB | {} | {} | {} | {} |",
                r.runtime,
                r.executor,
                r.code,
                r.idle.total_kib as f64 / 1024.0,
                r.after_init.total_kib as f64 / 1024.0,
                r.after_one_run_each.total_kib as f64 / 1024.0,
                r.per_warm_container_kib,
                r.per_warm_container_pss_kib,
                us(&r.init, false),
                us(&r.init, true),
                us(&r.warm_run, false),
                us(&r.warm_run, true),
            );
        }
    }

    fn executor_table(&self, out: &mut String) {
        out.push_str("\nInside the executor (`took_us` of its log; p50, p90 in brackets): /init of code no container holds (with the medians of the module load's steps) and of code a live container holds, and the warm /runs above:\n\n");
        out.push_str("| runtime | executor | code | new: client p50 | new: executor | decode | verify | load | seen: executor | warm /run: executor | its CPU per warm /run |\n");
        out.push_str("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        let p50_p90 = |s: &Option<Summary>| {
            s.as_ref().map_or("-".into(), |s| {
                format!("{:.0} µs ({:.0})", s.p50_us, s.p90_us)
            })
        };
        for r in &self.results {
            let step = |f: fn(&StepMedians) -> f64| {
                r.new_init_steps_p50_us
                    .as_ref()
                    .map_or("-".into(), |s| format!("{:.0} µs", f(s)))
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                r.runtime,
                r.executor,
                r.code,
                us(&r.new_init, false),
                p50_p90(&r.new_init_executor),
                step(|s| s.decode),
                step(|s| s.verify),
                step(|s| s.load),
                p50_p90(&r.seen_init_executor),
                p50_p90(&r.warm_run_executor),
                r.warm_run_cpu_us
                    .map_or("-".into(), |us| format!("{us:.0} µs")),
            );
        }
    }
}

/// The p50 (or p99) of `s` in µs, or a dash.
fn us(s: &Option<Summary>, p99: bool) -> String {
    s.as_ref().map_or("-".into(), |s| {
        format!("{:.0} µs", if p99 { s.p99_us } else { s.p50_us })
    })
}
