//! Serving threads: one single-threaded tokio runtime per core, each accepting on its own
//! `SO_REUSEPORT` socket of every listener, the way nginx runs a worker per core.
//!
//! A connection lives its whole life on the thread that accepted it (its HTTP tasks, its
//! upstream exchanges, its splice), so requests do not hop between threads and the kernel
//! spreads connections across the sockets. Measured with wrk through one proxy route
//! (`bench/proxy.sh` setup, 2 cores): a multi-thread runtime served 18.1k req/s where a
//! single current-thread runtime served 20.5k; the cross-thread wake-ups cost more than
//! the second thread gave. Control work (admin, reload, file watching) stays on the
//! runtime that started the gateway. This module owns the threads and the sockets; what is
//! served on them is `listener::serve`'s business.

use std::io;
use std::net::SocketAddr;
use std::sync::OnceLock;

use socket2::{Domain, Protocol, Socket, Type};
use tokio::runtime::Handle;
use tokio_util::sync::CancellationToken;

thread_local! {
    /// Which serving thread this is; 0 on any other thread.
    static INDEX: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// The index of the serving thread running this code (0 elsewhere): per-thread state such
/// as upstream connection pools is picked by it.
pub fn current_index() -> usize {
    INDEX.with(|i| i.get())
}

/// How many serving threads a gateway starts: one per core this process may run on,
/// read once (finding it out reads cgroup files, and every upstream built sizes its
/// per-thread pools by it).
pub fn count() -> usize {
    static COUNT: OnceLock<usize> = OnceLock::new();
    *COUNT.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

pub struct Workers {
    handles: Vec<Handle>,
    stop: CancellationToken,
}

impl Workers {
    /// Starts `count` serving threads (at least one).
    pub fn start(count: usize) -> io::Result<Workers> {
        let stop = CancellationToken::new();
        let mut handles = Vec::new();
        for i in 0..count.max(1) {
            let (tx, rx) = std::sync::mpsc::channel();
            let stop = stop.clone();
            std::thread::Builder::new()
                .name(format!("leafgate-worker-{i}"))
                .spawn(move || {
                    INDEX.with(|index| index.set(i));
                    let runtime = match tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                    {
                        Ok(rt) => rt,
                        Err(e) => {
                            let _ = tx.send(Err(e));
                            return;
                        }
                    };
                    let _ = tx.send(Ok(runtime.handle().clone()));
                    runtime.block_on(stop.cancelled());
                })?;
            let handle = rx
                .recv()
                .map_err(|_| io::Error::other("a serving thread exited while starting"))??;
            handles.push(handle);
        }
        Ok(Workers { handles, stop })
    }

    pub fn handles(&self) -> &[Handle] {
        &self.handles
    }

    pub fn len(&self) -> usize {
        self.handles.len()
    }
}

impl Drop for Workers {
    /// Ends the threads' runtimes, closing whatever they still serve.
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Binds `count` listening sockets on `addr` with `SO_REUSEPORT`, so each serving thread
/// accepts on its own. With port 0 the first socket picks the port and the others join it.
pub fn bind_reuseport(addr: SocketAddr, count: usize) -> io::Result<Vec<std::net::TcpListener>> {
    let mut sockets = Vec::with_capacity(count);
    let mut at = addr;
    for _ in 0..count.max(1) {
        let socket = Socket::new(Domain::for_address(at), Type::STREAM, Some(Protocol::TCP))?;
        socket.set_reuse_address(true)?;
        socket.set_reuse_port(true)?;
        socket.set_nonblocking(true)?;
        socket.bind(&at.into())?;
        socket.listen(4096)?;
        let listener: std::net::TcpListener = socket.into();
        at = listener.local_addr()?;
        sockets.push(listener);
    }
    Ok(sockets)
}
