//! What Linux says about a child process: resident memory now and at its peak, CPU time used.

/// `VmRSS` and `VmHWM` (peak resident set) of `pid`, in KiB.
pub fn rss_kib(pid: u32) -> Option<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|v| v.parse::<u64>().ok())
    };
    Some((field("VmRSS:")?, field("VmHWM:")?))
}

/// User + system CPU time of `pid` so far, in seconds.
pub fn cpu_secs(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which may hold spaces) start at state (field 3).
    let rest = stat.rsplit_once(')')?.1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = f.get(11)?.parse().ok()?;
    let stime: f64 = f.get(12)?.parse().ok()?;
    Some((utime + stime) / clock_ticks())
}

/// CPU time of each of `pid`'s threads so far, in nanoseconds, by thread id: its time on a CPU
/// as the scheduler accounts it (`/proc/<pid>/task/<tid>/schedstat`, first field), exact where
/// [`cpu_secs`] counts in clock ticks. A thread gone while the reading is taken is left out;
/// `None` when no thread of the process could be read (no such process, or a kernel without
/// schedstats).
pub fn cpu_ns(pid: u32) -> Option<std::collections::BTreeMap<u32, u64>> {
    let mut threads = std::collections::BTreeMap::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))
        .ok()?
        .flatten()
    {
        let tid = task
            .file_name()
            .to_str()
            .and_then(|t| t.parse::<u32>().ok());
        let ns = std::fs::read_to_string(task.path().join("schedstat"))
            .ok()
            .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok());
        if let (Some(tid), Some(ns)) = (tid, ns) {
            threads.insert(tid, ns);
        }
    }
    (!threads.is_empty()).then_some(threads)
}

/// The CPU time, in nanoseconds, `pid`'s threads used between two readings of [`cpu_ns`]: each
/// thread's growth, a thread started since counted whole. A thread that ended between them is
/// not counted at all (its time is gone from the second reading), so the figure is a lower
/// bound when threads come and go.
pub fn cpu_ns_between(
    before: &std::collections::BTreeMap<u32, u64>,
    after: &std::collections::BTreeMap<u32, u64>,
) -> u64 {
    after
        .iter()
        .map(|(tid, ns)| ns.saturating_sub(before.get(tid).copied().unwrap_or(0)))
        .sum()
}

fn clock_ticks() -> f64 {
    // USER_HZ is 100 on every Linux architecture this runs on.
    100.0
}

/// One line describing this machine: CPUs, model, load averages.
pub fn machine() -> serde_json::Value {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .map(|v| v.trim_start_matches([' ', '\t', ':']).trim().to_string())
        .unwrap_or_default();
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let mem = std::fs::read_to_string("/proc/meminfo")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:").map(|v| v.trim().to_string()))
        .unwrap_or_default();
    serde_json::json!({
        "cpus": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
        "cpu_model": model,
        "mem_total": mem,
        "loadavg": load.split_whitespace().take(3).collect::<Vec<_>>().join(" "),
        "kernel": std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default().trim(),
    })
}
