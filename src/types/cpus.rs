//! The CPUs this process may use, and why: its CPU affinity and its cgroup's CPU quota (cgroup v1
//! `cpu.cfs_quota_us`/`cpu.cfs_period_us` or v2 `cpu.max`, on its own group and every ancestor).
//! The readers do I/O (a few small files under `/proc/self` and `/sys/fs/cgroup`, each bounded);
//! the parsers and [`threads_for`] are pure.
//!
//! [`std::thread::available_parallelism`] weighs the same two limits; this module reads them
//! itself to say *why* (`serve`'s first line, `/readyz`) and to catch a quota std misses (cgroup
//! v2 without a cgroup namespace: the group's path is not where std looks). The count used is the
//! fewer of the two ([`CpuLimits::threads`]), and the reason says when they disagree. Both are read once at start: a changed quota or affinity takes
//! effect at the next start.

use std::path::{Component, Path, PathBuf};

use super::file::read_capped_string;

/// Most bytes read of one `/proc` or cgroup file (`mountinfo` on a host with many mounts is the
/// largest; the others are a line).
const MAX_PROC_FILE_BYTES: u64 = 1 << 20;

/// A CPU quota: `quota_us` of CPU time per `period_us` of wall time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quota {
    /// CPU time allowed per period, in microseconds.
    pub quota_us: u64,
    /// The period, in microseconds.
    pub period_us: u64,
    /// The file the quota was read from.
    pub file: PathBuf,
}

impl Quota {
    /// The quota in CPUs (0.5: half of one CPU).
    pub fn cpus(&self) -> f64 {
        self.quota_us as f64 / self.period_us as f64
    }

    /// Whole CPUs the quota allows, rounded down, at least 1.
    pub fn whole_cpus(&self) -> usize {
        usize::try_from(self.quota_us / self.period_us)
            .unwrap_or(usize::MAX)
            .max(1)
    }
}

/// What limits the CPUs this process may use, as read at start.
#[derive(Debug, Clone, PartialEq)]
pub struct CpuLimits {
    /// CPUs in the affinity mask (`Cpus_allowed_list` of `/proc/self/status`); `None`: unreadable.
    pub affinity: Option<usize>,
    /// The tightest CPU quota on the process's cgroup or an ancestor; `None`: no quota (or no
    /// cgroup CPU controller readable).
    pub quota: Option<Quota>,
    /// What the standard library says ([`std::thread::available_parallelism`]; 1 when it fails).
    pub available: usize,
}

impl CpuLimits {
    /// Reads the affinity mask and the cgroup quota of this process.
    pub fn read() -> CpuLimits {
        let proc_self = Path::new("/proc/self");
        let affinity = read_small(&proc_self.join("status"))
            .as_deref()
            .and_then(affinity_of_status);
        let quota = read_small(&proc_self.join("cgroup")).and_then(|groups| {
            let mounts = read_small(&proc_self.join("mountinfo"))?;
            tightest_quota(&groups, &mounts, read_small)
        });
        let available = std::thread::available_parallelism().map_or(1, usize::from);
        CpuLimits {
            affinity,
            quota,
            available,
        }
    }

    /// The data-plane threads these limits allow: the fewer of this reading's and the standard
    /// library's count, at least 1.
    pub fn threads(&self) -> usize {
        threads_for(self.affinity, self.quota.as_ref())
            .map_or(self.available, |mine| mine.min(self.available))
            .max(1)
    }

    /// One sentence saying where [`CpuLimits::threads`] comes from.
    pub fn why(&self) -> String {
        let affinity = match self.affinity {
            Some(n) => format!("{n} CPU{} in the affinity mask", plural(n)),
            None => "affinity mask unreadable".to_owned(),
        };
        let quota = match &self.quota {
            Some(q) => format!(
                "a CPU quota of {} CPU ({} µs per {} µs in {}) rounded down, at least 1",
                trim_float(q.cpus()),
                q.quota_us,
                q.period_us,
                q.file.display()
            ),
            None => "no CPU quota".to_owned(),
        };
        let mine = threads_for(self.affinity, self.quota.as_ref());
        let mut why = format!("{affinity}, {quota}");
        if mine != Some(self.available) {
            why.push_str(&format!(
                "; the standard library counts {}, the fewer is used",
                self.available
            ));
        }
        why
    }
}

/// The threads the limits allow: the fewer of the affinity's CPUs and the quota's whole CPUs (at
/// least 1); `None` when neither is known.
pub fn threads_for(affinity: Option<usize>, quota: Option<&Quota>) -> Option<usize> {
    match (affinity, quota.map(Quota::whole_cpus)) {
        (Some(a), Some(q)) => Some(a.min(q).max(1)),
        (Some(a), None) => Some(a.max(1)),
        (None, Some(q)) => Some(q),
        (None, None) => None,
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// `0.5`, `2`, `1.25`: at most three decimals, no trailing zeros.
fn trim_float(x: f64) -> String {
    let s = format!("{x:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

fn read_small(path: &Path) -> Option<String> {
    read_capped_string(path, MAX_PROC_FILE_BYTES, "process information file").ok()
}

/// The number of CPUs in `/proc/self/status`'s `Cpus_allowed_list` (e.g. `0-3,8`).
pub fn affinity_of_status(status: &str) -> Option<usize> {
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?;
    count_cpu_list(list.trim())
}

/// The number of CPUs in a kernel CPU list (`0-3,8,10-11`); `None` when it is not one.
pub fn count_cpu_list(list: &str) -> Option<usize> {
    let mut n = 0usize;
    for item in list.split(',') {
        let item = item.trim();
        let (lo, hi) = match item.split_once('-') {
            Some((lo, hi)) => (lo.parse::<usize>().ok()?, hi.parse::<usize>().ok()?),
            None => {
                let one = item.parse::<usize>().ok()?;
                (one, one)
            }
        };
        if hi < lo {
            return None;
        }
        n = n.checked_add(hi - lo + 1)?;
    }
    (n > 0).then_some(n)
}

/// A cgroup's CPU quota from v2's `cpu.max` (`"50000 100000"`; `"max 100000"` is none).
pub fn parse_cpu_max(text: &str) -> Option<(u64, u64)> {
    let mut parts = text.split_whitespace();
    let quota = parts.next()?.parse::<u64>().ok()?;
    let period = parts.next().map_or(Some(100_000), |p| p.parse().ok())?;
    (quota > 0 && period > 0).then_some((quota, period))
}

/// A cgroup's CPU quota from v1's `cpu.cfs_quota_us` (`-1` is none) and `cpu.cfs_period_us`.
pub fn parse_cfs(quota: &str, period: &str) -> Option<(u64, u64)> {
    // -1 (no quota) fails the conversion.
    let quota = u64::try_from(quota.trim().parse::<i64>().ok()?).ok()?;
    let period = period.trim().parse::<u64>().ok()?;
    (quota > 0 && period > 0).then_some((quota, period))
}

/// The directories of the cgroup `group` (as `/proc/self/cgroup` gives it) as seen through the
/// cgroup v2 mount (`v2`) or a v1 mount carrying the `cpu` controller, from the group itself up
/// to the mount's root: through the first such mount whose root holds the group, compared path
/// component by path component (a mount of `/pod` does not hold `/pod2`). `None` when no mount
/// holds it, or when the group lies outside the process's cgroup namespace (the kernel then
/// shows it with `..`), which nothing here may read.
fn group_dirs(mountinfo: &str, v2: bool, group: &str) -> Option<Vec<PathBuf>> {
    let group = Path::new(group);
    if !group.is_absolute()
        || group
            .components()
            .any(|c| !matches!(c, Component::RootDir | Component::Normal(_)))
    {
        return None;
    }
    mountinfo.lines().find_map(|line| {
        // "36 35 0:31 /root /mount/point opts - fstype source super_opts"
        let (before, after) = line.split_once(" - ")?;
        let mut fields = before.split(' ');
        let root = fields.nth(3)?;
        let point = fields.next()?;
        let mut after = after.split(' ');
        let fstype = after.next()?;
        let super_opts = after.nth(1).unwrap_or("");
        let wanted = if v2 {
            fstype == "cgroup2"
        } else {
            fstype == "cgroup" && super_opts.split(',').any(|o| o == "cpu")
        };
        if !wanted {
            return None;
        }
        let inside = group.strip_prefix(root).ok()?;
        let mut dirs = Vec::new();
        let mut rel = Some(inside);
        while let Some(r) = rel {
            dirs.push(Path::new(point).join(r));
            rel = r.parent();
        }
        Some(dirs)
    })
}

/// The tightest CPU quota over the process's cgroup and its ancestors, given the text of
/// `/proc/self/cgroup` and `/proc/self/mountinfo`; `read` reads a cgroup file (pure but for it).
pub fn tightest_quota(
    groups: &str,
    mountinfo: &str,
    read: impl Fn(&Path) -> Option<String>,
) -> Option<Quota> {
    let mut best: Option<Quota> = None;
    let mut consider = |q: Quota| {
        if best.as_ref().is_none_or(|b| q.cpus() < b.cpus()) {
            best = Some(q);
        }
    };
    for line in groups.lines() {
        let mut f = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        if controllers.is_empty() {
            for dir in group_dirs(mountinfo, true, path).unwrap_or_default() {
                let file = dir.join("cpu.max");
                if let Some((quota_us, period_us)) = read(&file).as_deref().and_then(parse_cpu_max)
                {
                    consider(Quota {
                        quota_us,
                        period_us,
                        file,
                    });
                }
            }
        } else if controllers.split(',').any(|c| c == "cpu") {
            for dir in group_dirs(mountinfo, false, path).unwrap_or_default() {
                let file = dir.join("cpu.cfs_quota_us");
                let quota = read(&file);
                let period = read(&dir.join("cpu.cfs_period_us"));
                if let Some((quota_us, period_us)) = quota
                    .as_deref()
                    .zip(period.as_deref())
                    .and_then(|(q, p)| parse_cfs(q, p))
                {
                    consider(Quota {
                        quota_us,
                        period_us,
                        file,
                    });
                }
            }
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn cpu_lists_count_ranges_and_singles() {
        assert_eq!(count_cpu_list("0"), Some(1));
        assert_eq!(count_cpu_list("0-1"), Some(2));
        assert_eq!(count_cpu_list("0-3,8,10-11"), Some(7));
        for bad in ["", "x", "3-1", "0-", ",", "0,,1"] {
            assert_eq!(count_cpu_list(bad), None, "{bad:?}");
        }
        let status = "Name:\tx\nCpus_allowed:\t3\nCpus_allowed_list:\t0-1\nMems_allowed:\t1\n";
        assert_eq!(affinity_of_status(status), Some(2));
        assert_eq!(affinity_of_status("Name:\tx\n"), None);
    }

    #[test]
    fn quotas_parse_from_both_cgroup_versions() {
        assert_eq!(parse_cpu_max("50000 100000\n"), Some((50000, 100000)));
        assert_eq!(parse_cpu_max("max 100000\n"), None);
        assert_eq!(parse_cpu_max("150000"), Some((150000, 100000)));
        assert_eq!(parse_cpu_max("0 100000"), None);
        assert_eq!(parse_cfs("-1\n", "100000\n"), None);
        assert_eq!(parse_cfs("25000\n", "100000\n"), Some((25000, 100000)));
        assert_eq!(parse_cfs("25000", "0"), None);
    }

    #[test]
    fn whole_cpus_round_down_to_at_least_one() {
        let q = |quota_us, period_us| Quota {
            quota_us,
            period_us,
            file: PathBuf::new(),
        };
        assert_eq!(q(50_000, 100_000).whole_cpus(), 1);
        assert_eq!(q(150_000, 100_000).whole_cpus(), 1);
        assert_eq!(q(250_000, 100_000).whole_cpus(), 2);
        assert_eq!(threads_for(Some(4), Some(&q(250_000, 100_000))), Some(2));
        assert_eq!(threads_for(Some(1), Some(&q(400_000, 100_000))), Some(1));
        assert_eq!(threads_for(Some(3), None), Some(3));
        assert_eq!(threads_for(None, None), None);
        assert_eq!(trim_float(q(50_000, 100_000).cpus()), "0.5");
        assert_eq!(trim_float(2.0), "2");
    }

    /// A v1 host (this project's CI kind): the `cpu` controller mounted on its own, the process
    /// in a nested group with a quota on the parent tighter than its own.
    #[test]
    fn v1_quota_is_the_tightest_over_the_group_and_its_ancestors() {
        let groups = "9:name=systemd:/\n2:cpuacct:/\n1:cpu:/pod/ctr\n0::/\n";
        let mounts = "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n\
                      32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n\
                      33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct\n";
        let files: HashMap<&str, &str> = [
            ("/sys/fs/cgroup/cpu/pod/ctr/cpu.cfs_quota_us", "200000"),
            ("/sys/fs/cgroup/cpu/pod/ctr/cpu.cfs_period_us", "100000"),
            ("/sys/fs/cgroup/cpu/pod/cpu.cfs_quota_us", "50000"),
            ("/sys/fs/cgroup/cpu/pod/cpu.cfs_period_us", "100000"),
            ("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "-1"),
            ("/sys/fs/cgroup/cpu/cpu.cfs_period_us", "100000"),
        ]
        .into();
        let read = |p: &Path| files.get(p.to_str().unwrap()).map(|s| s.to_string());
        let q = tightest_quota(groups, mounts, read).expect("a quota");
        assert_eq!((q.quota_us, q.period_us), (50_000, 100_000));
        assert_eq!(q.file, Path::new("/sys/fs/cgroup/cpu/pod/cpu.cfs_quota_us"));
    }

    /// A v2 container: a cgroup namespace shows the group as `/`, the mount's root is the group.
    #[test]
    fn v2_quota_is_read_from_cpu_max_inside_a_namespace_and_on_a_host() {
        let mounts = "30 24 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n";
        let files: HashMap<&str, &str> = [
            ("/sys/fs/cgroup/cpu.max", "50000 100000\n"),
            ("/sys/fs/cgroup/kubepods/pod1/cpu.max", "max 100000\n"),
            ("/sys/fs/cgroup/kubepods/cpu.max", "300000 100000\n"),
        ]
        .into();
        let read = |p: &Path| files.get(p.to_str().unwrap()).map(|s| s.to_string());
        let q = tightest_quota("0::/\n", mounts, read).expect("a quota");
        assert_eq!(q.file, Path::new("/sys/fs/cgroup/cpu.max"));
        // On a host the group's own file says max; the parent's 3 CPUs is the limit (the root's
        // own cpu.max is read too: there it is the namespace's quota of the first case).
        let files2: HashMap<&str, &str> = [
            ("/sys/fs/cgroup/kubepods/pod1/cpu.max", "max 100000\n"),
            ("/sys/fs/cgroup/kubepods/cpu.max", "300000 100000\n"),
        ]
        .into();
        let read2 = |p: &Path| files2.get(p.to_str().unwrap()).map(|s| s.to_string());
        let q = tightest_quota("0::/kubepods/pod1\n", mounts, read2).expect("a quota");
        assert_eq!(q.whole_cpus(), 3);
        // No cgroup2 mount, no controller line: no quota.
        assert_eq!(tightest_quota("0::/\n", "", read2), None);
        assert_eq!(tightest_quota("", mounts, |_| None), None);
    }

    #[test]
    fn the_reason_names_the_limits_and_a_disagreement() {
        let limits = CpuLimits {
            affinity: Some(2),
            quota: Some(Quota {
                quota_us: 50_000,
                period_us: 100_000,
                file: PathBuf::from("/sys/fs/cgroup/cpu/x/cpu.cfs_quota_us"),
            }),
            available: 1,
        };
        let why = limits.why();
        assert!(
            why.starts_with("2 CPUs in the affinity mask, a CPU quota of 0.5 CPU"),
            "{why}"
        );
        assert!(!why.contains("standard library"), "{why}");
        let odd = CpuLimits {
            available: 2,
            ..limits
        };
        assert!(
            odd.why()
                .ends_with("the standard library counts 2, the fewer is used"),
            "{}",
            odd.why()
        );
    }

    /// This machine's own files are read; the count never exceeds std's.
    #[test]
    fn this_process_limits_are_read() {
        let limits = CpuLimits::read();
        assert!(limits.affinity.is_some(), "{limits:?}");
        assert!(
            (1..=limits.available).contains(&limits.threads()),
            "{limits:?}"
        );
    }

    #[test]
    fn a_quota_std_misses_still_limits_the_threads() {
        let limits = CpuLimits {
            affinity: Some(8),
            quota: Some(Quota {
                quota_us: 200_000,
                period_us: 100_000,
                file: PathBuf::from("/sys/fs/cgroup/cpu.max"),
            }),
            available: 8,
        };
        assert_eq!(limits.threads(), 2);
        assert!(
            limits
                .why()
                .ends_with("the standard library counts 8, the fewer is used")
        );
        let none = CpuLimits {
            affinity: None,
            quota: None,
            available: 3,
        };
        assert_eq!(none.threads(), 3);
    }

    /// Mount roots hold a group only component by component, the first mount that holds it is
    /// used, and a group outside the namespace (`..`) is never read.
    #[test]
    fn a_group_is_read_only_through_a_mount_that_holds_it() {
        let mounts = "40 31 0:29 /pod /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu,cpuacct\n\
                      41 31 0:29 / /sys/fs/cgroup/cpu2 rw - cgroup cgroup rw,cpuacct,cpu\n";
        let files: HashMap<&str, &str> = [
            ("/sys/fs/cgroup/cpu/2/ctr/cpu.cfs_quota_us", "10000"),
            ("/sys/fs/cgroup/cpu/2/ctr/cpu.cfs_period_us", "100000"),
            ("/sys/fs/cgroup/cpu2/pod2/ctr/cpu.cfs_quota_us", "300000"),
            ("/sys/fs/cgroup/cpu2/pod2/ctr/cpu.cfs_period_us", "100000"),
        ]
        .into();
        let read = |p: &Path| files.get(p.to_str().unwrap()).map(|s| s.to_string());
        // `/pod` does not hold `/pod2/ctr`: the second mount does (combined `cpu,cpuacct`).
        let q = tightest_quota("4:cpu,cpuacct:/pod2/ctr\n", mounts, read).expect("a quota");
        assert_eq!(
            q.file,
            Path::new("/sys/fs/cgroup/cpu2/pod2/ctr/cpu.cfs_quota_us")
        );
        let outside = |p: &Path| -> Option<String> { panic!("read {}", p.display()) };
        assert_eq!(
            tightest_quota(
                "0::/../sibling\n",
                "30 24 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
                outside
            ),
            None
        );
    }
}
