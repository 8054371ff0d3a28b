//! wrong-verdicts: a log-filter that breaks the contract by answering one verdict fewer
//! than it was given lines (and none at all for a single line).

use leafgate_plugin::log_filter::{Guest, LogContext, Verdict, Verdicts, lines};

struct Wrong;

impl Guest for Wrong {
    fn filter(_ctx: LogContext, batch: String) -> Verdicts {
        lines(&batch).skip(1).map(|_| Verdict::Keep).collect()
    }
}

leafgate_plugin::export_log_filter!(Wrong);
