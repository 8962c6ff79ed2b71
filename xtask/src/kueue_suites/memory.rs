//! Peak memory of the servers a suite's envtest starts, sampled from /proc: every sample sums
//! the resident set of each kube-apiserver, etcd or fake-apiserver below the suite's process
//! (MultiKueue's suite starts three envtests), and the largest sum is the peak. Sampling misses
//! a peak shorter than its interval; the servers' memory grows and stays, so that is little.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// The programs counted: envtest starts the first two; the fake answers to those names.
const SERVERS: [&str; 3] = ["kube-apiserver", "etcd", "fake-apiserver"];

pub struct Sampler {
    stop: Arc<AtomicBool>,
    peak_kib: Arc<AtomicU64>,
    thread: JoinHandle<()>,
}

impl Sampler {
    pub fn start(root: u32, every: Duration) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let peak_kib = Arc::new(AtomicU64::new(0));
        let thread = std::thread::spawn({
            let (stop, peak_kib) = (stop.clone(), peak_kib.clone());
            move || {
                while !stop.load(Ordering::Relaxed) {
                    peak_kib.fetch_max(servers_rss_kib(root), Ordering::Relaxed);
                    std::thread::sleep(every);
                }
            }
        });
        Sampler {
            stop,
            peak_kib,
            thread,
        }
    }

    /// The peak in KiB, or None if no server was ever seen.
    pub fn stop(self) -> Option<u64> {
        self.stop.store(true, Ordering::Relaxed);
        let _ = self.thread.join();
        Some(self.peak_kib.load(Ordering::Relaxed)).filter(|&k| k > 0)
    }
}

/// The summed resident set of the servers among `root`'s descendants, now.
fn servers_rss_kib(root: u32) -> u64 {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    let mut parent = HashMap::new();
    let mut name = HashMap::new();
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        if let Some((comm, ppid)) = std::fs::read_to_string(entry.path().join("stat"))
            .ok()
            .and_then(|stat| comm_and_parent(&stat))
        {
            parent.insert(pid, ppid);
            name.insert(pid, comm);
        }
    }
    let below_root = |mut pid: u32| {
        while let Some(&up) = parent.get(&pid) {
            if up == root {
                return true;
            }
            pid = up;
        }
        false
    };
    name.iter()
        .filter(|(pid, comm)| SERVERS.contains(&comm.as_str()) && below_root(**pid))
        .filter_map(|(pid, _)| std::fs::read_to_string(format!("/proc/{pid}/status")).ok())
        .filter_map(|status| rss_kib(&status))
        .sum()
}

/// The command name and parent pid of a /proc/PID/stat line: `pid (comm) state ppid ...`, where
/// comm may hold spaces and parentheses, so it ends at the last ')'.
fn comm_and_parent(stat: &str) -> Option<(String, u32)> {
    let (open, close) = (stat.find('(')?, stat.rfind(')')?);
    let comm = stat.get(open + 1..close)?.to_string();
    let ppid = stat
        .get(close + 1..)?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some((comm, ppid))
}

/// `VmRSS:   12345 kB` from /proc/PID/status.
fn rss_kib(status: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .trim()
        .strip_suffix("kB")?
        .trim()
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_give_name_and_parent() {
        assert_eq!(
            comm_and_parent("4242 (kube-apiserver) S 17 4242 17 0 -1"),
            Some(("kube-apiserver".into(), 17))
        );
        assert_eq!(
            comm_and_parent("9 (a (b) c) R 3 9 9"),
            Some(("a (b) c".into(), 3))
        );
        assert_eq!(comm_and_parent("garbage"), None);
    }

    #[test]
    fn status_gives_the_resident_set() {
        let status = "Name:\tetcd\nVmHWM:\t  9000 kB\nVmRSS:\t  8123 kB\nThreads:\t9\n";
        assert_eq!(rss_kib(status), Some(8123));
        assert_eq!(rss_kib("Name:\tkthreadd\n"), None);
    }

    #[test]
    fn a_child_server_is_counted_and_others_are_not() {
        // This test process's child, named as envtest names the fake's link.
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("etcd");
        std::os::unix::fs::symlink("/bin/sleep", &link).unwrap();
        let mut child = std::process::Command::new(&link).arg("30").spawn().unwrap();
        let mine = servers_rss_kib(std::process::id());
        let nobodys = servers_rss_kib(u32::MAX);
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(mine > 0, "the child etcd was not counted");
        assert_eq!(nobodys, 0);
    }
}
