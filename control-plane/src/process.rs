//! Starting and stopping the control plane's processes.
//!
//! A control plane started for a test must not outlive the test binary, even when nothing drops
//! it (a `static` shared by the tests of one binary is never dropped). Each process therefore gets
//! a parent-death signal through util-linux's `setpriv`, and is spawned from one thread that lives
//! as long as the process: the kernel sends that signal when the spawning *thread* exits, and
//! test threads exit after every test. A detached control plane (`cargo xtask control-plane up`)
//! gets neither, and its own process group, so that it outlives the command and a Ctrl-C at the
//! terminal.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::Error;

/// A running process of the control plane, with its log file.
#[derive(Debug)]
pub struct Process {
    pub name: &'static str,
    pub log: PathBuf,
    child: Child,
}

type SpawnRequest = (Command, mpsc::Sender<std::io::Result<Child>>);

/// The thread all attached processes are spawned from (see the module's docs).
fn spawner() -> &'static Mutex<mpsc::Sender<SpawnRequest>> {
    static SPAWNER: OnceLock<Mutex<mpsc::Sender<SpawnRequest>>> = OnceLock::new();
    SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<SpawnRequest>();
        std::thread::Builder::new()
            .name("control-plane-spawner".into())
            .spawn(move || {
                for (mut cmd, reply) in rx {
                    let _ = reply.send(cmd.spawn());
                }
            })
            .expect("a thread can be started");
        Mutex::new(tx)
    })
}

/// `setpriv` when it is there; without it, processes may outlive a test binary that is killed.
fn setpriv() -> Option<PathBuf> {
    ["/usr/bin/setpriv", "/bin/setpriv"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
}

impl Process {
    /// Start `binary` with `args`, its stdout and stderr going to `log`.
    pub fn spawn(
        name: &'static str,
        binary: &Path,
        args: &[String],
        log: PathBuf,
        detached: bool,
    ) -> Result<Self, Error> {
        let out = std::fs::File::create(&log).map_err(|e| Error::io(&log, e))?;
        let err = out.try_clone().map_err(|e| Error::io(&log, e))?;
        let mut cmd = match (detached, setpriv()) {
            (false, Some(setpriv)) => {
                let mut cmd = Command::new(setpriv);
                cmd.args(["--pdeathsig", "KILL", "--"]).arg(binary);
                cmd
            }
            _ => Command::new(binary),
        };
        cmd.args(args).stdin(Stdio::null()).stdout(out).stderr(err);
        let spawned = if detached {
            use std::os::unix::process::CommandExt;
            cmd.process_group(0);
            cmd.spawn()
        } else {
            let (tx, rx) = mpsc::channel();
            spawner()
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .send((cmd, tx))
                .map_err(|_| Error::Spawn {
                    binary: binary.display().to_string(),
                    source: std::io::Error::other("the spawner thread is gone"),
                })?;
            rx.recv()
                .unwrap_or_else(|_| Err(std::io::Error::other("the spawner thread is gone")))
        };
        let child = spawned.map_err(|source| Error::Spawn {
            binary: binary.display().to_string(),
            source,
        })?;
        Ok(Process { name, log, child })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The exit status, if the process has ended.
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// The last lines of the log, for an error message.
    pub fn log_tail(&self, lines: usize) -> String {
        tail(&self.log, lines)
    }

    /// SIGTERM, then SIGKILL after `grace`.
    pub fn stop(mut self, grace: Duration) {
        if self.exited().is_none() {
            terminate(self.pid(), grace);
        }
        let _ = self.child.wait();
    }
}

/// SIGTERM `pid`, wait up to `grace` for it to go, then SIGKILL it. Works for processes this one
/// did not start (a detached control plane stopped by `down`).
pub fn terminate(pid: u32, grace: Duration) {
    let Ok(raw) = i32::try_from(pid) else { return };
    let pid = Pid::from_raw(raw);
    if kill(pid, Signal::SIGTERM).is_err() {
        return;
    }
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        // A zombie child of ours still answers signal 0; `wait` in the caller reaps it.
        if !alive(pid) {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = kill(pid, Signal::SIGKILL);
}

/// Whether a process with this pid exists and is not a zombie.
pub fn alive(pid: Pid) -> bool {
    if kill(pid, None).is_err() {
        return false;
    }
    // /proc tells zombies apart; without it, assume alive.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_none_or(|state| state != "Z"),
        Err(_) => true,
    }
}

fn tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// A port on loopback that was free a moment ago: bind to port 0 and let go. Another process may
/// take it in between; starting fails then, and says which port.
pub fn free_port() -> Result<u16, Error> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")
        .map_err(|e| Error::io(Path::new("127.0.0.1:0"), e))?;
    let port = listener
        .local_addr()
        .map_err(|e| Error::io(Path::new("127.0.0.1:0"), e))?
        .port();
    Ok(port)
}
