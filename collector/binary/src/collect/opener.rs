//! Source files opened with the training user's rights, not the collector's.
//!
//! Under a node agent the collector runs as the agent's user (root, to switch users), which
//! may open any file of the host. A source is the training command's output, so it is opened
//! with the training user's rights: a reader process, forked before the collector starts any
//! thread, drops to that user and answers each path with an open descriptor (passed over a
//! Unix socket) or an errno. An artifact naming another tenant's file, or a training command
//! linking to one, gets what the training user could read itself and nothing more. The
//! reader makes itself not dumpable once it is that user, so the training user cannot read
//! its memory or take it over; it can kill or stop it (it is that user's): a reader that is
//! gone or does not answer within the timeout is killed and started again at the next open,
//! so no training command stops another launch's reading for good.

use std::fs::File;
use std::io::{IoSlice, IoSliceMut};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use nix::errno::Errno;
use nix::sys::socket::{self, sockopt, ControlMessage, ControlMessageOwned, MsgFlags};
use nix::sys::time::TimeVal;
use nix::unistd::{ForkResult, Pid};

use crate::collect::fence::Refusal;
use crate::runas::Identity;

const PATH_BYTES: usize = 8192;
/// The flags every source is opened with (the fence clears O_NONBLOCK once it is a file).
pub const FLAGS: libc::c_int = libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC;

/// The forked reader ends here: no exit handler of the collector's runs in it.
fn leave(code: i32) -> ! {
    // SAFETY: _exit ends the process at once; nothing after it runs.
    unsafe { libc::_exit(code) }
}

/// The reader's loop: a path in, a descriptor (or an errno) out, until the socket ends.
fn serve(sock: &OwnedFd) -> ! {
    let mut path = [0u8; PATH_BYTES + 1];
    loop {
        let got = match socket::recv(sock.as_raw_fd(), &mut path[..PATH_BYTES], MsgFlags::empty()) {
            Ok(0) | Err(_) => leave(0),
            Ok(n) => n,
        };
        let opened = if path[..got].contains(&0) {
            Err(Errno::EINVAL)
        } else {
            path[got] = 0;
            // SAFETY: `path` is NUL-terminated at `got`, with no NUL before it.
            let fd = unsafe { libc::open(path.as_ptr().cast(), FLAGS) };
            if fd < 0 {
                Err(Errno::last())
            } else {
                Ok(fd)
            }
        };
        let _ = match opened {
            Ok(fd) => {
                let fds = [fd];
                let sent = socket::sendmsg::<()>(
                    sock.as_raw_fd(),
                    &[IoSlice::new(b"ok")],
                    &[ControlMessage::ScmRights(&fds)],
                    MsgFlags::empty(),
                    None,
                );
                // SAFETY: `fd` was opened above and is this loop's to close.
                unsafe { libc::close(fd) };
                sent
            }
            Err(errno) => socket::send(
                sock.as_raw_fd(),
                (errno as i32).to_string().as_bytes(),
                MsgFlags::empty(),
            ),
        };
    }
}

/// The child's side: become the user for good, out of its reach, then serve.
fn reader(ours: OwnedFd, theirs: OwnedFd, who: &Identity) -> ! {
    drop(ours);
    let keep = theirs.as_raw_fd();
    // SAFETY: closes descriptors this forked child inherited and will never use.
    unsafe {
        let below = keep <= 3 || libc::syscall(libc::SYS_close_range, 3, keep - 1, 0) == 0;
        let above = libc::syscall(libc::SYS_close_range, keep + 1, u32::MAX, 0) == 0;
        if !(below && above) {
            // A kernel without close_range (before 5.9), or a filter refusing it: one by one.
            let most = libc::sysconf(libc::_SC_OPEN_MAX).clamp(1024, 1 << 20) as i32;
            for fd in (3..most).filter(|fd| *fd != keep) {
                libc::close(fd);
            }
        }
    }
    match who.become_for_good() {
        Ok(()) => {
            let _ = socket::send(keep, b"ready", MsgFlags::empty());
            serve(&theirs)
        }
        Err(why) => {
            let _ = socket::send(keep, why.as_bytes(), MsgFlags::empty());
            leave(1)
        }
    }
}

/// Kill and reap a reader (one stopped, hung or gone alike).
fn end(pid: Pid) {
    let _ = nix::sys::signal::kill(pid, nix::sys::signal::SIGKILL);
    let _ = nix::sys::wait::waitpid(pid, None);
}

struct Running {
    sock: OwnedFd,
    pid: Pid,
}

fn fork_reader(who: &Identity, timeout: Duration) -> Result<Running, String> {
    let (ours, theirs) = socket::socketpair(
        socket::AddressFamily::Unix,
        socket::SockType::SeqPacket,
        None,
        socket::SockFlag::SOCK_CLOEXEC,
    )
    .map_err(|e| format!("cannot make the reader's socket: {e}"))?;
    // SAFETY: the child only makes system calls (and musl's fork leaves its allocator
    // usable) before it serves; it never returns into the collector's code.
    let pid = match unsafe { nix::unistd::fork() } {
        Ok(ForkResult::Child) => reader(ours, theirs, who),
        Ok(ForkResult::Parent { child }) => child,
        Err(e) => return Err(format!("cannot start the reader: {e}")),
    };
    drop(theirs);
    let wait = TimeVal::new(timeout.as_secs() as i64, timeout.subsec_micros() as i64);
    socket::setsockopt(&ours, sockopt::ReceiveTimeout, &wait)
        .and_then(|()| socket::setsockopt(&ours, sockopt::SendTimeout, &wait))
        .map_err(|e| format!("cannot set the reader's timeout: {e}"))?;
    let mut hello = [0u8; 1024];
    let got = socket::recv(ours.as_raw_fd(), &mut hello, MsgFlags::empty()).unwrap_or(0);
    if &hello[..got] != b"ready" {
        end(pid);
        let why = String::from_utf8_lossy(&hello[..got]);
        return Err(format!(
            "cannot read sources as {who}: {}",
            if why.is_empty() {
                "the reader exited"
            } else {
                &why
            }
        ));
    }
    Ok(Running { sock: ours, pid })
}

/// The collector's side: `open(path)` is a file the training user could open.
pub struct Opener {
    who: Identity,
    timeout: Duration,
    /// The reader now; none once one failed (replaced at the next open).
    running: Mutex<Option<Running>>,
}

impl Opener {
    /// Fork the reader as `who`; call before any thread starts.
    pub fn start(who: Identity, timeout: Duration) -> Result<Self, String> {
        let running = Mutex::new(Some(fork_reader(&who, timeout)?));
        Ok(Self {
            who,
            timeout,
            running,
        })
    }

    fn ask(sock: &OwnedFd, path: &Path) -> Result<Result<File, Errno>, Errno> {
        let bytes = path.as_os_str().as_bytes();
        if bytes.len() > PATH_BYTES {
            return Ok(Err(Errno::ENAMETOOLONG));
        }
        socket::send(sock.as_raw_fd(), bytes, MsgFlags::empty())?;
        let mut reply = [0u8; 64];
        let mut space = nix::cmsg_space!(RawFd);
        let mut slices = [IoSliceMut::new(&mut reply)];
        let got = socket::recvmsg::<()>(
            sock.as_raw_fd(),
            &mut slices,
            Some(&mut space),
            MsgFlags::MSG_CMSG_CLOEXEC,
        )?;
        let fds: Vec<RawFd> = got
            .cmsgs()?
            .filter_map(|c| match c {
                ControlMessageOwned::ScmRights(fds) => Some(fds),
                _ => None,
            })
            .flatten()
            .collect();
        let length = got.bytes;
        // SAFETY: each descriptor just arrived with this message and is ours alone.
        let mut files = fds.into_iter().map(|fd| unsafe { File::from_raw_fd(fd) });
        if let Some(file) = files.next() {
            return Ok(Ok(file));
        }
        if length == 0 {
            return Err(Errno::ECONNRESET);
        }
        let code = std::str::from_utf8(&reply[..length])
            .ok()
            .and_then(|t| t.parse().ok())
            .unwrap_or(libc::EIO);
        Ok(Err(Errno::from_raw(code)))
    }

    /// One question to the reader, started anew if the last one failed. A reader that
    /// fails to answer (killed by the training user, stopped, hung) is killed, reaped and
    /// dropped at once: its socket, which may still owe an answer, is never asked again,
    /// and its pid, which the kernel may give to another process, is never signalled again.
    fn ask_reader(
        &self,
        slot: &mut Option<Running>,
        path: &Path,
    ) -> Result<Result<File, Errno>, String> {
        if slot.is_none() {
            let started = fork_reader(&self.who, self.timeout)?;
            log::warn!(
                "the reader of sources as {} was gone; started it again (pid {})",
                self.who,
                started.pid
            );
            *slot = Some(started);
        }
        let Some(running) = slot.as_ref() else {
            return Err("no reader".into());
        };
        match Self::ask(&running.sock, path) {
            Ok(answer) => Ok(answer),
            Err(e) => {
                end(running.pid);
                *slot = None;
                Err(e.desc().to_owned())
            }
        }
    }

    pub fn open(&self, path: &Path) -> Result<File, Refusal> {
        // Absolute: the reader works in `/`, and the collector's own checks of the path
        // must name the same file.
        let path = std::path::absolute(path)
            .map_err(|e| Refusal::Refused(format!("{}: {e}", path.display())))?;
        let mut slot = self
            .running
            .lock()
            .map_err(|_| Refusal::Refused("the reader's lock is poisoned".into()))?;
        let answer = self
            .ask_reader(&mut slot, &path)
            .or_else(|_| self.ask_reader(&mut slot, &path));
        match answer {
            Ok(Ok(file)) => Ok(file),
            Ok(Err(Errno::ENOENT)) => Err(Refusal::Gone),
            Ok(Err(errno)) => Err(Refusal::Refused(format!(
                "{} cannot be opened as {}: {}",
                path.display(),
                self.who,
                errno.desc()
            ))),
            Err(why) => Err(Refusal::Refused(format!(
                "{}: no reader can run as {} ({why}); sources cannot be read",
                path.display(),
                self.who
            ))),
        }
    }
}

impl Drop for Opener {
    fn drop(&mut self) {
        if let Ok(Some(running)) = self.running.get_mut() {
            end(running.pid);
        }
    }
}
