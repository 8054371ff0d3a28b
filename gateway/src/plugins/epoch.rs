//! Deadlines as epoch ticks: the ticker thread that advances the engine's epoch every
//! [`TICK`], and [`CallClock`], which counts the ticks one call (or one instance's
//! start-up) has run and decides at each one whether it goes on, yields to the reactor,
//! or is interrupted.
//!
//! Knows nothing of stores or plugins: `sandbox` keeps a clock in every store and hands
//! each tick to it. A deadline counts the plugin's running time, not the wall clock, with
//! a wall-clock cap ([`wall_cap`]) so a call on a starved runtime still ends.

use std::time::{Duration, Instant};

use wasmtime::{Engine, UpdateDeadline};

/// How often the epoch advances. Deadlines are checked, and spinning plugins yield, at
/// this granularity.
pub const TICK: Duration = Duration::from_millis(1);

/// Starts the thread that advances `engine`'s epoch every [`TICK`]. It holds the engine
/// weakly and ends once the engine is gone.
pub(crate) fn spawn_ticker(engine: &Engine) -> std::io::Result<()> {
    let ticker = engine.weak();
    std::thread::Builder::new()
        .name("leafgate-plugin-epoch".into())
        .spawn(move || {
            while let Some(engine) = ticker.upgrade() {
                engine.increment_epoch();
                drop(engine);
                std::thread::sleep(TICK);
            }
        })?;
    Ok(())
}

/// The longest a call may take in wall-clock time, however little of it the plugin ran.
pub(crate) fn wall_cap(deadline: Duration) -> Duration {
    deadline * 4 + Duration::from_millis(50)
}

/// What a store is running: a call (under the hook's `deadline`) or the instance's
/// start-up (under its `startup` limit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    Call,
    Startup,
}

/// The time of the call (or start-up) in progress in one store, as the epoch callback
/// sees it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CallClock {
    /// The call's deadline: how long the plugin may run in one call.
    pub deadline: Duration,
    /// How long an instance's start-up may run.
    pub startup: Duration,
    /// What is running now.
    pub phase: Phase,
    /// When the call in progress started.
    pub started: Instant,
    /// Epoch ticks seen while the call ran: its running time, in ticks.
    pub ticks: u64,
    /// Set when the epoch callback interrupted the call.
    pub timed_out: bool,
}

impl CallClock {
    pub fn new(deadline: Duration, startup: Duration) -> Self {
        CallClock {
            deadline,
            startup,
            phase: Phase::Call,
            started: Instant::now(),
            ticks: 0,
            timed_out: false,
        }
    }

    /// Starts counting a new call that started at `started`. The store's epoch deadline
    /// must be set to one tick with it (see `sandbox::arm`).
    pub fn arm(&mut self, started: Instant) {
        self.arm_for(Phase::Call, started);
    }

    /// Starts counting `phase`, which started at `started`.
    pub fn arm_for(&mut self, phase: Phase, started: Instant) {
        self.phase = phase;
        self.started = started;
        self.ticks = 0;
    }

    /// The limit of what is running now.
    pub fn limit(&self) -> Duration {
        match self.phase {
            Phase::Call => self.deadline,
            Phase::Startup => self.startup,
        }
    }

    /// One epoch tick while the call runs: what the epoch callback answers.
    pub fn tick(&mut self) -> UpdateDeadline {
        self.ticks += 1;
        // The deadline counts the ticks the plugin ran, not time spent waiting for a
        // worker: a tenant's calls must not time out because another tenant's plugins
        // are spinning. The wall-clock cap still bounds a call on a starved runtime.
        let limit = self.limit();
        let budget = limit.as_micros().div_ceil(TICK.as_micros()) as u64;
        if self.ticks > budget || self.started.elapsed() > wall_cap(limit) {
            self.timed_out = true;
            return UpdateDeadline::Interrupt;
        }
        // A short call crosses at most one tick boundary: let it finish. A long one
        // yields to the reactor at every tick so other tasks keep running.
        if self.ticks == 1 {
            UpdateDeadline::Continue(1)
        } else {
            UpdateDeadline::Yield(1)
        }
    }

    /// Why an interrupted call (or start-up) was interrupted, for its fault message.
    pub fn timeout_message(&self) -> String {
        let ran = Duration::from_micros(self.ticks.saturating_sub(1) * TICK.as_micros() as u64);
        match self.phase {
            Phase::Call => format!(
                "deadline exceeded: interrupted after running ~{ran:?} ({:?} wall-clock) of its {:?} deadline",
                self.started.elapsed(),
                self.deadline
            ),
            Phase::Startup => format!(
                "start-up limit exceeded: the instance's start-up was interrupted after running ~{ran:?} ({:?} wall-clock) of its {:?} limit (raise `startup` if it is slow rather than stuck)",
                self.started.elapsed(),
                self.startup
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(u: UpdateDeadline) -> &'static str {
        match u {
            UpdateDeadline::Continue(1) => "continue",
            UpdateDeadline::Yield(1) => "yield",
            UpdateDeadline::Interrupt => "interrupt",
            _ => "other",
        }
    }

    #[test]
    fn a_call_continues_once_then_yields_each_tick_until_its_budget_is_spent() {
        let mut clock = CallClock::new(3 * TICK, TICK);
        clock.arm(Instant::now());
        let seen: Vec<_> = (0..4).map(|_| kind(clock.tick())).collect();
        assert_eq!(seen, ["continue", "yield", "yield", "interrupt"]);
        assert!(clock.timed_out);
        assert!(
            clock.timeout_message().contains("~3ms"),
            "{}",
            clock.timeout_message()
        );
    }

    #[test]
    fn arming_starts_a_new_count() {
        let mut clock = CallClock::new(TICK, TICK);
        clock.arm(Instant::now());
        clock.tick();
        assert_eq!(kind(clock.tick()), "interrupt");
        clock.arm(Instant::now());
        assert_eq!(clock.ticks, 0);
        assert_eq!(kind(clock.tick()), "continue");
    }

    #[test]
    fn a_start_up_counts_against_its_own_limit_and_says_so() {
        let mut clock = CallClock::new(TICK, 3 * TICK);
        clock.arm_for(Phase::Startup, Instant::now());
        let seen: Vec<_> = (0..4).map(|_| kind(clock.tick())).collect();
        assert_eq!(seen, ["continue", "yield", "yield", "interrupt"]);
        let message = clock.timeout_message();
        assert!(message.starts_with("start-up limit exceeded"), "{message}");
        assert!(message.contains("`startup`"), "{message}");
        // The call after it runs under the deadline again.
        clock.arm(Instant::now());
        clock.tick();
        assert_eq!(kind(clock.tick()), "interrupt");
    }

    #[test]
    fn the_wall_clock_cap_interrupts_a_starved_call_on_its_first_tick() {
        let mut clock = CallClock::new(Duration::from_secs(1), TICK);
        let long_ago = Instant::now()
            .checked_sub(wall_cap(clock.deadline) + Duration::from_millis(1))
            .expect("the clock started more than seconds ago");
        clock.arm(long_ago);
        assert_eq!(kind(clock.tick()), "interrupt");
        assert!(clock.timed_out);
    }
}
